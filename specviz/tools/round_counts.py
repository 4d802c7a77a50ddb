"""What one speculative round and one target-only step cost the host, on the device they run on: `gpucheck`'s round
row.

Counted on any device with `engine.decoding.counting` (the code path itself): host reads, aten operations outside
the round's two regions (the static cache's forward body and, for a target-only step, outside the forward), and the
torch calls specviz's own code makes. Counted by CUDA itself where there is one: kernel launches outside graphs and
graph replays (`torch.profiler`: `cudaLaunchKernel`-family and `cudaGraphLaunch` calls on the host), and the
synchronisations CUDA sees (`torch.cuda.set_sync_debug_mode`). Without CUDA those three say "no CUDA".
"""
from __future__ import annotations

import warnings

import torch

from ..core.config import DecodeConfig
from ..engine.decoding.counting import counting_calls, counting_ops, host_reads
from ..engine.decoding.decoders import TargetOnlyDecoder
from ..engine.decoding.factory import make_decoder
from ..engine.models.loading import load_pair

PROMPT = "KING.\nNow"
NO_CUDA = "no CUDA"
LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")


def _counted(make, steps: int, counter, size) -> float:
    """The mean `size` of what `counter` sees per step, over `steps` steps of a decoder from `make`."""
    decoder, out = make(), []
    for _ in range(steps):
        with counter() as seen:
            decoder.step()
        out.append(size(seen))
    return round(sum(out) / steps, 2)


def _profiled(make, steps: int) -> tuple[float, float]:
    """(kernel launches outside graphs, graph replays) per step, as the CUDA runtime's host calls show them."""
    from torch.profiler import ProfilerActivity, profile

    decoder = make()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            decoder.step()
        torch.cuda.synchronize()
    names = [event.name for event in prof.events()]
    return (round(sum(name in LAUNCHES for name in names) / steps, 2),
            round(sum(name == "cudaGraphLaunch" for name in names) / steps, 2))


def _syncs(make, steps: int) -> float:
    decoder = make()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(steps):
                decoder.step()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return round(sum("synchroniz" in str(w.message) for w in seen) / steps, 2)


def per_step(make, steps: int, cuda: bool) -> dict:
    """Every count of one kind of step, each over `steps` steps of a fresh decoder from `make`."""
    figures = {"host_reads": _counted(make, steps, host_reads, lambda log: len(log.reads)),
               "ops_outside_regions": _counted(make, steps, counting_ops, lambda ops: len(ops.ops)),
               "torch_calls": _counted(make, steps, counting_calls, lambda calls: calls.total)}
    if cuda:
        launches, replays = _profiled(make, steps)
        figures.update(kernel_launches_outside_graphs=launches, graph_replays=replays, syncs=_syncs(make, steps))
    else:
        figures.update(kernel_launches_outside_graphs=NO_CUDA, graph_replays=NO_CUDA, syncs=NO_CUDA)
    return figures


def round_counts(device: str, steps: int = 10, gamma: int = 4) -> dict:
    """The counts of a speculative round (traces on and off) and of a target-only step on the bundled pair, on the
    static cache (the path a GPU runs; on CUDA its round's regions are recorded as graphs, elsewhere they run
    eagerly, the same code)."""
    pair = load_pair("shakespeare", device=device)
    cuda = torch.device(pair.device).type == "cuda"
    tokens = (steps + 1) * (gamma + 1)
    figures, made = {}, []

    def speculative(record: bool):
        def make():
            config = DecodeConfig(gamma=gamma, max_new_tokens=tokens, seed=0, record=record)
            decoder = make_decoder(pair, PROMPT, config, static_cache=True)
            decoder.step()  # a run's first read also learns the pack's layout
            made.append(decoder)
            return decoder
        return make

    for record in (True, False):
        figures[f"round_traces_{'on' if record else 'off'}"] = per_step(speculative(record), steps, cuda)
    figures["target_only_step"] = per_step(lambda: TargetOnlyDecoder(pair, PROMPT, DecodeConfig(max_new_tokens=tokens),
                                                                     static_cache=True),
                                           steps, cuda)
    figures["cache"], figures["regions"] = made[-1].cache_kind, made[-1].regions_off or "recorded"
    return figures
