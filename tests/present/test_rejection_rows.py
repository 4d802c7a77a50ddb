"""The app's rejection table and most-rejected list, on hand-built traces."""
from __future__ import annotations

from specviz.core.trace import Candidate, Correction, Counters, EmittedToken, PositionTrace, StepTrace
from specviz.present import export, render


def position(index, text, verdict, p=0.3, q=0.3):
    return PositionTrace(index=index, draft_token=index + 1, draft_text=text, draft_prob=q, target_prob=p,
                         accept_prob=min(1, p / q), exact_accept_prob=min(1, p / q), uniform=0.9 if verdict != "unexamined" else None,
                         verdict=verdict, candidates=[Candidate(id=index + 1, text=text, target_prob=p, draft_prob=q)],
                         target_other=1 - p, draft_other=1 - q, tv=0.1, kl=0.1, overlap=0.9)


def step(n, text, p):
    """A step of gamma 2 whose first draft, `text`, is rejected with target probability p."""
    return StepTrace(step=n, gamma=2, kl_budget=0.0, positions=[position(0, text, "rejected", p=p, q=0.6),
                                                                position(1, "x", "unexamined")],
                     n_accepted=0, correction=Correction(kind="resampled", position=0, token=9, text="\t",
                                                         candidates=[], final_other=0.0),
                     emitted=[EmittedToken(id=9, text="\t", kind="resampled", step=n)], draft_ms=1, target_ms=1,
                     verify_ms=0, counters=Counters())


def test_small_probabilities_in_scientific_notation_and_whitespace_as_symbols():
    [row] = export.rejections([step(1, " \n", 2.1e-05)])
    assert row[3] == "␣⏎" and row[8] == "⇥"
    assert row[4] == "2.1e-05" and float(row[4]) == 2.1e-05


def test_most_rejected_lists_only_tokens_with_enough_support():
    traces = [step(i, " the", 0.01) for i in range(1, 6)] + [step(i, " a", 0.01) for i in range(6, 10)]
    ranked = export.most_rejected(traces)
    assert [t["token"] for t in ranked] == [" the"]  # " a": rejected 4 of 4, below the support of 5
    assert "␣the" in render.most_rejected_html(ranked) and "at least 5 times" in render.most_rejected_html(ranked)
