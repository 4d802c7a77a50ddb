"""The command line: `specviz COMMAND ...` or `python -m specviz COMMAND ...`.

generate, bench, report, whatif, loadtest and replay are parsed here; train, distill-smollm2, modelcard and
record-lessons take their own flags (`specviz train --help`). Bad input is one line `error: ...` and exit status 2.
Parsing reads names only, so a typo or --help is answered before torch, transformers, gradio or plotly load.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from ..core.config import GAMMA_AUTO, DecodeConfig
from ..core.draft_length import GAMMA_MAX_DEFAULT
from ..core.metrics import metric_set
from ..engine.decoding.drafter_names import DEFAULT_DRAFTER, DRAFTER_NAMES, HYBRID_DRAFTER, LOOKUP_DRAFTER
from ..engine.models.preset_names import PRESET_NAMES
from .busy import metered, times_the_machine
from .cli_values import (
    BENCH_RUNS_MAX,
    OneLineParser,
    bench_runs,
    gamma_max_value,
    gamma_value,
    gamma_values,
    number_list,
    refusal,
    settle_gamma_max,
    thread_count,
    whole_list,
    writable_folder,
)
from .replay import cmd_replay

COLOURS, RESET = {"accepted": "\033[32m", "resampled": "\033[33m", "bonus": "\033[36m", "target": ""}, "\033[0m"


def _add_decoding_args(ap: argparse.ArgumentParser, gamma_list: bool = False) -> None:
    ap.add_argument("--preset", choices=sorted(PRESET_NAMES), default=None)
    ap.add_argument("--draft", help="draft model: hub id or local folder (with --target)")
    ap.add_argument("--target", help="target model: hub id or local folder (with --draft)")
    ap.add_argument("--device", default=None, help="cuda, mps or cpu (default: picked automatically)")
    if gamma_list:
        ap.add_argument("--gamma", type=gamma_values, default=[4],
                        help="one value or a list to sweep: 1,2,4,8; auto: a draft length that adapts (1,2,4,auto)")
    else:
        ap.add_argument("--gamma", type=gamma_value, default=4,
                        help="drafts per round (1..16), or auto: stop drafting when the next token is unlikely to be "
                             "kept at the pair's measured costs (at most --gamma-max)")
    ap.add_argument("--gamma-max", type=gamma_max_value, default=None,
                    help=f"with --gamma auto: the most drafts a round, 1..16 (default {GAMMA_MAX_DEFAULT})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--drafter", choices=list(DRAFTER_NAMES), default=DEFAULT_DRAFTER,
                    help="who proposes: the pair's draft model; prompt lookup (copies what followed an earlier "
                         "occurrence of the last n tokens; the draft model is not used); or auto: prompt lookup in "
                         "the rounds where the context has such a match, the draft model in the others")


def config_from(args) -> DecodeConfig:
    from ..engine.decoding.drafters import check_drafter

    config = DecodeConfig.from_knobs(gamma=args.gamma, temperature=args.temperature, top_k=args.top_k,
                                   top_p=args.top_p, kl_budget=args.kl_budget, max_new_tokens=args.max_new_tokens,
                                   seed=args.seed, drafts=getattr(args, "drafts", 1), drafter=args.drafter,
                                   gamma_max=args.gamma_max)
    return check_drafter(config)


def run_stats(decoder) -> dict:
    """generate --json's stats: the metric set of specviz.metrics (the baseline: the same keys)."""
    from ..engine.decoding.decoders import SpeculativeDecoder

    if isinstance(decoder, SpeculativeDecoder):
        return {**metric_set(decoder.records), "prefill_s": decoder.prefill_s}
    c = decoder.counters
    return {"tokens": c.tokens, "target_calls": c.target_calls, "draft_calls": 0, "tokens_per_target_call": 1.0,
            "wall_s": c.compute_s, "prefill_s": decoder.prefill_s, "acceptance_rate": None,
            "draft_acceptance_rate": None, "mean_acceptance_length": 1.0, "per_position_acceptance": []}


