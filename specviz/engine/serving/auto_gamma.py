"""gamma auto at the pair's measured costs: the draft length rule (`core.draft_length`) a run drafts by.

`resolve(pair, config)` fills `config.draft_length` from what this process measured of the pair on its device:

- V(n), the target's pass over n positions relative to one (`costs.pair_verify_costs`, measured once per pair and
  device), read as `core.verify_cost.straightened` reads it: its least-squares line where one fits (a predicted
  speed-up reads the raw curve, so the page's best fixed γ and the rule's prices can differ by the timings' noise);
- c, one draft forward over one target forward, and the keep tables (the chance the target keeps a drafted token,
  by the draft's confidence in it), from one short measuring run: the run's drafter at gamma_max drafting every
  round to the cap (`DraftLengthRule.drafting_on`) on the pair's example prompts at the run's warping, each drafted
  token's confidence beside its exact accept chance min(1, p/q) read from the round's trace. The tables come from
  the target's verdicts on those example prompts, never on the run's own: at run time the rule reads only the
  draft's side (SpecDec++'s acceptance prediction is trained the same way).

Kept per pair, device, temperature band (T = 0; up to 0.6; up to 1.2; above: the first run of a band is measured
at its own warping, and the rule serves the band), drafter and gamma_max (the MAX_RULES most recent): a page's
later Steps and runs, a race and a link's replay in this process draft by the same rule, and a visitor moving the
temperature slider cannot make the server measure again and again (the page offers gamma_max 8 only: at most 12
rules a pair). Another process measures its own, and a link replayed there may draft differently (its digest then
says so).
"""
from __future__ import annotations

import contextlib
import dataclasses
import statistics
import threading
from collections import OrderedDict

from ...core.config import DecodeConfig
from ...core.draft_length import DraftLengthRule, fit_keep_table
from ...core.verify_cost import straightened, verify_cost_at
from .. import limits
from ..decoding.factory import make_decoder
from . import costs

MEASURE_TOKENS = 24     # new tokens per measuring prompt
MEASURE_BLOCKS = 2      # blocks of timed passes per n where the verify curve is measured here
MODEL_PROMPTS = 2       # the pair's first example prompts, for the draft model's table
MAX_RULES = 32
_RULES: OrderedDict[tuple, DraftLengthRule] = OrderedDict()
_LOCK = threading.Lock()  # one measurement at a time: two visitors' first auto Steps measure once


TEMPERATURE_BANDS = (0.0, 0.6, 1.2)  # a rule serves every temperature of its band: T = 0, (0, 0.6], (0.6, 1.2], above


def _band(temperature: float) -> int:
    """Which temperature band a run falls in: the keep tables change with the temperature, but slowly, so a
    visitor moving the slider does not make the server measure again (at most one rule a band, pair and drafter)."""
    return sum(temperature > edge for edge in TEMPERATURE_BANDS)


def _key(pair, config: DecodeConfig) -> tuple:
    return (*costs.pair_key(pair), _band(config.temperature), config.drafter, config.gamma,
            config.lookup_max_ngram, config.lookup_min_ngram, config.lookup_source)


def resolve(pair, config: DecodeConfig, hold=None) -> DecodeConfig:
    """`config` with its draft length rule (unchanged for a fixed gamma or a rule already set), measured first where
    this process has none for the pair and settings (`hold`: entered around each timed measurement, the app's fair
    clock)."""
    if not config.gamma_auto or config.draft_length is not None:
        return config
    key = _key(pair, config)
    with _LOCK:
        rule = _RULES.get(key)
        if rule is None:
            rule = measure_rule(pair, config, hold)
            _RULES[key] = rule
            while len(_RULES) > MAX_RULES:
                _RULES.popitem(last=False)
        _RULES.move_to_end(key)
    return dataclasses.replace(config, draft_length=rule)


SOURCES = {"model": ("model",), "lookup": ("lookup",), "auto": ("model", "lookup")}  # keep tables a drafter needs


def _prompts(pair, source: str) -> list[str]:
    """The measuring prompts of a keep table: the pair's first examples for the draft model; its lookup examples
    (copy-heavy, and the one with nothing to copy) for the lookup, or its examples where it has none."""
    examples = list(pair.examples or ("The",))[:MODEL_PROMPTS]
    if source == "lookup":
        return [prompt for _, prompt in (pair.ref.lookup_examples if pair.ref else ())] or examples
    return examples


def measured_curve(pair, n_max: int, hold=None) -> list[float]:
    """The pair's verify curve from the cost book, measured first (MEASURE_BLOCKS blocks a size) where the book has
    none as long as `n_max` (what every later prediction reads too)."""
    curve = costs.COSTS.verify_curve(costs.pair_key(pair))
    if curve is None or len(curve) < n_max:
        curve = costs.measure_verify_costs(pair, max(costs.APP_VERIFY_N, n_max), blocks=MEASURE_BLOCKS,
                                           **({"hold": hold} if hold is not None else {}))
    return curve


def measure_rule(pair, config: DecodeConfig, hold=None) -> DraftLengthRule:
    """The rule at this pair's measured costs (the module's recipe)."""
    gamma_max = config.gamma
    # the rule prices each further position by the curve's step: where a line fits the measured points, the slope
    # all of them give, not the difference of two noisy timings; else the curve's own shape (`straightened`)
    curve = straightened(measured_curve(pair, gamma_max + 1, hold)[: max(costs.APP_VERIFY_N, gamma_max + 1)])
    samples: dict[str, tuple[list, list]] = {}
    draft_s, verify_s = [], []
    for source in SOURCES.get(config.drafter, (config.drafter,)):
        probe = dataclasses.replace(config, drafter=source, draft_length=DraftLengthRule.drafting_on(gamma_max),
                                    seed=0, record=True, max_new_tokens=MEASURE_TOKENS, trace_top_k=1)
        confidences, chances = samples.setdefault(source, ([], []))
        for prompt in _prompts(pair, source):
            limits.check()  # past the event's deadline: stop between two prompts
            decoder = make_decoder(pair, prompt, probe)
            with hold() if hold is not None else contextlib.nullcontext():
                traces = decoder.run()
            for trace in traces:
                confidences += trace.draft_stop.confidences
                chances += [p.exact_accept_prob for p in trace.positions]
                if source == "model" and trace.record.gamma == gamma_max:  # full rounds: the verify curve's n
                    draft_s.append(trace.record.draft_s / gamma_max)
                    verify_s.append(trace.record.target_s)
    target_s = statistics.median(verify_s) / verify_cost_at(curve, gamma_max + 1) if verify_s else None
    draft_cost = statistics.median(draft_s) / target_s if target_s else 0.0
    tables = tuple((source, fit_keep_table(*measured)) for source, measured in samples.items())
    return DraftLengthRule(gamma_max, round(draft_cost, 4), tuple(round(v, 4) for v in curve[: gamma_max + 1]), tables)


def forget() -> None:
    """Drop every measured rule (tests; a server never needs to)."""
    with _LOCK:
        _RULES.clear()
