"""Benchmark of a draft length that adapts (`bench --gamma auto`) and of the hybrid drafter (`bench --drafter auto`).

On the pair's prompts, by group ("nothing-to-copy": its example prompts; "copy-heavy": its lookup examples whose
answers copy from them, for a drafter that copies), at each temperature: the target-only baseline, the drafter at
each fixed gamma asked for, and the drafter at gamma auto (`core.draft_length`, its rule resolved at this pair's
measured costs before anything is timed) run in one process on the same prompts and seeds, interleaved prompt by
prompt and seed by seed, so that drift in the machine's speed hits each contender alike. Ratios are throughput
ratios (tokens per second) against the baseline's forwards of the same prompts and seeds (`core.metrics`).
"""
from __future__ import annotations

import dataclasses
import json
import math

import torch

from ..core.config import GAMMA_AUTO, DecodeConfig
from ..core.metrics import metric_set
from ..engine.decoding.decoders import TargetOnlyDecoder
from ..engine.decoding.drafter_names import LOOKUP_DRAFTER as LOOKUP
from ..engine.decoding.drafters import check_drafter
from ..engine.decoding.factory import make_decoder
from ..engine.models.loading import load_pair
from ..engine.models.presets import NO_COPY
from ..engine.serving import auto_gamma, costs
from .cli_values import number_list, whole_list

NOTHING_TO_COPY, COPY_HEAVY = "nothing-to-copy", "copy-heavy"
RUNS = 2  # runs a prompt, by default (bench --runs)


def prompt_groups(pair, drafter: str, quick: bool) -> dict[str, list[str]]:
    """The prompts by group: the pair's examples (nothing to copy) and, for a drafter that copies, its copy-heavy
    lookup examples."""
    groups = {NOTHING_TO_COPY: list(pair.examples or ("The",))[: 2 if quick else 4]}
    copying = [prompt for name, prompt in (pair.ref.lookup_examples if pair.ref else ()) if name != NO_COPY]
    if drafter != "model" and copying:
        groups[COPY_HEAVY] = copying[: 2 if quick else 3]
    return groups


def contenders(drafter: str, gammas: list[int], gamma_max: int, temperature: float, new_tokens: int) -> dict:
    """name -> DecodeConfig (seed 0, rule unresolved): each fixed gamma, then "auto"."""
    knobs = dict(temperature=temperature, top_k=None, top_p=None, kl_budget=0.0, max_new_tokens=new_tokens, seed=0,
                 drafter=drafter, record=False)
    out = {str(g): DecodeConfig.from_knobs(gamma=g, **knobs) for g in gammas}
    out[GAMMA_AUTO] = DecodeConfig.from_knobs(gamma=GAMMA_AUTO, gamma_max=gamma_max, **knobs)
    for config in out.values():
        check_drafter(config)
    return out


def _row(records, calls) -> dict:
    m = metric_set(records, calls)
    drafted = [r.gamma for r in records]
    return {"speedup_vs_target_only": round(m["speedup"], 3), "speedup_stderr": _r(m["speedup_stderr"]),
            "tokens_per_s": round(m["tokens_per_s_speculative"], 1), "acceptance_rate": round(m["acceptance_rate"], 4),
            "tokens_per_target_pass": round(m["tokens_per_target_call"], 3),
            "mean_drafted": round(sum(drafted) / len(drafted), 3) if drafted else 0.0,
            "drafted_length_histogram": m["drafted_length_histogram"]}


def _r(x):
    return None if x is None else round(x, 3)