def cmd_generate(args) -> int:
    from ..engine.decoding import decoders, factory
    from ..engine.models.loading import load_pair

    config = config_from(args)
    pair = load_pair(args.preset, draft=args.draft, target=args.target, device=args.device)
    if not args.baseline:
        from ..engine.serving.auto_gamma import resolve

        config = resolve(pair, config)  # gamma auto: its rule at this pair's measured costs (measured first)
    decoder = (decoders.TargetOnlyDecoder if args.baseline else factory.make_decoder)(pair, args.prompt, config)
    steps = decoder.run()
    if args.json:
        out = {"text": decoder.text, "token_ids": decoder.generated_ids,
               "steps": [] if args.baseline else [s.to_dict() for s in steps],
               "stats": run_stats(decoder), "notice": decoder.notice}
        print(json.dumps(out))
        return 0
    if decoder.notice:
        print(f"note: {decoder.notice}", file=sys.stderr)
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    pieces = []
    for item in steps:
        for tok in ([item] if args.baseline else item.emitted):
            pieces.append(f"{COLOURS[tok.kind]}{tok.text}{RESET}" if colour and COLOURS[tok.kind] else tok.text)
    print(args.prompt + "".join(pieces))
    stats = run_stats(decoder)
    legend = "" if args.baseline else "  (green accepted, yellow resampled, cyan bonus)"
    print(f"\n[{stats['tokens']} tokens, {stats['target_calls']} target calls, "
          f"{stats['tokens_per_target_call']:.2f} tokens/call, {stats['wall_s']:.2f} s]{legend}", file=sys.stderr)
    return 0


def cmd_bench(args) -> int:
    from .bench import run_bench, run_drafts_bench
    from .preset_cost import run_preset_cost

    if args.threads is not None:  # e.g. the page's own count (every core but one), to compare with its counters
        __import__("torch").set_num_threads(args.threads)
    if args.drafter == LOOKUP_DRAFTER and (args.drafts is not None or args.random_weights):
        raise ValueError("bench --drafter lookup runs the lookup bench: leave out --drafts and --random-weights")
    if args.gamma == GAMMA_AUTO or args.drafter == HYBRID_DRAFTER:
        from .auto_bench import cmd_auto_bench

        return cmd_auto_bench(args)
    if args.runs is not None:
        raise ValueError("bench --runs sets the runs of the auto bench: use it with --gamma auto or --drafter auto")
    if args.same_texts:
        raise ValueError("bench --same-texts runs the auto bench: use it with --gamma auto and --drafter lookup")
    if args.drafts is not None:
        result = run_drafts_bench(preset=args.preset, draft=args.draft, target=args.target, device=args.device,
                                  drafts=whole_list("--drafts", args.drafts),
                                  gammas=whole_list("--gammas", args.gammas or "2,4"),
                                  quick=args.quick, seed=args.seed)
        if args.json:
            print(json.dumps(result))
        else:
            for row in result["rows"]:
                print("  ".join(f"{k} {v}" for k, v in row.items()))
        return 0
    if args.drafter == LOOKUP_DRAFTER:
        from .lookup_bench import run_lookup_bench

        result = run_lookup_bench(preset=args.preset, draft=args.draft, target=args.target, device=args.device,
                                  gamma=args.gamma, quick=args.quick, seed=args.seed,
                                  temperatures=number_list("--temperatures", args.temperatures or "0,0.7"))
    elif args.random_weights:
        result = run_preset_cost(args.preset, device=args.device)
    else:
        result = run_bench(preset=args.preset, draft=args.draft, target=args.target, device=args.device,
                           gamma=args.gamma, quick=args.quick, seed=args.seed)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:32s} {value}")
    return 0


