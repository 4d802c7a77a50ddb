"""gamma auto and the hybrid drafter on the command line (bundled pair): generate, report and bench's contract, and
the rule measured at the pair's costs once per process (engine.serving.auto_gamma)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from specviz.core.config import DecodeConfig
from specviz.core.draft_length import DraftLengthRule
from specviz.engine.serving import auto_gamma
from tests.cli_runner import run_cli


def test_generate_gamma_auto_drafts_at_most_the_cap_and_says_why_each_round_stopped():
    out = run_cli("generate", "--prompt", "KING.\nNow is", "--gamma", "auto", "--gamma-max", "5", "--max-new-tokens",
                  "24", "--json")
    assert out.returncode == 0, out.stderr[-1500:]
    steps = json.loads(out.stdout)["steps"]
    assert steps and all(1 <= s["gamma"] <= 5 == s["draft_stop"]["gamma_max"] for s in steps)
    assert all(s["draft_stop"]["drafted"] == s["gamma"] for s in steps)
    assert {s["draft_stop"]["reason"] for s in steps} <= {"doubt", "cap"}


@pytest.mark.parametrize("args, message", [
    (("--gamma", "often"), "--gamma takes a whole number in 1..16 or auto, not 'often'"),
    (("--gamma", "0"), "--gamma takes a whole number in 1..16 or auto, not '0'"),   # it left out "or auto"
    (("--gamma", "auto", "--gamma-max", "40"), "--gamma-max must be a whole number in 1..16, not '40'"),
    (("--gamma", "auto", "--gamma-max", "2.5"), "--gamma-max must be a whole number in 1..16, not '2.5'"),
    # a cap on gamma auto beside a fixed gamma did nothing, without a word
    (("--gamma", "4", "--gamma-max", "3"), "--gamma-max caps --gamma auto; with --gamma 4 it does nothing"),
    (("--gamma", "auto", "--drafts", "2"), "gamma auto drafts one chain: it needs drafts = 1"),
])
def test_a_bad_gamma_is_one_error_line(args, message):
    out = run_cli("generate", "--prompt", "KING", *args)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("error: ") and message in out.stderr and out.stderr.count("\n") == 1
    assert "argument --" not in out.stderr   # argparse's "argument --gamma-max: " before a message naming it again


@pytest.mark.parametrize("args", [("--gamma", "auto", "--gammas", ","), ("--drafts", "1,2", "--gammas", " , "),
                                  ("--drafts", ",")])
def test_an_empty_list_of_gammas_or_drafts_is_refused_not_read_as_one(args):
    """`--gammas ,` used to become [1] without a word and start a benchmark of gamma 1."""
    out = run_cli("bench", "--quick", *args)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("error: ") and "must be a comma-separated list of whole numbers" in out.stderr
    assert out.stderr.count("\n") == 1


@pytest.mark.parametrize("args, message", [
    (("--gamma", "auto", "--runs", "0"), "--runs must be a whole number in 1..64, not '0'"),
    (("--gamma", "auto", "--runs", "65"), "--runs must be a whole number in 1..64, not '65'"),
    (("--runs", "8"), "bench --runs sets the runs of the auto bench: use it with --gamma auto or --drafter auto"),
    (("--same-texts",), "bench --same-texts runs the auto bench: use it with --gamma auto and --drafter lookup"),
    (("--gamma", "auto", "--same-texts"), "the same law only for a proposal made with certainty: use it with "
                                          "--drafter lookup, not model"),
])
def test_bench_runs_out_of_range_or_without_the_auto_bench_is_one_error_line(args, message):
    out = run_cli("bench", "--quick", *args)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("error: ") and message in out.stderr and out.stderr.count("\n") == 1


def test_the_auto_bench_runs_each_prompt_at_runs_seeds_from_seed(pair, monkeypatch):
    from specviz.tools import auto_bench

    seen = []
    monkeypatch.setattr(auto_bench, "load_pair", lambda *a, **k: pair)
    monkeypatch.setattr(auto_bench.auto_gamma, "resolve", lambda pair_, c: dataclasses.replace(
        c, draft_length=DraftLengthRule.drafting_on(c.gamma)) if c.gamma_auto else c)
    monkeypatch.setattr(auto_bench, "_group", lambda pair_, prompts, configs, seeds, same: seen.append(list(seeds)) or {})
    result = auto_bench.run_auto_bench(gammas=(2,), gamma_max=3, temperatures=(0.0,), quick=True, seed=5, runs=3)
    assert seen == [[5, 6, 7]] and result["seeds"] == 3
    rule = result["by_temperature"][0]["rule"]  # the curve as priced beside the curve as timed (None: never timed)
    assert rule["verify_costs"][0] == 1.0 and "measured_verify_costs" in rule


@pytest.mark.slow  # the verify's cost curve, the rule's probe run and two compared runs: minutes on 2 cores
def test_report_runs_gamma_auto_beside_fixed_gammas_with_its_drafted_lengths(tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("KING.\\nNow is the time\n")
    out = run_cli("report", "--prompts", str(prompts), "--gamma", "2,auto", "--gamma-max", "6", "--max-new-tokens",
                  "24", "--out", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr[-1500:]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert list(summary["by_gamma"]) == ["2"] and summary["settings"]["gammas"] == [2, "auto"]
    auto = summary["gamma_auto"]
    lines = [json.loads(x) for x in (tmp_path / "r" / "traces.jsonl").read_text().splitlines()[1:]]
    drafted = [x["gamma"] for x in lines if "draft_stop" in x]
    assert max(drafted) <= 6 and auto["drafted_length_histogram"] == [drafted.count(k) for k in range(max(drafted) + 1)]
    assert sum(auto["acceptance_length_histogram"]) == len(drafted) and auto["over_best_fixed"] > 0
    page = (tmp_path / "r" / "report.html").read_text()
    assert 'id="drafted-lengths"' in page and "γ auto: a draft length that adapts" in page
    # its traces read back as the same runs: gamma auto's rounds stay auto, not the gammas they happened to draft
    again = run_cli("report", "--from-traces", str(tmp_path / "r" / "traces.jsonl"), "--out", str(tmp_path / "t"))
    assert again.returncode == 0, again.stderr[-1500:]
    recounted = json.loads((tmp_path / "t" / "summary.json").read_text())
    assert list(recounted["by_gamma"]) == ["2"] and recounted["settings"]["gammas"] == [2, "auto"]
    for key in ("acceptance_rate", "drafted_length_histogram", "acceptance_length_histogram", "steps"):
        assert recounted["gamma_auto"][key] == auto[key], key
    # and replay tells each auto round where and why drafting stopped, as the card does
    told = run_cli("replay", str(tmp_path / "r" / "traces.jsonl"), "--run", "2")  # run 1: gamma 2's
    assert told.returncode == 0 and "(auto, at most 6)" in told.stdout and "γ auto" in told.stdout, told.stdout[-800:]
    stops = "".join(line for line in told.stdout.splitlines() if "γ auto" in line)
    assert "<code>" not in stops and "<div" not in stops and "&lt;" not in stops  # plain text: no tags, no entities


# a verify curve planted as the pair's measured one: the line V(n) = 1 + 0.03 (n - 1) with timing noise of +-0.02
# whose mean and whose tilt along n are both zero, so its least-squares line is that line exactly
PLANTED_CURVE = [1.0, 1.05, 1.04, 1.07, 1.14, 1.17, 1.16, 1.19, 1.26]


def test_the_rule_is_measured_once_per_pair_drafter_and_temperature_band(pair, monkeypatch, request):
    auto_gamma.forget()
    request.addfinalizer(auto_gamma.forget)  # no later test reads a rule priced on the planted curve
    measured = []
    real = auto_gamma.measure_rule
    monkeypatch.setattr(auto_gamma, "measure_rule", lambda *a, **k: measured.append(1) or real(*a, **k))
    monkeypatch.setattr(auto_gamma, "measured_curve", lambda *a, **k: list(PLANTED_CURVE))
    config = DecodeConfig.from_knobs(gamma="auto", gamma_max=4, temperature=0.8, top_k=0, top_p=1, kl_budget=0,
                                     max_new_tokens=16, seed=0, drafter="auto")
    first = auto_gamma.resolve(pair, config)
    again = auto_gamma.resolve(pair, config)
    nearby = auto_gamma.resolve(pair, dataclasses.replace(config, temperature=0.9, top_k=40))  # the same band
    assert len(measured) == 1 and first == again and isinstance(first.draft_length, DraftLengthRule)
    assert nearby.draft_length is first.draft_length and nearby.temperature == 0.9
    rule = first.draft_length
    assert rule.gamma_max == 4 and rule.verify_costs[0] == 1.0 and len(rule.verify_costs) == 5
    assert rule.draft_cost > 0
    # the rule prices further positions by the line through the measured curve, not its raw steps (0.01 to 0.07)
    assert rule.verify_costs == pytest.approx((1.0, 1.03, 1.06, 1.09, 1.12), abs=1e-4)
    assert list(rule.verify_costs) == sorted(rule.verify_costs)
    assert dict(rule.keep).keys() == {"model", "lookup"} and dict(rule.keep)["model"].tokens > 0
    other = auto_gamma.resolve(pair, DecodeConfig.from_knobs(gamma="auto", gamma_max=4, temperature=0.5, top_k=0,
                                                             top_p=1, kl_budget=0, max_new_tokens=16, seed=0))
    assert len(measured) == 2 and dict(other.draft_length.keep).keys() == {"model"}
    fixed = DecodeConfig(gamma=3)
    assert auto_gamma.resolve(pair, fixed) is fixed and len(measured) == 2


def test_bench_auto_runs_its_contenders_in_abba_order(pair, monkeypatch):
    """The baseline, each fixed gamma and auto run in turn, reversed on every other (prompt, seed): no contender
    always follows the same one, and a steady drift in the machine's speed cancels between them."""
    from specviz.tools import auto_bench

    ran = []

    class Baseline(auto_bench.TargetOnlyDecoder):
        def run(self):
            ran.append("target-only")
            return super().run()

    def decoder(pair_, prompt, config, follow=None):
        ran.append("auto" if config.gamma_auto else str(config.gamma))
        return real_make(pair_, prompt, config, follow=follow)

    real_make = auto_bench.make_decoder
    monkeypatch.setattr(auto_bench, "TargetOnlyDecoder", Baseline)
    monkeypatch.setattr(auto_bench, "make_decoder", decoder)
    configs = auto_bench.contenders("model", [1, 2], 3, 0.0, 4)
    configs["auto"] = auto_gamma.resolve(pair, configs["auto"])
    group = auto_bench._group(pair, ["ROMEO.\n", "KING.\n"], configs, range(1))
    forward = ["target-only", "1", "2", "auto"]
    assert ran == forward + forward[::-1]
    assert set(group["contenders"]) == {"1", "2", "auto"} and group["best_fixed_gamma"] in {"1", "2"}
    paired = group["auto_over_best_fixed_paired"]
    assert paired["runs"] == 2 and paired["ratio"] > 0 and paired["stderr"] >= 0


