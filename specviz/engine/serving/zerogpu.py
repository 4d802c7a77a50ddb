"""Where model calls run: ZeroGPU's `spaces.GPU` boundary when the app runs on ZeroGPU, in-process elsewhere.

ZeroGPU's contract (the `spaces` package, 0.51.3):
  1. `spaces` is imported before anything touches CUDA (app.py's first import): on ZeroGPU it patches
     torch so that the main process, which has no GPU, emulates one, on the importing thread only;
  2. the pairs load onto 'cuda' in the main process at startup, on that thread (`load_offered_pairs`): the
     emulation keeps their weights on the host, and at launch `spaces` packs them for the GPU workers;
  3. the functions that use the GPU are decorated with `spaces.GPU` at import (`on_gpu`): at launch `spaces`
     reports them, and with none it stops there. A call runs in a forked worker that holds the GPU and
     received the packed weights: its arguments arrive pickled and only its return value comes back, so a
     run crosses it as plain data (`run.RunState`) and its decoders are rebuilt inside, from the pair the
     worker inherited (no load there).
Elsewhere (CPU, a dedicated GPU) `on_gpu` returns the function unchanged and decoders stay alive between steps.
"""
from __future__ import annotations

from .. import settings

STEP_GPU_SECONDS = 15  # what one Step asks ZeroGPU for: a round, the baseline's catch-up, rebuilt caches


def stateless() -> bool:
    """Step through plain data across a process boundary? On ZeroGPU (SPACES_ZERO_GPU), or when
    SPECVIZ_STATELESS_STEPS=1 asks for it (to test that path anywhere)."""
    return settings.current().stateless_steps


def on_gpu(duration: int):
    """Decorator for a function that uses the GPU: `spaces.GPU(duration=duration)` on ZeroGPU (applied at
    import, as `spaces` requires), the function itself elsewhere."""
    def decorate(fn):
        if not settings.current().zero_gpu:
            return fn
        import spaces  # app.py imported it first; here it only hands back the module

        return spaces.GPU(duration=duration)(fn)
    return decorate


def load_offered_pairs() -> list[str]:
    """On ZeroGPU: every offered pair loaded onto 'cuda' now, on this thread (call it from the main thread
    before launch); returns their names. Elsewhere nothing (the default pair loads as any other)."""
    if not settings.current().zero_gpu:
        return []
    from ..models.loading import load_pair
    from ..models.policy import offered_presets

    names = offered_presets()
    for name in names:
        load_pair(name, device="cuda")  # no timeout: in this thread, where the CUDA emulation holds
    return names
