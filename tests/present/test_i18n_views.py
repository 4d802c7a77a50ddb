"""zh and ja reach every corner of the page: figures, the playground's tables, the debugging view, the
tree card and error messages carry none of the English they had before translation.

The oracle is ENGLISH below: phrases copied by hand from the English the page showed before these
views were translated (not read from the catalogue). Kept out of the check on purpose: letters and
formulas (p, q, u, γ, α, c, KL, TV, min(1, p/q), Σmin, argmax, one-hot), the names "mentored
decoding", "vLLM", "Leviathan", token texts (quoted “…” or in <code>), and setting names in errors.
"""
from __future__ import annotations

import html
import re

import pytest

from specviz.app.handlers import step_handler, view_handler
from specviz.core import playground
from specviz.core.config import DecodeConfig
from specviz.core.notation import notation_key
from specviz.present import render, run_figures
from specviz.present.errors import localize
from specviz.present.i18n import pick, tr
from specviz.present.page_settings import settings_from
from specviz.present.views import Session, playground_drafts_run, playground_run, playground_view, rejection_columns

ENGLISH = [
    # step figures
    "Verify", "Correct", "target", "draft", "drafted", "drafted token", "colour", "verdict", "accepted", "rejected",
    "position", "other tokens", "log scale", "not examined", "an earlier draft", "accept zone", "reject zone",
    "uniform draw", "accept chance", "and the accept chance", "resample from", "exact residual", "resampled token",
    "bonus token", "bonus", "next distribution", "all", "drafts accepted", "does not decide", "at temperature",
    "accept when", "accept",
    # run and debugging figures
    "The run so far", "per step", "bars", "line", "overlap", "tested drafts", "step", "steps", "then", "resampled",
    "truncated geometric", "measured", "per-position acceptance", "if acceptances were independent", "over the last",
    "Thm", "current", "best", "expected tokens per target pass", "speedup", "tokens per pass", "Eq", "expects",
    "Why the acceptance is what it is", "drafts accepted in a step", "drafted position", "accepted share",
    "expected speedup", "speculative sampling", "exact match of two samples", "greedy", "argmaxes agree",
    "On this context", "positions", "acceptance by temperature", "temperature", "mean acceptance",
    # playground figures and tables
    "over", "under", "rejected mass", "residual", "the stack's height", "Why the output is exactly",
    "acceptance rate", "over-sampled", "under-sampled", "probability", "rounds per rule", "observed frequencies",
    "chi-square", "p-value", "small", "biased", "frequency", "mentored output", "mentored resampling",
    "mentored accept chance", "exact accept chance", "best acceptance at each", "this budget", "exact decoding",
    "acceptance", "KL spent", "thresholds", "lower", "upper", "tokens by ratio", "output", "exact", "wrong",
    "resample from the residual", "resample from the target", "keep the draft token anyway",
    "keep the draft while the argmaxes agree", "every sample a try", "after each rejection", "shortcut",
    "identical candidates merged", "consistent with the target", "rejected at", "Acceptance rate measured",
    "expected", "rule", "largest gap", "obs", "drafts", "first emitted token", "a level accepts", "one draft",
    "measured at", "One level's acceptance", "as k grows", "closed form", "residuals do not depend", "k drafts",
    "of the time", "each sample a try", "Several drafts at once",
    # debugging view
    "acceptance rate α", "draft acceptance rate", "mean acceptance length", "system efficiency", "tokens per target pass",
    "expected from", "independent acceptances", "untested drafts included", "tokens per step", "included",
    "mean over steps", "tokens emitted", "share of steps", "acceptance-length histogram", "by number of drafts",
    "acceptance by depth", "acceptance by sibling rank", "candidate tried", "tries", "No token tested",
    "rejected most often", "times tested", "interval", "at least", "context",
    # tree card
    "accepted path", "not tried", "a sibling", "its branch", "chain", "chains", "tried", "depth", "becomes",
    "the correction is drawn", "the next sibling is judged", "kept only if", "every depth accepted", "candidates",
    "candidate", "left after the last rejection", "Top of that law", "kept", "kept no draft", "distinct nodes",
    "scored in one target pass", "this round", "independent chains", "batched draft forward", "share a node",
    "green", "the order tried", "one target pass scored every node", "surviving", "random order", "Step", "Draft",
    "the draft model sampled", "try", "So", "The output is still distributed", "Note",
    # error frames
    "must be", "whole number", "a number", "finite number", "not", "off", "here", "the command line goes further",
    "needs", "several drafts are verified", "got", "list of numbers", "tokens", "has a NaN", "negative weight",
    "has no mass", "give at least one weight", "write numbers separated by commas", "has", "but", "give one weight",
    "unknown notation", "choose one of", "showing step", "could not convert", "Your earlier run", "freed",
    "this Step started a new run",
]
PATTERN = re.compile(r"(?<![\w-])(" + "|".join(re.escape(p) for p in sorted(ENGLISH, key=len, reverse=True)) + r")(?![\w-])",
                     re.IGNORECASE)
