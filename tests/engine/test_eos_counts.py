"""Drafts after an accepted EOS are never output, so no acceptance figure counts them (the over-count
that inflates short answers' acceptance when they are counted)."""
from __future__ import annotations

from specviz.core.config import DecodeConfig
from specviz.core.metrics import metric_set
from specviz.engine.decoding.decoders import SpeculativeDecoder

CONFIG = DecodeConfig(gamma=4, max_new_tokens=40, seed=2)
PROMPT = "ROMEO.\nBut soft"


def eos_decoder(eos: int):
    class EndsAt(SpeculativeDecoder):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.eos = eos  # this token now ends the text, as an EOS the draft proposes would
    return EndsAt


def test_drafts_after_an_accepted_eos_count_as_neither_drafted_tested_nor_accepted(pair):
    # 1. an ordinary run: the first round that accepted all 4 drafts, whose 2nd draft is new to the text
    plain = SpeculativeDecoder(pair, PROMPT, CONFIG)
    traces = plain.run()
    seen: set[int] = set()
    for index, trace in enumerate(traces):  # noqa: B007 (index is read after the break)
        drafted = [p.draft_token for p in trace.positions]
        if trace.n_accepted == 4 and drafted[1] not in seen | {drafted[0]}:
            break
        seen.update(e.id for e in trace.emitted)
    else:
        raise AssertionError("no round accepted all 4 drafts")
    # 2. the same seed with that token as EOS: the run ends inside that round's accepted prefix
    cut = eos_decoder(drafted[1])(pair, PROMPT, CONFIG)
    cut.run()
    last = cut.records[-1]
    assert len(cut.records) == index + 1 and cut.generated_ids[-1] == drafted[1]
    assert (last.n_accepted, last.n_examined, last.after_eos, last.n_emitted) == (2, 2, 2, 2)
    m = metric_set(cut.records)
    before = cut.records[:-1]
    assert m["draft_acceptance_rate"] == (sum(r.n_accepted for r in before) + 2) / (4 * len(before) + 2)
    assert m["acceptance_rate"] == (sum(r.n_accepted for r in before) + 2) / (sum(r.n_examined for r in before) + 2)