def cmd_report(args) -> int:
    writable_folder("--out", args.out)  # before any model loads or any scrape is read
    if args.from_traces:
        if args.from_metrics or args.prompts:
            raise ValueError("report --from-traces reads a trace file alone: leave out --prompts and --from-metrics")
        from .report_traces import run_traces_report

        summary = run_traces_report(args.from_traces, args.out)
        o = summary["overall"]
        print(f"{summary['source']['steps']} recorded steps: alpha {o['acceptance_rate']:.3f}, mean acceptance length "
              f"{o['mean_acceptance_length']:.2f}; wrote {args.out}/summary.json, report.html", file=sys.stderr)
        return 0
    if args.from_metrics:
        from .report_metrics import run_metrics_report

        result = run_metrics_report(args.from_metrics, args.out, cost_ratio=args.cost_ratio, preset=args.preset,
                                    draft=args.draft, target=args.target, device=args.device)
        print(f"{result['source']}: draft acceptance rate {result['draft_acceptance_rate']:.3f}, mean acceptance "
              f"length {result['mean_acceptance_length']:.2f}; wrote {args.out}/summary.json, report.html",
              file=sys.stderr)
        return 0
    from .report import read_prompts, run_report

    if not args.prompts:
        raise ValueError("report needs --prompts FILE (or --from-metrics FILE_OR_URL for a server's metrics)")
    prompts = read_prompts(args.prompts)
    summary = run_report(prompts, args.out, preset=args.preset, draft=args.draft, target=args.target,
                         device=args.device, gamma=args.gamma, temperature=args.temperature, top_k=args.top_k,
                         top_p=args.top_p, runs=args.runs, max_new_tokens=args.max_new_tokens,
                         kl_budget=args.kl_budget, drafter=args.drafter, gamma_max=args.gamma_max)
    o, best = summary["overall"], summary["best_gamma"]
    ties = f", within one standard error of gamma {', '.join(map(str, best['measured_ties']))}" if best.get("measured_ties") else ""
    print(f"{len(summary['prompts'])} prompts, {o['steps']} steps: alpha {o['acceptance_rate']:.3f}, draft acceptance "
          f"rate {o['draft_acceptance_rate']:.3f}, mean acceptance length {o['mean_acceptance_length']:.2f}; "
          f"best gamma {best['measured']} (x{best['speedup'] or 0:.2f}{ties}; predicted with the measured verify cost: "
          f"{best.get('predicted')}; Thm 3.8: {best['thm38']}); "
          f"wrote {args.out}/summary.json, traces.jsonl, report.html", file=sys.stderr)
    return 0


def cmd_whatif(args) -> int:
    from .whatif import run_whatif, whatif_text, write_plot

    if args.plot:
        writable_folder("--plot", str(__import__("pathlib").Path(args.plot).resolve().parent))
    result = run_whatif(per_position=args.per_position, from_report=args.from_report, from_metrics=args.from_metrics,
                        cost_ratio=args.cost_ratio, draft_ms=args.draft_ms, target_ms=args.target_ms,
                        gammas=args.gammas, drafts=args.drafts, sibling_rates=args.sibling_rates,
                        extra_row_cost=args.extra_row_cost, verify_cost=args.verify_cost,
                        host_cost=args.host_cost, forward_share=args.forward_share,
                        max_new_tokens=args.max_new_tokens,
                        pair={k: v for k, v in (("preset", args.preset), ("draft", args.draft), ("target", args.target),
                                                ("device", args.device)) if v})
    if args.plot:
        write_plot(result, args.plot)
    print(json.dumps(result) if args.json else whatif_text(result))
    return 0


def cmd_loadtest(args) -> int:
    from .racers import cmd_loadtest as run  # beside the races it runs: nothing heavy loads to parse

    return run(args)


OWN_PARSERS = {"record-lessons": "specviz.tools.record", "train": "specviz.tools.train", "corpus": "specviz.tools.corpus",
               "modelcard": "specviz.tools.modelcard", "distill-smollm2": "specviz.tools.distill.cli",
               "gpucheck": "specviz.tools.gpucheck"}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in OWN_PARSERS:
        import importlib

        return importlib.import_module(OWN_PARSERS[argv[0]]).main(argv[1:]) or 0
    args = build_parser().parse_args(argv)
    try:
        settle_gamma_max(args, GAMMA_MAX_DEFAULT)
        return metered(args.func, args) if times_the_machine(args) else args.func(args)
    except (ValueError, RuntimeError, OSError) as err:
        print(f"error: {refusal(err)}", file=sys.stderr)
        return 2


def build_parser() -> OneLineParser:
    """`python -m specviz`'s parser, one function a subcommand (train, corpus, modelcard and distill-smollm2
    parse their own arguments)."""
    ap = OneLineParser(prog="python -m specviz", description="speculative decoding, step by step")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for add in (add_generate, add_bench, add_report, add_whatif, add_loadtest, add_replay):
        add(sub)
    return ap


def add_generate(sub) -> None:
    """`generate`: text with speculative decoding or the target-only baseline."""
    gen = sub.add_parser("generate", help="generate text with speculative decoding (or the target-only baseline)")
    gen.add_argument("--prompt", required=True)
    _add_decoding_args(gen)
    gen.add_argument("--temperature", type=float, default=1.0)
    gen.add_argument("--top-k", type=int, default=None)
    gen.add_argument("--top-p", type=float, default=None)
    gen.add_argument("--kl-budget", type=float, default=0.0, help="0 = exact; > 0 = mentored decoding (lossy)")
    gen.add_argument("--max-new-tokens", type=int, default=64)
    gen.add_argument("--drafts", type=int, default=1, help="k chains per step, verified as a token tree (1..8)")
    gen.add_argument("--baseline", action="store_true", help="run the target-only decoder instead")
    gen.add_argument("--json", action="store_true")
    gen.set_defaults(func=cmd_generate)