LANGS = ["zh", "ja"]


def words(text: str) -> str:
    """The text a reader sees, without token texts (“…”, <code>) and tags; title/aria-label attributes kept."""
    attrs = " ".join(re.findall(r'(?:title|aria-label)="([^"]*)"', text))
    text = re.sub(r"<code>.*?</code>|“[^”]*”", " ", f"{text} {attrs}", flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def english_in(text: str) -> list[str]:
    return PATTERN.findall(words(text))


def figure_words(fig) -> str:
    """A figure's title, axis titles, legend names, annotations and marker texts."""
    layout = fig.layout.to_plotly_json()
    parts = [layout.get("title", {}).get("text", "")]
    parts += [v.get("title", {}).get("text", "") for k, v in layout.items() if re.match(r"[xy]axis\d*$", k)]
    parts += [a.get("text", "") for a in layout.get("annotations", [])]
    for trace in fig.data:
        parts.append(trace.name or "")
        if trace.type == "scatter" and trace.text is not None:
            parts += [str(t) for t in trace.text]
    return "\n".join(parts)


@pytest.fixture(scope="module")
def runs(page_settings, pair):
    """Three real runs: 6 steps at T = 1 (rejections and bonus tokens), 2 greedy, 2 mentored; and a tree run."""
    sessions = {}
    for name, change in (("exact", {}), ("greedy", {"temperature": 0.0}), ("mentored", {"kl_budget": 0.05}),
                         ("tree", {"gamma": 3, "drafts": 4})):
        session = Session()
        for _ in range(6 if name == "exact" else 2):
            session, _ = step_handler(session, page_settings(seed=4, **change))
        sessions[name] = session
    kinds = {t.correction.kind for t in sessions["exact"].traces}
    assert kinds == {"resampled", "bonus"}, kinds  # both corrections are shown below
    return sessions


def test_the_oracle_finds_the_english_page(runs, page_settings):
    """The same checks on the English page find English everywhere: the checks below can fail."""
    session, view = view_handler(runs["tree"], "leviathan", None, lang="en")
    for part in (view.analytics, view.step_card, figure_words(view.pq), figure_words(view.analytics_plot)):
        assert len(english_in(part)) >= 3, part
    _, summary, _ = playground_run("", "0.5, 0.5", "0.9, 0.1", 2_000, 0, "leviathan", "en")
    assert len(english_in(summary)) >= 5 and english_in(localize("en", bad_inputs(page_settings)[0]))


@pytest.mark.parametrize("lang", LANGS)
def test_step_and_run_figures_carry_no_english(runs, lang):
    for name, session in runs.items():
        for step in range(1, len(session.traces) + 1):
            session, view = view_handler(session, "leviathan", step, lang=lang)
            for fig in (view.pq, view.uniform, view.residual, view.history, view.analytics_plot):
                assert english_in(figure_words(fig)) == [], (name, step, figure_words(fig))
    m = runs["exact"].run.metrics()
    for fig in (run_figures.analytics_figure(runs["exact"].traces, {**m, "cost_ratio_c": None}, "leviathan", lang),
                run_figures.sweep_figure({"temperatures": [0.0, 0.5, 1.0], "acceptance_rate": [0.5, 0.6, 0.7],
                                          "exact_match_of_samples": [0.5, 0.3, 0.2], "greedy_exact_match": 0.5,
                                          "positions": 12}, "leviathan", lang)):
        assert english_in(figure_words(fig)) == [], figure_words(fig)


@pytest.mark.parametrize("lang", LANGS)
def test_debugging_view_and_tree_card_carry_no_english(runs, lang):
    for name, session in runs.items():
        session, view = view_handler(session, "leviathan", None, lang=lang)
        for part in (view.analytics, view.most_rejected, view.step_card, view.narration, view.round_summary):
            assert english_in(part) == [], (name, english_in(part), part)
        assert english_in(" ".join(view.rejections["headers"])) == []
    ranked = [{"token": " the", "rejected": 3, "n": 7, "ci_low": 0.1, "ci_high": 0.8}]
    assert english_in(render.most_rejected_html(ranked, lang)) == []
    tree_view = view_handler(runs["tree"], "leviathan", None, lang=lang)[1]
    assert 'class="card tree-card" data-drafts="4"' in tree_view.step_card   # the tree card was among those checked


@pytest.mark.parametrize("lang", LANGS)
def test_playground_figures_and_tables_carry_no_english(lang):
    target, draft = playground.TOY_PRESETS["overconfident draft"]
    csv = (lambda xs: ", ".join(map(str, xs)))
    decomposition, mentored, status = playground_view("", csv(target), csv(draft), 0.2, "leviathan", lang)
    histogram, summary, status2 = playground_run("", csv(target), csv(draft), 20_000, 0, "leviathan", lang)
    k_hist, k_curve, k_summary, status3 = playground_drafts_run("", csv(target), csv(draft), 3, 20_000, 0, "leviathan", lang)
    assert not (status.error or status2.error or status3.error)
    for fig in (decomposition, mentored, histogram, k_hist, k_curve):
        assert english_in(figure_words(fig)) == [], figure_words(fig)
    for table in (summary, k_summary):
        assert english_in(table) == [], table
    assert english_in(tr(lang, "pg.drafts_intro")) == []


def test_playground_table_and_rejection_columns_follow_the_notation():
    """The letters come from the notation in every language: Chen et al. call the target q."""
    target, draft = playground.TOY_PRESETS["overconfident draft"]
    csv = (lambda xs: ", ".join(map(str, xs)))
    for lang in ("en", "zh", "ja"):
        _, summary, _ = playground_run("", csv(target), csv(draft), 2_000, 0, "chen", lang)
        header = summary.split("\n")[2]
        assert re.search(r"∣\S+ − q∣", header) and "− p∣" not in header, header
        columns = rejection_columns("chen", lang)
        assert columns[4].startswith("q") and columns[5].startswith("p") and columns[6] == "u"
    assert rejection_columns("leviathan", "en")[4:6] == ["p (target)", "q (draft)"]   # the page's first headers


def config(**change):
    knobs = dict(gamma=4, temperature=1.0, top_k=0, top_p=1.0, kl_budget=0.0, max_new_tokens=10, seed=0)
    return DecodeConfig.from_knobs(**{**knobs, **change})


def bad_inputs(page_settings):
    """Real exceptions from the code that validates settings, in English as the CLI and API say them."""
    cases = [lambda: config(gamma=99), lambda: config(gamma=2.5), lambda: config(temperature=-1),
             lambda: config(top_k=-3), lambda: config(top_p=2.0), lambda: config(kl_budget=float("inf")),
             lambda: config(seed=-1), lambda: config(drafts=3, kl_budget=0.1), lambda: config(temperature="hot"),
             lambda: settings_from(page_settings(prompt="x", max_new_tokens=500)),
             lambda: settings_from(page_settings(prompt=5, max_new_tokens=10)),
             lambda: playground.check_pair("0.5, abc", "0.5, 0.5"), lambda: playground.check_pair("1", "1"),
             lambda: playground.check_pair("0.5, -1", "0.5, 0.5"), lambda: playground.check_pair("0, 0", "0.5, 0.5"),
             lambda: playground.check_pair("0.5, nan", "0.5, 0.5"), lambda: playground.check_pair("1, 1, 1", "1, 1"),
             lambda: playground.whole_number("seed", -1, 0, 10), lambda: notation_key("klingon")]
    out = []
    for case in cases:
        with pytest.raises(ValueError) as err:
            case()
        out.append(str(err.value))
    return out


SETTING = re.compile(r"\b(gamma|temperature|top_k|top_p|kl_budget|seed|drafts|max_new_tokens|prompt|notation|target|"
                     r"draft)\b")   # setting names stay as the CLI and API spell them


def test_error_frames_are_translated_and_keep_setting_names_and_ranges(page_settings):
    messages = bad_inputs(page_settings)
    assert messages[0] == "gamma must be a whole number in 1..16, not 99"  # the exception itself stays English
    for lang in LANGS:
        for message in messages:
            said = localize(lang, message)
            assert english_in(SETTING.sub(" ", said)) == [], (lang, message, said)
            names = SETTING.findall(message)
            assert names and all(n in said for n in names[:1]), (message, said)   # the setting is still named
            for bound in re.findall(r"\d+\.\.\d+|\[[^\]]*\]|\(0, 1\]", message):
                assert bound in said, (bound, said)
        assert localize(lang, "something no frame knows") == "something no frame knows"
    assert all(localize("en", m) == m for m in messages)


@pytest.mark.parametrize("lang", LANGS)
def test_a_bad_setting_on_the_page_is_said_in_the_pages_language(page_settings, lang):
    """No model is loaded: gamma is refused before the pair is."""
    _, view = step_handler(Session(), page_settings(gamma=99, lang=lang))
    assert "message-error" in view.message and "gamma" in view.message and "1..16" in view.message
    assert english_in(view.message) == [], view.message
    _, view = step_handler(Session(), page_settings(notation="klingon", lang=lang))
    assert "message-error" in view.message and english_in(view.message) == [], view.message


def test_english_counts_say_one_step_and_two_steps():
    assert "now 1 step)" in tr("en", "cnt.warming_long", need=3, n=1)
    assert "now 2 steps)" in tr("en", "cnt.warming_long", need=3, n=2)
    assert "1 candidate tried" in tr("en", "tree.summary", k=2, nodes=3, tries=1, kept="x", kind="bonus", n=2)
    assert "4 candidates tried" in tr("en", "tree.summary", k=2, nodes=3, tries=4, kept="x", kind="bonus", n=1)


def test_traditional_chinese_locales_get_the_chinese_catalogue():
    assert [pick(x) for x in ("zh-TW", "zh-HK", "zh-Hant", "zh-Hant-TW", "zh_TW", "zh-Hans-CN")] == ["zh"] * 6
