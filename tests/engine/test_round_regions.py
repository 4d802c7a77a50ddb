"""A round as two regions (`round_regions`: the draft loop, then verify and decide), recorded and replayed, checked
on the CPU.

On CUDA the regions are recorded as CUDA graphs; here `tests/engine/op_replay.py` stands in for them: it records
the aten operations a region dispatches and replays them on the same tensors with no Python in between, drawing
afresh from the generator, as a graph with the generator registered does. So the region code itself is what these
tests check: a decoder whose rounds replay recorded regions emits, round for round, what a decoder running the same
code eagerly emits (the same seed, the same trace), and a region that read its position from the host instead of
the device would replay wrong (planted below). `tests/engine/region_guard.py` checks the other half: outside the
regions nothing writes a buffer a region reads, except the rewind's fill of each write position (a planted write
of the ids outside is caught).
"""
from __future__ import annotations

import pytest
import torch

from specviz.core.config import DecodeConfig
from specviz.engine.caches.cache import CachedModel
from specviz.engine.decoding import round_regions
from specviz.engine.decoding.decoders import SpeculativeDecoder
from specviz.engine.decoding.factory import make_decoder
from tests.engine.op_replay import TapeRecorder
from tests.engine.region_guard import WrittenOutside, guarding

PROMPT = "KING.\nNow"
ROUNDS = 12


def config(**change) -> DecodeConfig:
    return DecodeConfig(**{"gamma": 4, "max_new_tokens": 80, "seed": 5, **change})


@pytest.fixture
def taped(monkeypatch):
    """Regions recorded on the CPU's static cache by the stand-in for CUDA graphs."""
    monkeypatch.setattr(round_regions, "recorder", TapeRecorder)
    monkeypatch.setattr(round_regions, "usable", lambda models: "")


def shown(trace) -> tuple:
    """A trace without its timings."""
    return trace.n_accepted, trace.positions, trace.correction, trace.emitted, trace.rejected


def test_replayed_regions_emit_what_the_eager_round_emits(pair, request):
    """12 rounds at gamma 4 (rejections and bonus tokens both, so both draft loops replay): tokens, traces, counters
    and the caches' positions equal round for round."""
    eager = make_decoder(pair, PROMPT, config(), static_cache=True)
    request.getfixturevalue("taped")
    replayed = make_decoder(pair, PROMPT, config(), static_cache=True)
    assert replayed.regions_off == "" and replayed.region is not None
    assert set(replayed.drafter.regions) == {(1, 4), (2, 4)}
    for _ in range(ROUNDS):
        assert shown(replayed.step()) == shown(eager.step())
        assert (replayed.target.seen, replayed.drafter.model.seen) == (eager.target.seen, eager.drafter.model.seen)
    assert replayed.generated_ids == eager.generated_ids
    assert vars(replayed.counters) | {"compute_s": 0} == vars(eager.counters) | {"compute_s": 0}
    assert replayed.region.replays == ROUNDS
    loops = {key: region.replays for key, region in replayed.drafter.regions.items()}
    assert sum(loops.values()) == ROUNDS and min(loops.values()) > 0, loops


@pytest.mark.parametrize("record", [True, False], ids=["traces on", "traces off"])
def test_a_region_reading_its_position_from_the_host_replays_wrong(pair, request, monkeypatch, record):
    """Planted: the pending ids sliced at the host's `seen` (a Python int frozen into the recording) instead of
    gathered at the cache's write position on the device; the replayed run leaves the eager one."""
    eager = make_decoder(pair, PROMPT, config(record=record), static_cache=True)
    request.getfixturevalue("taped")
    monkeypatch.setattr(CachedModel, "unseen", lambda self, ids, n: ids[self.seen: self.seen + n])
    replayed = make_decoder(pair, PROMPT, config(record=record), static_cache=True)
    for _ in range(ROUNDS):
        replayed.step()
        eager.step()
    assert replayed.generated_ids != eager.generated_ids


@pytest.mark.parametrize("static", [True, False], ids=["static cache", "dynamic cache"])
def test_outside_the_regions_only_the_rewind_writes_what_a_region_reads(pair, static):
    decoder = make_decoder(pair, PROMPT, config(), static_cache=static)
    positions = [m.static._lengths for m in (decoder.target, decoder.drafter.model) if m.static is not None]
    with guarding(positions) as guard:
        for _ in range(ROUNDS):
            decoder.step()
    assert guard.read  # it saw what the regions read
    assert guard.checked_writes > 0 or not static  # and, on the static cache, the rewinds' fills outside


def test_a_write_of_the_ids_outside_the_regions_is_caught(pair, monkeypatch):
    """Planted: the round's tokens also written to the ids on the device after the read, as an eager copy."""
    settle = SpeculativeDecoder._settle

    def settle_and_write(self, result):
        self.device_ids.write(len(self.tokens), torch.tensor(result.tokens, device=self.pair.device))
        return settle(self, result)

    monkeypatch.setattr(SpeculativeDecoder, "_settle", settle_and_write)
    decoder = make_decoder(pair, PROMPT, config(), static_cache=True)
    positions = [decoder.target.static._lengths, decoder.drafter.model.static._lengths]
    with pytest.raises(WrittenOutside, match="copy_"), guarding(positions):
        for _ in range(ROUNDS):
            decoder.step()


def test_gamma_auto_runs_its_round_eagerly_and_still_stops_early(pair, request):
    """gamma auto: where its draft loop stops is read on the host, so nothing is recorded even where regions could
    be (on CUDA each forward still replays its own graph); on the static cache its rounds stop before the cap and
    draft and emit what the dynamic cache's do (8 rounds, the rule of tests/engine/test_gamma_auto.py)."""
    from tests.engine.test_gamma_auto import RULE

    config = DecodeConfig(gamma=4, gamma_auto=True, draft_length=RULE, max_new_tokens=60, seed=3)
    dynamic = make_decoder(pair, "KING.\nNow is the time", config, static_cache=False)
    request.getfixturevalue("taped")
    decoder = make_decoder(pair, "KING.\nNow is the time", config, static_cache=True)
    assert decoder.regions_off == "gamma auto stops its draft loop on the host" and decoder.region is None
    assert not decoder.drafter.regions
    stops = [decoder.step().draft_stop for _ in range(8)]
    assert [dynamic.step().draft_stop.drafted for _ in range(8)] == [stop.drafted for stop in stops]
    assert decoder.generated_ids == dynamic.generated_ids
    assert min(stop.drafted for stop in stops) < 4 == stops[0].gamma_max
