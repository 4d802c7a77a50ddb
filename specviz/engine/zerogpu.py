"""Where model calls run: ZeroGPU's `spaces.GPU` boundary when the app runs on ZeroGPU, in-process elsewhere.

On ZeroGPU a `spaces.GPU` function runs in a forked worker that holds the GPU: its arguments
arrive pickled and only its return value comes back, so a run crosses it as plain data
(`run.RunState`) and its decoders are rebuilt inside. Elsewhere (CPU, a dedicated GPU) the
decoders stay alive between steps and nothing is rebuilt.
"""
from __future__ import annotations

from . import settings

STEP_GPU_SECONDS = 15  # what one Step asks ZeroGPU for: a round, the baseline's catch-up, rebuilt caches


def stateless() -> bool:
    """Step through plain data across a process boundary? On ZeroGPU (SPACES_ZERO_GPU), or when
    SPECVIZ_STATELESS_STEPS=1 asks for it (to test that path anywhere)."""
    return settings.current().stateless_steps


def on_gpu(fn):
    """fn wrapped by spaces.GPU where the `spaces` package is importable (a no-op off ZeroGPU), else fn."""
    try:
        import spaces
    except ImportError:
        return fn
    return spaces.GPU(duration=STEP_GPU_SECONDS)(fn)
