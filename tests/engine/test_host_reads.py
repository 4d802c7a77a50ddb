"""A round that lives on the device: what one speculative round and one target-only step cost the host.

Counted on the CPU on the code path a GPU runs, with `specviz.engine.decoding.counting` (tests/engine/host_reads.py): the
round as two regions (`round_regions`: the draft loop; the verify forward with the whole decision and the pack),
which CUDA records as graphs, and the static cache, whose forward body is what a graph replays. Measured on the
bundled pair at gamma 4 (2026-11-27; the worst of 8 rounds after a run's first, whose read also learns the pack's
layout):

  - host reads: 1 per speculative round and 1 per target-only step, traces on or off, on the static and the dynamic
    cache (the round's tokens, verdicts, u, p(x), q(x) and the trace's bars packed into one tensor read once; token
    ids stay on the device; the dynamic cache's forwards take embeddings, so transformers checks no input ids for
    padding, a read a forward until 2026-11-27). Prompt lookup: 2, the round's read and its proposal's ids copied to
    the device once (a search over the ids the host holds). Mentored decoding (kl_budget > 0): 20 at gamma 4, its
    plan's validation and bisection on the host (core/mentored.py), then the round's read.
  - operations outside the two regions (aten operations, views excepted; each a kernel launch on a GPU): 0 to 2 on
    the static cache (2 after a rejection: the rewind, one fill of each cache's write position), 0 on the dynamic
    cache (its crop makes views); ceiling 24. Prompt lookup 0; mentored decoding 4 to 6 (static) and 4 (dynamic),
    around its plan's host-side bisection (its verify region runs eagerly: a graph cannot hold the bisection). A
    target-only step: 14 to 15 outside the forward's body (the ids gathered at the cache's position, the embedding,
    the warp, the V uniforms, the exponential race, the id written back), ceiling 16. None may read back to the
    host (`SYNCING_OPS`).
  - torch calls in all that specviz's own code makes (a `TorchFunctionMode`: functions, methods, `.shape` reads),
    regions included: 132 to 138 with traces on and 107 to 113 off on the static cache (the most after a
    rejection's rewind), 120 and 95 on the dynamic cache; ceiling 144. Prompt lookup 94 and 69 (static), 91 and 66
    (dynamic); mentored decoding 332 to 338 and 299 to 305 (static), 320 and 287 (dynamic), its plan's host-side
    bisection. A target-only step: 23 to 24 (static), 20 (dynamic); ceiling 40.
The tests below that plant a read, an operation or calls show that the counters see each.
"""
from __future__ import annotations

import pytest

from specviz.core.config import DecodeConfig
from specviz.engine.decoding.decoders import TargetOnlyDecoder
from specviz.engine.decoding.factory import make_decoder
from tests.engine.host_reads import SYNCING_OPS, counting_calls, counting_ops, host_reads

PROMPT = "KING.\nNow"
GAMMA = 4
ROUNDS = 8
READS_PER_ROUND = 1
READS_PER_TARGET_STEP = 1
READS_PER_LOOKUP_ROUND = 2
READS_PER_MENTORED_ROUND = 5 * GAMMA
OPS_PER_ROUND = 24            # outside the two regions
OPS_PER_TARGET_STEP = 16      # outside the forward's body
CALLS_PER_ROUND = 144         # in all, regions included
CALLS_PER_TARGET_STEP = 40
LOOKUP_CALLS = {"static": (94, 69), "dynamic": (91, 66)}       # (traces on, traces off): the most measured
MENTORED_CALLS = {"static": (338, 305), "dynamic": (320, 287)}
CACHES = pytest.mark.parametrize("static", [True, False], ids=["static cache", "dynamic cache"])
TRACES = pytest.mark.parametrize("record", [True, False], ids=["traces on", "traces off"])


def speculative(pair, record=True, static=True, **knobs):
    config = DecodeConfig(gamma=GAMMA, max_new_tokens=200, record=record, seed=3, **knobs)
    prompt = "KING.\nKING.\nNow" if knobs.get("drafter") == "lookup" else PROMPT
    decoder = make_decoder(pair, prompt, config, static_cache=static)
    decoder.step()  # a run's first read also learns the pack's layout
    return decoder


def target_only(pair, static=True):
    return TargetOnlyDecoder(pair, PROMPT, DecodeConfig(max_new_tokens=200, seed=3), static_cache=static)


def reads_per_step(decoder, steps=ROUNDS) -> list[list[str]]:
    """The host reads of each of `steps` steps (the decoder built, prefilled and captured beforehand)."""
    out = []
    with host_reads() as log:
        for _ in range(steps):
            decoder.step()
            out.append(log.take())
    return out


def ops_per_step(decoder, steps=ROUNDS) -> list[list[str]]:
    out = []
    with counting_ops() as ops:
        for _ in range(steps):
            decoder.step()
            out.append(ops.take())
    return out


def calls_per_step(decoder, steps=ROUNDS) -> list[int]:
    out = []
    with counting_calls() as calls:
        for _ in range(steps):
            decoder.step()
            out.append(calls.take()[0])
    return out


def assert_reads_within(per_step: list[list[str]], ceiling: int) -> None:
    worst = max(per_step, key=len)
    assert len(worst) <= ceiling, f"{len(worst)} host reads in one step (ceiling {ceiling}): {worst}"


def assert_ops_within(per_step: list[list[str]], ceiling: int) -> None:
    worst = max(per_step, key=len)
    syncing = [op for op in worst if op.startswith(SYNCING_OPS)]
    assert not syncing, f"operations that read back to the host in one step: {syncing}"
    assert len(worst) <= ceiling, f"{len(worst)} operations outside the graph in one step (ceiling {ceiling})"


