"""The lookup drafter on the bundled pair: greedy parity, the first token's law, what a round's trace tells."""
from __future__ import annotations

import pytest

from specviz.core.config import DecodeConfig
from specviz.core.trace import LookupTrace, StepTrace
from specviz.engine.decoding.factory import make_decoder
from specviz.engine.decoding.lookup_draft import PromptLookup
from tests.engine.first_token import bulk_first_token_pvalue, first_token_pvalue
from tests.engine.greedy import greedy_parity

PROMPTS = ["ROMEO.\nBut soft, what light", "KING.\nNow is the time", "HAMLET.\nTo be, or not to be, that is"]
REPEATED = "KING.\nKING"  # the last token occurred before: the first round copies ".\nKING" (cut short by the end)


def lookup(**knobs) -> DecodeConfig:
    return DecodeConfig(drafter="lookup", **knobs)


def where(trace: StepTrace) -> LookupTrace:
    """Where a lookup round copied from, as its trace's draft source tells it."""
    assert trace.source.kind == "lookup"
    return LookupTrace(**trace.source.details)


@pytest.mark.parametrize("gamma", [2, 5])
def test_greedy_lookup_equals_target_only_and_hf_generate(pair, gamma):
    for prompt in PROMPTS:
        spec = greedy_parity(pair, prompt, lookup(gamma=gamma, temperature=0, max_new_tokens=32))
        assert isinstance(spec.drafter, PromptLookup) and spec.counters.accepted > 0


@pytest.mark.slow  # end-to-end plumbing (6.2 s); the law in bulk is tests/core/test_lookup.py's, in the fast tier
def test_first_sampled_token_follows_the_target_when_copied_drafts_are_verified(pair):
    """The plumbing: RUNS = 400 seeded one-round runs at T = 1 whose round verifies a copied draft; chi-square p > 1e-3
    against the target's next-token distribution from a plain forward pass (power: tests/engine/first_token.py)."""
    config = lookup(gamma=4, max_new_tokens=1, record=False)
    assert len(make_decoder(pair, REPEATED, lookup(gamma=4)).step().positions) == 3
    assert first_token_pvalue(pair, REPEATED, config) > 1e-3


def test_a_copied_round_on_the_pairs_own_rows_emits_the_target(pair):
    """The law: 10,000 rounds of the decision code with the lookup's one-hot q (accepted with chance p(x), else drawn
    from p without x) on the target's row at the copied context; chi-square p > 1e-3 against p."""
    assert bulk_first_token_pvalue(pair, REPEATED, lookup(gamma=4, max_new_tokens=1, record=False)) > 1e-3


def test_a_copied_round_shows_q_at_one_accept_chance_p_and_the_residual_p_without_x(pair):
    """Every copied position shows q(x) = 1 and accept chance p(x); at a rejection whose token x the correction's
    bars show (x among p's top-k), the residual there is 0 at x and p / (1 - p(x)) elsewhere."""
    dec = make_decoder(pair, REPEATED, lookup(gamma=4, seed=1, max_new_tokens=80))
    seen_rejection = False
    while not dec.finished and not seen_rejection:
        trace = dec.step()
        for pos in trace.positions:
            assert pos.draft_prob == 1.0 and pos.accept_prob == pytest.approx(pos.target_prob, rel=1e-5)
        shown = [c.id for c in trace.correction.candidates]
        if trace.positions and trace.n_accepted < len(trace.positions) \
                and trace.positions[trace.n_accepted].draft_token in shown:
            seen_rejection = True
            x = trace.positions[trace.n_accepted].draft_token
            p = {c.id: c.target_prob for c in trace.correction.candidates}
            residual = dict(zip(shown, trace.correction.residual_probs))
            assert residual[x] == 0.0
            other = max((i for i in p if i != x), key=p.get)
            assert residual[other] == pytest.approx(p[other] / (1 - p[x]), rel=1e-4)
        assert trace.source.kind == "lookup" and trace.counters.draft_calls == 0
    assert seen_rejection


def test_the_trace_says_where_the_drafts_were_copied_from(pair):
    trace = make_decoder(pair, REPEATED, lookup(gamma=4)).step()
    assert where(trace).ngram == 1 and where(trace).start == 1 and where(trace).in_prompt
    assert where(trace).matched == ["KING"] and where(trace).copied == [".", "\n", "KING"]
    assert [p.draft_text for p in trace.positions] == where(trace).copied
    assert StepTrace.from_dict(trace.to_dict()) == trace


