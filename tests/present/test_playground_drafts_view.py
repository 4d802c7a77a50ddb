"""The playground's multi-draft section as the app shows it (no models)."""
from __future__ import annotations

import pytest

from specviz.present.views import playground_drafts_run, playground_run, playground_view


def test_section_draws_both_rules_and_the_acceptance_curve():
    """k = 3, 100,000 rounds on p = (0.5, 0.3, 0.2), q = (0.2, 0.2, 0.6): the exact rule is consistent, the
    merged shortcut is flagged biased; the curve has k = 1..8 and the 1 - TV line."""
    histogram, acceptance, summary, status = playground_drafts_run("a, b, c", "0.5, 0.3, 0.2", "0.2, 0.2, 0.6", 3,
                                                                   100_000, 0, "leviathan")
    assert not status.error
    assert [t.name.split(" (")[0] for t in histogram.data[:2]] == [
        "exact: every sample a try, p → residual after each rejection", "shortcut: identical candidates merged into one try"]
    assert "| exact: each sample a try |" in summary and "consistent with the target" in summary
    assert "| identical candidates merged |" in summary and "**biased**" in summary
    assert list(acceptance.data[0].x) == list(range(1, 9)) and "1 − TV" in acceptance.data[1].name


def test_bad_k_is_a_message_naming_drafts():
    *_, status = playground_drafts_run("a, b", "0.5, 0.5", "0.4, 0.6", 9, 1000, 0, "leviathan")
    assert status.error and "drafts must be a whole number in 1..8" in status.text


@pytest.mark.parametrize("seed", [float("inf"), float("nan"), 2**64, 1e300, -1, 2.5, "7", None, [1]])
def test_a_bad_seed_of_several_drafts_is_a_message_naming_it_as_for_one_draft(seed):
    *_, status = playground_drafts_run("a, b", "0.5, 0.5", "0.4, 0.6", 2, 1000, seed, "leviathan")
    *_, single = playground_run("a, b", "0.5, 0.5", "0.4, 0.6", 1000, seed, "leviathan")
    assert status.error and status.text.startswith("seed must be a whole number in 0..")
    assert status.text == single.text


@pytest.mark.parametrize("field", ["tokens", "drafts", "samples", "notation"])
def test_a_list_for_any_playground_field_is_a_message_naming_it(field):
    args = {"tokens": "a, b", "drafts": 2, "samples": 1000, "notation": "leviathan", field: [1]}
    *_, status = playground_drafts_run(args["tokens"], "0.5, 0.5", "0.4, 0.6", args["drafts"], args["samples"], 0,
                                       args["notation"])
    assert status.error and field in status.text, status.text


def test_a_list_for_the_kl_budget_is_a_message_naming_it():
    *_, status = playground_view("a, b", "0.5, 0.5", "0.4, 0.6", [0.1], "leviathan")
    assert status.error and status.text.startswith("kl_budget must be a finite number >= 0")