def lookup_contenders(pair) -> dict:
    """Prompt lookup at gamma 2 and at gamma auto under a planted rule (nothing measured)."""
    from specviz.core.draft_length import KeepTable
    from specviz.tools import auto_bench

    configs = auto_bench.contenders("lookup", [2], 4, 0.7, 12)
    rule = DraftLengthRule(4, 0.0, (1.0, 1.05, 1.1, 1.3, 1.5), (("lookup", KeepTable((0.9,), 100, 0.9)),))
    configs["auto"] = dataclasses.replace(configs["auto"], draft_length=rule)
    return configs


COPYING = "JULIET.\nO Romeo, Romeo, wherefore art thou Romeo?\nJULIET.\nO Romeo, Romeo"


def test_bench_same_texts_has_every_contender_follow_the_targets_own_answer(pair, monkeypatch):
    """`bench --same-texts`: at each prompt and seed both contenders follow one text, the target's own answer there
    (a target-only run at that seed, made here), and the group's rows are theirs."""
    from specviz.engine.decoding.decoders import TargetOnlyDecoder
    from specviz.tools import auto_bench

    made, real_make = [], auto_bench.make_decoder

    def kept(pair_, prompt, config, follow=None):
        made.append((config.seed, follow, real_make(pair_, prompt, config, follow=follow)))
        return made[-1][2]

    monkeypatch.setattr(auto_bench, "make_decoder", kept)
    configs = lookup_contenders(pair)
    group = auto_bench._group(pair, [COPYING], configs, range(3, 5), same_texts=True)
    assert set(group["contenders"]) == {"2", "auto"} and len(made) == 4
    for seed in (3, 4):
        answer = TargetOnlyDecoder(pair, COPYING, dataclasses.replace(configs["2"], seed=seed))
        answer.run()
        ran = [(text, dec) for s, text, dec in made if s == seed]
        for text, dec in ran:  # each contender emitted the answer, and was handed it with a round's room past it
            assert dec.tokens[dec.n_prompt:] == answer.tokens[answer.n_prompt:]
            assert len(text) == 12 + 4 + 1 and text[:12] == answer.tokens[answer.n_prompt:]
        assert [r.gamma for r in ran[0][1].records] != [r.gamma for r in ran[1][1].records], "each its own rounds"
    assert made[0][1] != made[2][1], "two seeds, two answers"