def _group(pair, prompts: list[str], configs: dict, seeds: range, same_texts: bool = False) -> dict:
    """Every contender and the baseline on every prompt and seed, interleaved in ABBA order (the baseline then the
    contenders on even runs, the reverse on odd ones), so that a steady drift in the machine's speed, and whichever
    run goes just before, hit each contender alike; their rows. `same_texts`: every contender follows one text per
    prompt and seed, drawn from the target before anything is timed (`shared_text`)."""
    records = {name: [] for name in configs}
    runs = {name: [] for name in configs}  # per (prompt, seed): (tokens, seconds) of each contender
    calls: list[float] = []
    order = [None, *configs]  # None: the target-only baseline
    cases = [(prompt, s) for prompt in prompts for s in seeds]
    texts = {case: shared_text(pair, *case, configs) for case in cases} if same_texts else {}
    for run, (prompt, s) in enumerate(cases):
        text = texts.get((prompt, s))
        for name in order if run % 2 == 0 else order[::-1]:
            if name is None:
                base = TargetOnlyDecoder(pair, prompt, dataclasses.replace(next(iter(configs.values())), seed=s))
                base.run()
                calls += base.call_s
            else:
                spec = make_decoder(pair, prompt, dataclasses.replace(configs[name], seed=s), follow=text)
                spec.run()
                if text is not None and spec.tokens[spec.n_prompt:] != text[: len(spec.tokens) - spec.n_prompt]:
                    raise RuntimeError(f"γ {name} left the text it followed (prompt {prompt!r}, seed {s})")
                records[name] += spec.records
                runs[name].append((sum(r.n_emitted for r in spec.records), sum(r.step_s for r in spec.records)))
    rows = {name: _row(recs, calls) for name, recs in records.items()}
    fixed = {name: row for name, row in rows.items() if name != GAMMA_AUTO}
    best = max(fixed, key=lambda name: fixed[name]["speedup_vs_target_only"]) if fixed else None
    paired = paired_ratio(runs[GAMMA_AUTO], runs[best]) if best else None
    return {"tokens_per_s_target_only": round(len(calls) / sum(calls), 1), "contenders": rows, "best_fixed_gamma": best,
            "auto_over_best_fixed": round(rows[GAMMA_AUTO]["speedup_vs_target_only"] /
                                          fixed[best]["speedup_vs_target_only"], 3) if best else None,
            "auto_over_best_fixed_paired": paired}


def shared_text(pair, prompt: str, seed: int, configs: dict) -> list[int]:
    """The target's own answer to `prompt` at `seed` (the baseline's tokens), long enough for every contender's last
    round to read it (`sampling.follow_round`): what each contender follows under `bench --same-texts`."""
    config = next(iter(configs.values()))
    cap = max(c.gamma for c in configs.values())
    base = TargetOnlyDecoder(pair, prompt, dataclasses.replace(config, seed=seed,
                                                               max_new_tokens=config.max_new_tokens + cap + 1))
    base.run()
    return base.tokens[base.n_prompt:]


def paired_ratio(runs_a: list[tuple[int, float]], runs_b: list[tuple[int, float]]) -> dict | None:
    """A's speed over B's, run by run: both ran the same prompt and seed back to back (`_group`), so the
    machine's drift between runs cancels. The geometric mean of the per-run ratios of tokens per second and its
    standard error (over the runs' log ratios, exponentiated); `runs`: how many pairs. None with fewer than 2."""
    logs = [math.log((ta / sa) / (tb / sb)) for (ta, sa), (tb, sb) in zip(runs_a, runs_b) if sa > 0 and sb > 0
            and ta > 0 and tb > 0]
    if len(logs) < 2:
        return None
    mean = sum(logs) / len(logs)
    stderr = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1) / len(logs))
    return {"ratio": round(math.exp(mean), 4), "stderr": round(math.exp(mean) * stderr, 4), "runs": len(logs)}