def test_no_earlier_match_proposes_nothing_and_the_round_is_one_target_pass(pair):
    dec = make_decoder(pair, "KING", lookup(gamma=4))
    trace = dec.step()
    assert trace.positions == [] and where(trace).ngram == 0
    assert [e.kind for e in trace.emitted] == ["bonus"] and trace.correction.kind == "bonus"
    assert dec.counters.target_calls == 1 and dec.records[0].gamma == 0
    assert dec.cache_kinds.keys() == {"target"} and dec.drafter.held_bytes() == 0  # no draft model runs


def test_looking_in_the_prompt_only_copies_from_the_prompt(pair):
    dec = make_decoder(pair, PROMPTS[2], lookup(gamma=4, lookup_source="prompt", max_new_tokens=48, seed=2))
    traces = dec.run()
    assert all(where(t).in_prompt for t in traces if where(t).ngram)
    assert any(where(t).ngram for t in traces)


def test_traces_written_before_the_draft_source_was_one_record_read_back_with_their_source(pair):
    """Exported runs and report traces hold `drafter`, `lookup` and `draft_reads_target` instead of `source`."""
    copied = make_decoder(pair, REPEATED, lookup(gamma=4)).step()
    old = {k: v for k, v in copied.to_dict().items() if k != "source"}
    old.update(drafter="lookup", lookup=copied.source.details, draft_reads_target=False)
    assert StepTrace.from_dict(old) == copied
    modelled = make_decoder(pair, PROMPTS[0], DecodeConfig(gamma=2)).step()
    old = {k: v for k, v in modelled.to_dict().items() if k != "source"}
    assert StepTrace.from_dict(old).source == modelled.source
    assert StepTrace.from_dict({**old, "draft_reads_target": True}).source.details == {"reads_target": True}


@pytest.mark.parametrize("lang, none_said, none_told", [("en", "nothing is copied", "nothing to copy"),
                                                       ("zh", "无可复制", "无可复制"),
                                                       ("ja", "コピーするものがない", "コピーするものがなく")])
def test_the_card_and_narration_tell_a_copied_round_and_an_empty_one(pair, lang, none_said, none_told):
    from specviz.present import render

    copied = make_decoder(pair, REPEATED, lookup(gamma=4)).step()
    card = render.step_card(copied, lang=lang)
    assert '<mark class="lookup-copied">.⏎KING</mark>' in card and '<mark class="lookup-ngram">KING</mark>' in card
    assert "min(1, p/1) = p(x) = " in card  # the accept chance is p(x): q = 1
    assert "“KING”" in render.narration(copied, lang=lang)
    empty = make_decoder(pair, "KING", lookup(gamma=4)).step()
    assert none_said in render.step_card(empty, lang=lang) and none_told in render.narration(empty, lang=lang)


def test_a_round_with_nothing_copied_shows_no_verify_table_and_no_accepted_drafts(pair):
    from specviz.present import render

    card = render.step_card(make_decoder(pair, "KING", lookup(gamma=4)).step())
    assert 'class="verify"' not in card and "drafts accepted" not in card
    assert "nothing to verify" in card


def test_the_counters_count_no_draft_forward_for_copied_drafts(pair):
    from specviz.core.metrics import metric_set
    from specviz.present import render

    dec = make_decoder(pair, REPEATED, lookup(gamma=4))
    dec.step()
    html = render.counters_html(metric_set(dec.records, [0.01] * 3), "cpu", False, 3, 1,
                                draft_passes=dec.counters.draft_calls)
    assert "<td>draft passes</td><td><b>0</b></td>" in html


def test_a_lookup_run_steps_in_the_run_layer_and_counts_only_target_caches(pair):
    from specviz.engine.models.presets import pair_ref
    from specviz.engine.serving.run import ComparedRun, RunSettings

    run = ComparedRun(RunSettings(pair=pair_ref("shakespeare"), prompt=REPEATED, config=lookup(gamma=4), device="cpu"),
                      stateless=False)
    run.step()
    assert run.kv_bytes() > 0 and run.metrics()["steps"] == 1