@CACHES
@TRACES
def test_a_speculative_round_reads_the_device_once(pair, record, static):
    assert_reads_within(reads_per_step(speculative(pair, record, static)), READS_PER_ROUND)


@TRACES
def test_a_lookup_round_reads_the_device_once_beside_its_proposals_copy(pair, record):
    assert_reads_within(reads_per_step(speculative(pair, record, drafter="lookup")), READS_PER_LOOKUP_ROUND)


def test_a_mentored_round_reads_only_for_its_plan_and_once_at_its_end(pair):
    per_step = reads_per_step(speculative(pair, kl_budget=0.2))
    assert_reads_within(per_step, READS_PER_MENTORED_ROUND)
    assert all(sum("decoders.py" in r or "sampling.py" in r for r in reads) == 1 for reads in per_step)


@CACHES
def test_a_target_only_step_reads_the_device_once(pair, static):
    assert_reads_within(reads_per_step(target_only(pair, static)), READS_PER_TARGET_STEP)


@CACHES
@TRACES
def test_a_speculative_round_launches_few_operations_outside_its_two_regions(pair, record, static):
    assert_ops_within(ops_per_step(speculative(pair, record, static)), OPS_PER_ROUND)


def test_a_target_only_step_launches_few_operations_outside_the_forward(pair):
    assert_ops_within(ops_per_step(target_only(pair)), OPS_PER_TARGET_STEP)


@CACHES
@TRACES
def test_a_speculative_round_makes_few_torch_calls_in_all(pair, record, static):
    calls = calls_per_step(speculative(pair, record, static))
    assert max(calls) <= CALLS_PER_ROUND, calls


@CACHES
def test_a_target_only_step_makes_few_torch_calls(pair, static):
    calls = calls_per_step(target_only(pair, static))
    assert max(calls) <= CALLS_PER_TARGET_STEP, calls


@CACHES
@TRACES
def test_lookup_and_mentored_rounds_keep_their_own_counts(pair, record, static):
    """Neither can be one recorded region (a host-side search, a host-side bisection): their counts, as measured."""
    cache = "static" if static else "dynamic"
    lookup = calls_per_step(speculative(pair, record, static, drafter="lookup"))
    mentored = calls_per_step(speculative(pair, record, static, kl_budget=0.2), steps=3)
    assert max(lookup) <= LOOKUP_CALLS[cache][not record], lookup
    assert max(mentored) <= MENTORED_CALLS[cache][not record], mentored


# ----------------------------------------------------------------------------- the counters see a planted read


@pytest.fixture
def planted_read(monkeypatch):
    """Every warp of the run reads its largest probability back to the host, as a careless check would."""
    warp = DecodeConfig.warp

    def warp_and_read(self, logits):
        probs = warp(self, logits)
        if float(probs.max()) > 1.5:  # never true: the read is the point
            raise AssertionError("a probability above 1")
        return probs

    monkeypatch.setattr(DecodeConfig, "warp", warp_and_read)


def test_the_read_counter_fails_a_round_with_a_planted_read(pair, request):
    clean = max(len(reads) for reads in reads_per_step(speculative(pair), steps=2))
    request.getfixturevalue("planted_read")
    planted = reads_per_step(speculative(pair), steps=2)
    with pytest.raises(AssertionError, match="host reads in one step"):
        assert_reads_within(planted, clean)
    assert any("float(tensor) at test_host_reads.py" in read for read in planted[0])


def test_the_read_counter_fails_a_target_only_step_with_a_planted_read(pair, request):
    clean = max(len(reads) for reads in reads_per_step(target_only(pair), steps=2))
    request.getfixturevalue("planted_read")
    with pytest.raises(AssertionError, match="host reads in one step"):
        assert_reads_within(reads_per_step(target_only(pair), steps=2), clean)


def test_the_operation_counter_fails_a_round_with_a_planted_read(pair, planted_read):
    with pytest.raises(AssertionError, match="read back to the host.*_local_scalar_dense|aten.item"):
        assert_ops_within(ops_per_step(speculative(pair), steps=2), ceiling=10_000)


def test_the_operation_counter_sees_one_planted_operation_outside_the_regions(pair, monkeypatch):
    """Planted: the round's settling copies the ids on the device (one aten operation outside the regions)."""
    from specviz.engine.decoding.decoders import SpeculativeDecoder

    clean = [len(ops) for ops in ops_per_step(speculative(pair), steps=3)]
    settle = SpeculativeDecoder._settle
    monkeypatch.setattr(SpeculativeDecoder, "_settle", lambda self, result: (self.device_ids.buffer.clone(),
                                                                             settle(self, result))[1])
    planted = [len(ops) for ops in ops_per_step(speculative(pair), steps=3)]
    assert [b - a for a, b in zip(clean, planted)] == [1, 1, 1]


def test_the_call_counter_sees_two_planted_calls_a_warp(pair, monkeypatch):
    """Planted: every warp computed twice (a careless recomputation): the warp's 2 calls (its shape check and the
    softmax) again for each of a round's 5 warps."""
    clean = calls_per_step(speculative(pair), steps=3)
    warp = DecodeConfig.warp
    monkeypatch.setattr(DecodeConfig, "warp", lambda self, logits: (warp(self, logits), warp(self, logits))[1])
    planted = calls_per_step(speculative(pair), steps=3)
    assert [b - a for a, b in zip(clean, planted)] == [2 * (GAMMA + 1)] * 3


def test_the_operation_counter_fails_a_target_only_step_with_a_planted_read(pair, planted_read):
    with pytest.raises(AssertionError, match="read back to the host"):
        assert_ops_within(ops_per_step(target_only(pair), steps=2), ceiling=10_000)
