"""A round that lives on the device: what one speculative round and one target-only step cost the host.

Counted on the CPU on the code path a GPU runs (the static cache, whose forward body is what a CUDA graph
replays), with the interceptors of tests/engine/host_reads.py.

Ceilings, and why:
  - host reads: 1 per speculative round and 1 per target-only step, traces on or off. The round's tokens,
    verdicts, u, p(x), q(x) and the trace's top-k bars are packed into one tensor read once at the end; the
    host needs that read to extend its token list, check EOS and stop. Nothing else crosses: token ids stay
    on the device and cached forwards take them from there. Prompt lookup: 2, the round's read and its
    proposal's ids copied to the device once (the proposal is a search over the ids the host holds). Mentored
    decoding (kl_budget > 0): 5 per drafted token (20 at gamma 4, as measured), its plan's validation and
    bisection running on the host (core/mentored.py), then the round's read.
  - operations launched outside the graph's forward: 25 per drafted token (the forward's input copy, mask
    length and output copies; warping; the inverse-CDF draw) and 60 per round for the verify forward's inputs,
    the vectorised verify and correction, the caches' rewind and the packing: 160 at gamma 4 (138 measured at
    the ceiling's writing). With traces on, 64 more for what the card shows, computed on the device so that it
    crosses in the round's one read: the nine per-position figures (p(x), q(x), the exact accept chance, TV,
    KL, overlap, the KL spent, both entropies: about 40 operations with their 0 ln 0 = 0 guards), both models'
    top-k bars (top-k, gather) and the correction's four rows (the residual at the stopping position among
    them): 224 (200 measured). A target-only step: 16, the forward's embedding and mask length, the warp, the
    step's uniform, the inverse-CDF draw with its rounding edge on the device (cumsum, scale, searchsorted and
    the last token of positive mass: 10) and the id written to the device's token buffer. None of them may
    read back to the host (`SYNCING_OPS`).
These hold once the round is written on the device; the tests below that plant a read show that the counters
see one.
"""
from __future__ import annotations

import pytest

from specviz.core.config import DecodeConfig
from specviz.engine.decoding.decoders import TargetOnlyDecoder
from specviz.engine.decoding.factory import make_decoder
from tests.engine.host_reads import SYNCING_OPS, counting_ops, host_reads

PROMPT = "KING.\nNow"
GAMMA = 4
ROUNDS = 4
READS_PER_ROUND = 1
READS_PER_TARGET_STEP = 1
READS_PER_LOOKUP_ROUND = 2
READS_PER_MENTORED_ROUND = 5 * GAMMA
OPS_PER_ROUND = 25 * GAMMA + 60
OPS_FOR_THE_TRACE = 64
OPS_PER_TARGET_STEP = 16


def speculative(pair, record=True):
    config = DecodeConfig(gamma=GAMMA, max_new_tokens=200, record=record, seed=3)
    return make_decoder(pair, PROMPT, config, static_cache=True)


def target_only(pair):
    return TargetOnlyDecoder(pair, PROMPT, DecodeConfig(max_new_tokens=200, seed=3), static_cache=True)


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


def assert_reads_within(per_step: list[list[str]], ceiling: int) -> None:
    worst = max(per_step, key=len)
    assert len(worst) <= ceiling, f"{len(worst)} host reads in one step (ceiling {ceiling}): {worst}"


def assert_ops_within(per_step: list[list[str]], ceiling: int) -> None:
    worst = max(per_step, key=len)
    syncing = [op for op in worst if op.startswith(SYNCING_OPS)]
    assert not syncing, f"operations that read back to the host in one step: {syncing}"
    assert len(worst) <= ceiling, f"{len(worst)} operations outside the graph in one step (ceiling {ceiling})"


@pytest.mark.parametrize("record", [True, False], ids=["traces on", "traces off"])
def test_a_speculative_round_reads_the_device_once(pair, record):
    assert_reads_within(reads_per_step(speculative(pair, record)), READS_PER_ROUND)


@pytest.mark.parametrize("record", [True, False], ids=["traces on", "traces off"])
def test_a_lookup_round_reads_the_device_once_beside_its_proposals_copy(pair, record):
    config = DecodeConfig(drafter="lookup", gamma=GAMMA, max_new_tokens=200, record=record, seed=3)
    decoder = make_decoder(pair, "KING.\nKING.\nNow", config, static_cache=True)
    assert_reads_within(reads_per_step(decoder), READS_PER_LOOKUP_ROUND)


def test_a_mentored_round_reads_only_for_its_plan_and_once_at_its_end(pair):
    config = DecodeConfig(gamma=GAMMA, kl_budget=0.2, max_new_tokens=200, seed=3)
    per_step = reads_per_step(make_decoder(pair, PROMPT, config, static_cache=True))
    assert_reads_within(per_step, READS_PER_MENTORED_ROUND)
    assert all(sum("decoders.py" in r or "sampling.py" in r for r in reads) == 1 for reads in per_step)


def test_a_target_only_step_reads_the_device_once(pair):
    assert_reads_within(reads_per_step(target_only(pair)), READS_PER_TARGET_STEP)


@pytest.mark.parametrize("record", [True, False], ids=["traces on", "traces off"])
def test_a_speculative_round_launches_few_operations_outside_the_graph(pair, record):
    assert_ops_within(ops_per_step(speculative(pair, record)), OPS_PER_ROUND + (OPS_FOR_THE_TRACE if record else 0))


def test_a_target_only_step_launches_few_operations_outside_the_graph(pair):
    assert_ops_within(ops_per_step(target_only(pair)), OPS_PER_TARGET_STEP)


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


def test_the_operation_counter_fails_a_target_only_step_with_a_planted_read(pair, planted_read):
    with pytest.raises(AssertionError, match="read back to the host"):
        assert_ops_within(ops_per_step(target_only(pair), steps=2), ceiling=10_000)