def test_with_gamma_auto_the_lookup_learns_how_far_its_copies_are_kept_from_the_text(pair):
    """Planted: the lookup's table keeps a copied token with chance 0.9 (weighed as TABLE_WEIGHT = 2 copies); a pass
    over 1..5 positions costs 1, 1.05, 1.1, 1.3, 1.5, so at 0.9 a copy runs to gamma 4. The text then keeps only the
    first of the four tokens copied: "first" 1 kept of 1, "next" 0 of 1, so a first token's chance is (2 · 0.9 + 1)
    / 3 = 0.93 and a following one's (2 · 0.9 + 0) / 3 = 0.6, and the next copy stops after its second token
    (survival 0.93 · 0.6 = 0.56, under the 0.76 the rule needs to go on): read from the text alone."""
    from specviz.core.draft_length import DraftLengthRule, KeepTable
    from specviz.engine.decoding import lookup_draft
    from tests.engine.test_hybrid_draft import context_of

    assert lookup_draft.TABLE_WEIGHT == 2
    rule = DraftLengthRule(4, 0.0, (1.0, 1.05, 1.1, 1.3, 1.5), (("lookup", KeepTable((0.9,), 100, 0.9)),))
    dec = make_decoder(pair, "KING", DecodeConfig(drafter="lookup", gamma=4, gamma_auto=True, draft_length=rule))
    lookup = dec.drafter
    first = [5, 6, 7, 9, 4, 3, 2, 1, 6, 7]  # "6 7" occurred before: the copy is 9 4 3 2
    assert lookup.propose(context_of(first), 4).tokens.tolist() == [9, 4, 3, 2]
    again = first + [9, 8, 2, 6, 7]  # 9 kept, 8 where 4 was copied (a residual draw); "6 7" matches again
    drafted = lookup.propose(context_of(again), 4)
    assert lookup.copies == {("first", 2): (1, 1), ("next", 2): (0, 1)}
    assert drafted.stop.keep == pytest.approx([0.9 * 2 / 3 + 1 / 3, 0.6]) and len(drafted.tokens) == 2
    assert drafted.stop.reason == "doubt"
    twin = lookup.fork(None, None)
    twin.copies[("next", 2)] = (5, 5)
    assert lookup.copies[("next", 2)] == (0, 1)  # a fork learns on its own


@pytest.mark.parametrize("drafter", ["lookup", "auto"])
def test_a_run_resumed_from_plain_state_each_round_drafts_as_a_live_one_under_gamma_auto(pair, drafter):
    """ZeroGPU steps a run from plain data (`state()` -> `resume=`), a new drafter each round: what the lookup learned
    from its copies rides along in `DecoderState.learned`, so every round proposes and cuts as the live run's does."""
    from specviz.core.draft_length import DraftLengthRule, KeepTable

    rule = DraftLengthRule(4, 0.1, (1.0, 1.05, 1.1, 1.3, 1.5), (("model", KeepTable((0.4,), 100, 0.4)),
                                                               ("lookup", KeepTable((0.9,), 100, 0.9))))
    config = DecodeConfig(drafter=drafter, gamma=4, gamma_auto=True, draft_length=rule, max_new_tokens=48, seed=5)
    prompt = "JULIET.\nO Romeo, Romeo, wherefore art thou Romeo?\nJULIET.\nO Romeo, Romeo"
    live, hopping = make_decoder(pair, prompt, config), make_decoder(pair, prompt, config)
    while not live.finished:
        a = live.step()
        hopping = make_decoder(pair, prompt, config, resume=hopping.state())
        b = hopping.step()
        assert (a.gamma, a.draft_stop.keep if a.draft_stop else None) == (b.gamma, b.draft_stop.keep if b.draft_stop else None)
    assert live.tokens == hopping.tokens and live.drafter.learned() == hopping.drafter.learned()
    assert live.drafter.learned()["copies"], "the run copied and learned"


def targets_text(pair, prompt: str, config: DecodeConfig, extra: int) -> list[int]:
    """The target's own answer at config's seed, `extra` tokens past config's end (what `bench --same-texts` follows)."""
    from dataclasses import replace

    from specviz.engine.decoding.decoders import TargetOnlyDecoder

    base = TargetOnlyDecoder(pair, prompt, replace(config, max_new_tokens=config.max_new_tokens + extra))
    base.run()
    return base.tokens[base.n_prompt:]