def add_bench(sub) -> None:
    """`bench`: speculative vs target-only vs transformers' assisted generation."""
    bench = sub.add_parser("bench", help="speculative vs target-only vs transformers' assisted generation")
    _add_decoding_args(bench)
    bench.add_argument("--quick", action="store_true", help="a run of under a minute on a 2-core CPU")
    bench.add_argument("--threads", type=thread_count, default=None,
                       help="torch's intra-op threads (default: torch's, every core; the app serves with one fewer)")
    bench.add_argument("--drafts", default=None, help="e.g. 1,2,4: several drafts at once, each k against target-only")
    bench.add_argument("--gammas", default=None,
                       help="with --drafts: the gammas to run each k at (default 2,4); with --gamma auto or --drafter "
                            "auto: the fixed gammas run beside auto (default 1,2,3,4)")
    bench.add_argument("--temperatures", default=None,
                       help="with --drafter lookup: the temperatures to run the copy-heavy examples at (default 0,0.7); "
                            "with --gamma auto or --drafter auto: the temperatures to run at (default 0.7,0)")
    bench.add_argument("--runs", type=bench_runs, default=None, help="with --gamma auto or --drafter auto: runs per "
                       f"prompt, seeds --seed, --seed + 1, ... (1..{BENCH_RUNS_MAX}; default 2)")
    bench.add_argument("--same-texts", action="store_true", help="with --gamma auto and --drafter lookup: every "
                       "contender follows the target's own answer to each prompt and seed (the same law; less noise)")
    bench.add_argument("--json", action="store_true")
    bench.add_argument("--random-weights", action="store_true",
                       help="a hub preset's draft and target built from their configs with random weights: "
                            "per-forward cost and predicted speedup, no download")
    bench.set_defaults(func=cmd_bench)


def add_report(sub) -> None:
    """`report`: acceptance metrics over many prompts, or from a server's metrics."""
    report = sub.add_parser("report", help="acceptance metrics over many prompts: summary.json, traces.jsonl, report.html")
    report.add_argument("--prompts", help="a text file, one prompt per line")
    _add_decoding_args(report, gamma_list=True)
    report.add_argument("--temperature", type=float, default=1.0)
    report.add_argument("--top-k", type=int, default=None, help="0 or unset = off")
    report.add_argument("--top-p", type=float, default=None, help="1 or unset = off")
    report.add_argument("--kl-budget", type=float, default=0.0)
    report.add_argument("--runs", type=int, default=1, help="runs per prompt, seeds 0..runs-1")
    report.add_argument("--max-new-tokens", type=int, default=64)
    report.add_argument("--out", required=True, help="folder to write into")
    report.add_argument("--from-metrics", action="append", metavar="FILE_OR_URL",
                        help="a vLLM or SGLang Prometheus scrape (file or http URL) instead of running models; "
                             "twice: the rates between two scrapes; or a JSON Lines / JSON array file of vLLM "
                             "response bodies with metrics.speculative_decoding (--per-request-spec-decode-metrics)")
    report.add_argument("--cost-ratio", type=float, default=None,
                        help="with --from-metrics: draft/target forward cost c (else measured on --preset/--draft/--target)")
    report.add_argument("--from-traces", metavar="TRACE",
                        help="a trace file (a report's traces.jsonl, a lesson, a run exported from the page) instead "
                             "of running models: the acceptance figures and the rejection analysis of its rounds")
    report.set_defaults(func=cmd_report)


