"""Memory a race freed goes back to the system, not to the allocator's spare pools.

glibc's malloc gives each thread that allocates an arena of its own (up to 8 per core) and keeps what is
freed there for the next allocation of that thread; gradio runs each event in a worker thread, so the
buffers of a long race's forwards (activations, the KV caches of two sides) stay resident in that thread's
arena after the race is gone, and the next race, in another worker, grows another one. `malloc_trim(0)`
returns the free pages of every arena to the kernel. Where the C library is not glibc it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading

_LOCK = threading.Lock()


def _libc():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return libc if libc is not None and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


_LIBC = _libc()


def give_back_memory() -> bool:
    """Collect Python's garbage and hand freed heap pages back to the system; False where that is unavailable."""
    gc.collect()
    if _LIBC is None:
        return False
    with _LOCK:  # one trim at a time: each walks every arena
        _LIBC.malloc_trim(0)
    return True