def test_bench_same_texts_stops_when_a_contender_leaves_the_text_it_follows(pair, monkeypatch):
    """Planted: each contender follows the answer at the next seed, not the one its run is checked against."""
    from specviz.tools import auto_bench

    real_text, real_make = auto_bench.shared_text, auto_bench.make_decoder

    def elsewhere(pair_, prompt, config, follow=None):  # follows the answer at seed + 1 instead
        return real_make(pair_, prompt, config, follow=real_text(pair_, prompt, config.seed + 1, {"c": config}))

    monkeypatch.setattr(auto_bench, "make_decoder", elsewhere)
    with pytest.raises(RuntimeError, match="left the text it followed"):
        auto_bench._group(pair, [COPYING], lookup_contenders(pair), range(1), same_texts=True)


def test_the_paired_ratio_compares_auto_with_the_best_fixed_gamma_run_by_run():
    """Two runs where A made 10 tokens in 1 s and 2 s, B 10 tokens in 1 s and 1 s: per-run ratios 1 and 1/2, their
    geometric mean 1/sqrt(2); the log ratios 0 and -ln 2 have a standard error of ln(2)/2, times the ratio."""
    from specviz.tools.auto_bench import paired_ratio

    out = paired_ratio([(10, 1.0), (10, 2.0)], [(10, 1.0), (10, 1.0)])
    assert out["runs"] == 2
    assert out["ratio"] == pytest.approx(0.7071, abs=1e-4)
    assert out["stderr"] == pytest.approx(0.7071 * 0.6931 / 2, abs=1e-3)


def test_the_paired_ratio_of_identical_runs_is_one_with_no_spread_and_needs_two_runs():
    from specviz.tools.auto_bench import paired_ratio

    assert paired_ratio([(8, 0.5), (12, 0.7)], [(8, 0.5), (12, 0.7)]) == {"ratio": 1.0, "stderr": 0.0, "runs": 2}
    assert paired_ratio([(8, 0.5)], [(8, 0.4)]) is None