def add_whatif(sub) -> None:
    """`whatif`: expected acceptance length and speedup at other γ and draft counts."""
    what = sub.add_parser("whatif", help="expected acceptance length and speedup at other γ and draft counts, "
                                         "from a per-position acceptance curve and a cost ratio")
    what.add_argument("--per-position", help="accepted at position i over rounds (vLLM's form), e.g. 0.9,0.75,0.6")
    what.add_argument("--from-report", metavar="DIR", help="a `report --out` folder: its largest γ's curve and c")
    what.add_argument("--from-metrics", action="append", metavar="FILE_OR_URL",
                      help="a vLLM/SGLang/llama.cpp Prometheus scrape (twice: the rates between two scrapes), or "
                           "a file of vLLM response bodies with per-request stats")
    what.add_argument("--cost-ratio", type=float, default=None, help="c: one draft forward over one target forward")
    what.add_argument("--draft-ms", type=float, default=None, help="one draft forward, ms (with --target-ms)")
    what.add_argument("--target-ms", type=float, default=None, help="one target forward, ms (with --draft-ms)")
    what.add_argument("--gammas", default="1,2,3,4,5,6,8", help="γ values to evaluate (default 1,2,3,4,5,6,8)")
    what.add_argument("--drafts", default="1", help="draft counts k to evaluate, e.g. 1,2,4 (default 1)")
    what.add_argument("--sibling-rates", default=None,
                      help="k > 1: acceptance of the 2nd, 3rd... try at a depth after the earlier ones failed")
    what.add_argument("--extra-row-cost", type=float, default=0.0,
                      help="k > 1: cost of each extra row relative to the first (0 = free rows, default)")
    what.add_argument("--verify-cost", metavar="V1,V2,...",
                      help="a target pass over n = 1, 2, ... positions relative to one over one (V(1) = 1), e.g. "
                           "1,1.2,1.35,1.5,1.6; default: the report's measured curve, or none (Thm 3.8's limit)")
    what.add_argument("--host-cost", metavar="H0[,H1]",
                      help="a round's host work (warping, the accept test, the trace) in target-only steps, h0 + h1 γ "
                           "(e.g. 0.14,0.013); default: the report's measured line, or none")
    what.add_argument("--forward-share", type=float, default=None,
                      help="a one-position target pass over a target-only step (which pays its own draw): about 1, in (0, 10]; "
                           "default: the report's, or 1")
    what.add_argument("--max-new-tokens", type=int, default=None,
                      help="each request's budget (1..4096), its last round cut there; default: the report's or none")
    what.add_argument("--preset", choices=sorted(PRESET_NAMES), default=None,
                      help="measure the verify's cost curve V(n) on this pair here (or --draft and --target)")
    what.add_argument("--draft", help="with --target: measure V(n) on this pair (hub id or local folder)")
    what.add_argument("--target", help="with --draft: measure V(n) on this pair")
    what.add_argument("--device", default=None, help="where to measure V(n): cuda, mps or cpu (default: picked)")
    what.add_argument("--plot", metavar="FILE.html", help="also write the speedup-by-γ figure as a page")
    what.add_argument("--json", action="store_true")
    what.set_defaults(func=cmd_whatif)


def add_loadtest(sub) -> None:
    """`loadtest`: many /step API sessions at once on a local server."""
    load = sub.add_parser("loadtest", help="many /step API sessions at once on a local server: isolation, latency, memory")
    load.add_argument("--sessions", type=int, default=30)
    load.add_argument("--steps", type=int, default=30)
    load.add_argument("--churn", type=int, default=200, help="sessions that connect, step 5 times and leave")
    load.add_argument("--attacks", action="store_true",
                      help="the public-Space attack pass instead: long prompts, two pairs, wrong types (README: Security)")
    load.add_argument("--alternations", type=int, default=5, help="with --attacks: Steps of each of two pairs' visitors")
    load.add_argument("--race-seconds", type=float, default=120,
                      help="with --attacks: how long 1, then 6 visitors race beside a light Step (default 120)")
    load.add_argument("--race-vs-bench", type=int, default=None, metavar="N",
                      help="instead: N races of the page's first settings against the median of three bench --quick "
                           "runs (before, halfway, after), in this process")
    load.add_argument("--json", action="store_true")
    load.set_defaults(func=cmd_loadtest)


def add_replay(sub) -> None:
    """`replay`: a recorded run's rounds on the terminal, no model loaded."""
    replay = sub.add_parser("replay", help="a trace file's rounds on the terminal (report's traces.jsonl, a lesson, "
                                           "a run exported from the page); no model is loaded")
    replay.add_argument("trace", metavar="TRACE", help="the trace file")
    replay.add_argument("--run", type=int, default=1, help="which run of the file, 1.. (a report holds one a γ, "
                                                           "prompt and seed; default 1)")
    replay.add_argument("--json", action="store_true", help="the run's producer, settings, prompt and steps as JSON")
    replay.set_defaults(func=cmd_replay)