FOLLOWED = "JULIET.\nO Romeo, Romeo, wherefore art thou Romeo?\nJULIET.\nO Romeo, Romeo"  # its answers copy


@pytest.mark.parametrize("seed", [0, 1])
def test_a_lookup_run_that_follows_the_targets_text_emits_it_round_by_round(pair, seed):
    """T = 0.7: the emitted tokens are the text's, and every round keeps the copied tokens that are the text's, up to
    the first that is not, and no more (`sampling.follow_round`, whose law tests/core/test_follow_round.py proves)."""
    config = lookup(gamma=4, temperature=0.7, max_new_tokens=40, seed=seed, record=False)
    text = targets_text(pair, FOLLOWED, config, extra=5)
    dec = make_decoder(pair, FOLLOWED, config, follow=text)
    proposed, propose = [], dec.drafter.propose
    dec.drafter.propose = lambda context, gamma: proposed.append(propose(context, gamma)) or proposed[-1]
    while not dec.finished:
        at = len(dec.tokens) - dec.n_prompt
        dec.step()
        drafts, ahead = proposed[-1].tokens.tolist(), text[at:]
        kept = next((i for i, (x, y) in enumerate(zip(drafts, ahead)) if x != y), len(drafts))
        assert dec.records[-1].n_accepted == kept
        assert dec.tokens[dec.n_prompt:] == text[: len(dec.tokens) - dec.n_prompt]
    assert len(dec.tokens) - dec.n_prompt == 40 and sum(r.n_accepted for r in dec.records) > 0, "it copied"


def test_following_a_text_refuses_a_draft_that_samples_a_trace_and_a_kl_budget(pair):
    """The draft model proposes from a law q, not with certainty: its first round refuses to follow; a trace would
    show uniforms that were never drawn and mentored decoding keeps by a plan: refused before the first round."""
    text = [5] * 20
    dec = make_decoder(pair, "KING", DecodeConfig(gamma=2, max_new_tokens=8, record=False), follow=text)
    with pytest.raises(ValueError, match="proposal made with certainty"):
        dec.step()
    for config in (lookup(gamma=2), DecodeConfig(gamma=2, record=False, kl_budget=0.1)):
        with pytest.raises(ValueError, match="record off, kl_budget 0 and one draft"):
            make_decoder(pair, "KING", config, follow=text)


def test_a_followed_text_too_short_is_refused_where_a_round_would_read_past_it(pair):
    """Past its end the text is padding: a text without its EOS that a round would read past is refused, naming what
    to give, rather than kept as output."""
    config = lookup(gamma=4, temperature=0.7, max_new_tokens=12, record=False)
    text = [t for t in targets_text(pair, FOLLOWED, config, extra=0) if t != pair.tokenizer.eos_token_id][:12]
    dec = make_decoder(pair, FOLLOWED, config, follow=text)
    with pytest.raises(ValueError, match="give max_new_tokens \\+ gamma \\+ 1 tokens, or its EOS"):
        dec.run()
    assert dec.tokens[dec.n_prompt:] == text[: len(dec.tokens) - dec.n_prompt]  # what it kept before is the text's


def test_at_t0_following_the_greedy_text_runs_the_same_rounds_as_sampling(pair):
    """At T = 0 the text is the target's argmax chain and the exact rule keeps a copy iff it is the argmax: a run that
    follows the text drafts and keeps what a sampling run does, round by round, gamma 4 and gamma auto alike."""
    from specviz.core.draft_length import DraftLengthRule, KeepTable

    rule = DraftLengthRule(4, 0.0, (1.0, 1.05, 1.1, 1.3, 1.5), (("lookup", KeepTable((0.9,), 100, 0.9)),))
    for config in (lookup(gamma=4, temperature=0, max_new_tokens=40, record=False),
                   lookup(gamma=4, gamma_auto=True, draft_length=rule, temperature=0, max_new_tokens=40, record=False)):
        text = targets_text(pair, FOLLOWED, config, extra=5)
        followed, sampled = make_decoder(pair, FOLLOWED, config, follow=text), make_decoder(pair, FOLLOWED, config)
        followed.run()
        sampled.run()
        assert followed.tokens == sampled.tokens
        assert [(r.gamma, r.n_accepted) for r in followed.records] == [(r.gamma, r.n_accepted) for r in sampled.records]
        assert followed.counters.accepted > 0, "the run copied"