def run_auto_bench(preset=None, draft=None, target=None, device=None, drafter: str = "model",
                   gammas=(1, 2, 3, 4), gamma_max: int = 8, temperatures=(0.7, 0.0), quick=False, seed=0,
                   runs: int = RUNS, same_texts: bool = False) -> dict:
    """Every contender against target-only on the pair's prompt groups at each temperature (the module's recipe):
    `runs` runs a prompt, at seeds seed .. seed + runs - 1; `same_texts`: each contender follows the target's own
    answer at each prompt and seed (prompt lookup only: `sampling.follow_round`)."""
    if same_texts and drafter != LOOKUP:
        raise ValueError(f"bench --same-texts decides each round by one text from the target, the same law only for "
                         f"a proposal made with certainty: use it with --drafter {LOOKUP}, not {drafter}")
    new_tokens = 48 if quick else 64
    by_t = [contenders(drafter, list(gammas), gamma_max, t, new_tokens) for t in temperatures]  # validated first
    if not by_t:
        raise ValueError("--temperatures needs at least one temperature")
    pair = load_pair(preset, draft=draft, target=target, device=device)
    groups = prompt_groups(pair, drafter, quick)
    seeds = range(seed, seed + runs)
    out = []
    for configs in by_t:
        # the rule at this pair's costs, measured before anything is timed; a warm-up run of each contender
        configs = {name: auto_gamma.resolve(pair, c) for name, c in configs.items()}
        for config in configs.values():
            make_decoder(pair, groups[NOTHING_TO_COPY][0], dataclasses.replace(config, max_new_tokens=8)).run()
        rule = configs[GAMMA_AUTO].draft_length
        out.append({"temperature": configs[GAMMA_AUTO].temperature,
                    "rule": {"draft_cost": rule.draft_cost, "verify_costs": list(rule.verify_costs),
                             "measured_verify_costs": costs.COSTS.verify_curve(costs.pair_key(pair)),
                             "keep": {source: list(table.chances) for source, table in rule.keep}},
                    "groups": {name: _group(pair, prompts, configs, seeds, same_texts)
                               for name, prompts in groups.items()}})
    return {"preset": pair.name, "device": str(pair.device), "threads": torch.get_num_threads(), "drafter": drafter,
            "gamma_max": gamma_max, "fixed_gammas": list(gammas), "new_tokens_per_run": new_tokens, "seeds": len(seeds),
            "same_texts": same_texts,
            "prompts": groups, "by_temperature": out}


def auto_bench_text(result: dict) -> str:
    """The bench's result as lines to read: per temperature and group, each contender's speedup."""
    lines = [f"{result['preset']} on {result['device']} ({result['threads']} threads), drafter {result['drafter']}, "
             f"gamma auto (cap {result['gamma_max']}) beside fixed gamma {result['fixed_gammas']}"
             + (", every contender following the target's own texts" if result.get("same_texts") else "")]
    for by_t in result["by_temperature"]:
        for name, group in by_t["groups"].items():
            shown = "  ".join(f"γ {k}: x{row['speedup_vs_target_only']:.3f} (drafts {row['mean_drafted']:.2f})"
                              for k, row in group["contenders"].items())
            paired = group.get("auto_over_best_fixed_paired")
            pairs = (f" (run by run: x{paired['ratio']:.3f} ± {paired['stderr']:.3f} over {paired['runs']} runs)"
                     if paired else "")
            lines.append(f"T {by_t['temperature']:g} {name}: {shown}; best fixed γ {group['best_fixed_gamma']}, "
                         f"auto / best fixed {group['auto_over_best_fixed']}{pairs}")
    return "\n".join(lines)


def cmd_auto_bench(args) -> int:
    """`bench --gamma auto` (beside fixed gammas) or `bench --drafter auto`: the command line's entry."""
    if args.drafts is not None or args.random_weights:
        raise ValueError("bench --gamma auto and --drafter auto run the auto bench: leave out --drafts and "
                         "--random-weights")
    result = run_auto_bench(preset=args.preset, draft=args.draft, target=args.target, device=args.device,
                            drafter=args.drafter, gammas=whole_list("--gammas", args.gammas or "1,2,3,4"),
                            gamma_max=args.gamma_max,
                            temperatures=number_list("--temperatures", args.temperatures or "0.7,0"),
                            quick=args.quick, seed=args.seed, runs=args.runs or RUNS, same_texts=args.same_texts)
    print(json.dumps(result) if args.json else auto_bench_text(result))
    return 0
