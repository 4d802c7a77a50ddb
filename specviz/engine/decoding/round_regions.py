"""A speculative round as at most two captured regions and one read, so that a round costs its forwards.

  region 1, draft    the draft loop: gamma cached draft forwards, each drafted token raced from the round's own
                     uniforms and fed to the next forward on the device (`model_draft.ModelDraft.draft_loop`)
  region 2, verify   the target's forward over the pending token and the drafts, its warp, the whole decision
                     (`sampling.verify_round`: p(x), q(x), accept or reject, the first rejection, the residual's
                     race, the bonus), the emitted tokens written to the decoder's ids on the device, the trace's
                     bars and the pack the host reads (`decoders.SpeculativeDecoder.verify_region`)
Each region reads only what a region or the run's start wrote (the ids on the device, the caches, the draft
region's output buffers) and finds its positions on the device (the static cache's write position), so outside the
regions the host does only the read and, after a rejection, the rewind: one fill of each cache's write position.

On CUDA with graphs (`SPECVIZ_CUDA_GRAPHS` on, not `forwards`; not ZeroGPU, whose decoders are rebuilt each Step)
each region is recorded once as a CUDA graph (the draft loop once per number of pending tokens, 1 or 2 after a
bonus) inside the decoder's construction, so a capture never crosses the `spaces.GPU` boundary. The decoder's
own generator is registered with each graph (`CUDAGraph.register_generator_state`): a replay draws fresh numbers
from the generator's advancing offset, the numbers an eager run of the same code draws, so a seeded run gives the
same tokens either way (`capture` checks one replay against an eager run from the same state, and refuses a graph
that differs). Elsewhere, and for what a graph cannot hold (mentored decoding's host-side plan, prompt lookup's
host-side search, a draft that reads the target's features), the same functions run eagerly.

A region records the host's bookkeeping once (positions seen, forward calls); `Region` keeps what one run changed
and applies it at each replay.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..caches.cache import CachedModel
from ..caches.static_cache import CAPTURE_LOCK


@dataclass
class Region:
    """One recorded region: replay it, and redo the host's bookkeeping one run of it does."""
    play: Callable[[], None]                  # the recording's replay (a CUDA graph's `replay`)
    output: object                            # what the region returns: tensors at the addresses the replay writes
    moved: tuple[tuple[CachedModel, int, int], ...]  # (model, positions it advances, forward calls) per model
    replays: int = 0

    def replay(self):
        self.play()
        self.replays += 1
        for model, positions, calls in self.moved:
            model.seen += positions
            model.calls += calls
            model.static.length += positions
        return self.output


class CudaGraphs:
    """Records regions as CUDA graphs on one device, sharing one memory pool, with a generator registered."""

    def __init__(self, generator: torch.Generator):
        self.generator, self.device = generator, generator.device
        self.pool = torch.cuda.graph_pool_handle()

    def warm_up(self, run: Callable[[], object]) -> object:
        """Run once off the capture stream (library handles, autotuning), as graph capture wants."""
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            out = run()
        torch.cuda.current_stream(self.device).wait_stream(side)
        return out

    def record(self, run: Callable[[], object]) -> tuple[Callable[[], None], object]:
        graph = torch.cuda.CUDAGraph()
        graph.register_generator_state(self.generator)  # replays draw from its advancing offset
        # thread_local: the app's other threads may use the device while this one captures
        with torch.cuda.graph(graph, pool=self.pool, capture_error_mode="thread_local"):
            output = run()
        return graph.replay, output

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)


def recorder(generator: torch.Generator) -> CudaGraphs:
    """What records this generator's device's regions (CUDA graphs; tests on the CPU stand another in)."""
    return CudaGraphs(generator)


def usable(models: list[CachedModel]) -> str:
    """Why these models' forwards cannot be recorded inside a region ('' when they can): every one on a static
    cache with graphs on, none reading or keeping features (their host-side bookkeeping changes shapes)."""
    for model in models:
        if model.static is None or not model.static.graphs:
            return "the static cache with CUDA graphs is off"
        if model.static.graph_error:
            return model.static.graph_error
        if model.keep_features or hasattr(model, "source"):
            return "a draft that reads the target's features runs its loop eagerly"
    return ""


def _outputs(value) -> list[torch.Tensor]:
    """The tensors a region returned (a tensor, a tuple of them, or a `sampling.Packed`)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _outputs(v)]
    return _outputs(getattr(value, "flat", ()))


def _same(replayed: list[torch.Tensor], eager: list[torch.Tensor]) -> bool:
    """Ids equal, probabilities equal up to float32 rounding: the graph computes what the eager code computes."""
    return len(replayed) == len(eager) and all(
        a.shape == b.shape and (torch.equal(a, b) if not a.is_floating_point()
                                else torch.allclose(a, b, rtol=1e-4, atol=1e-6, equal_nan=True))
        for a, b in zip(replayed, eager))


@torch.inference_mode()
def capture(run: Callable[[], object], models: list[CachedModel], generator: torch.Generator, graphs) -> Region:
    """Record `run` (a region: it must read and write only buffers of fixed address and find its positions on the
    device) with `graphs` (`recorder`). The models and the generator are left as they were. Raises RuntimeError
    when recording fails or one replay differs from an eager run from the same state."""
    state = [(model, model.seen, model.calls) for model in models]
    rng = generator.get_state()

    def back() -> None:  # the models' positions and the generator as before the region ran
        for model, seen, calls in state:
            model.seen, model.calls = seen, calls
            model.static.set_length(seen)
        generator.set_state(rng)

    for model in models:
        model.static.recording = True  # forwards run their body: part of this region, never a replay of their own
    try:
        with CAPTURE_LOCK:
            back()
            graphs.warm_up(run)
            back()
            eager = [t.clone() for t in _outputs(graphs.warm_up(run))]  # the check's reference
            back()
            play, output = graphs.record(run)
            moved = tuple((model, model.seen - seen, model.calls - calls) for model, seen, calls in state)
            back()
            play()  # the check: the region from the same state as the eager run
            same = _same(_outputs(output), eager)
            back()
            graphs.synchronize()
    finally:
        for model in models:
            model.static.recording = False
    if not same:
        raise RuntimeError("a replayed region differs from the same region run eagerly")
    return Region(play=play, output=output, moved=moved)


def try_capture(run: Callable[[], object], models: list[CachedModel], generator: torch.Generator,
                graphs) -> tuple[Region | None, str, float]:
    """(the region, '' or why it runs eagerly, seconds spent): a failed capture leaves the region eager."""
    t0 = time.perf_counter()
    try:
        region = capture(run, models, generator, graphs)
        return region, "", time.perf_counter() - t0
    except (RuntimeError, AttributeError) as err:  # AttributeError: a torch without register_generator_state
        return None, f"region capture failed: {str(err).splitlines()[0] if str(err) else type(err).__name__}", \
            time.perf_counter() - t0
