"""Error messages in the page's language: the English an exception carries, matched to a catalogue frame.

core/engine raise ValueError in English (the CLI's `error: ...` line and the API's JSON say it as it
is); the page says the same sentence in its language. Each known message shape maps to an "err." key
of the locale files (present/locales/*.json) with the same blanks: setting names, ranges and the
refused value are kept verbatim. A message of no known shape stays English, so nothing is lost.
"""
from __future__ import annotations

import re

from .i18n import tr

_VALUE = r"(?P<value>.+?)"
# (pattern over the whole message, catalogue key); the first match wins, so the narrower shapes come first
FRAMES = [
    (rf"(?P<name>\w+) must be a whole number in (?P<lo>[\d,]+)\.\.(?P<hi>[\d,]+) here, not {_VALUE} "
     r"\(the command line goes further\)", "err.whole_range_here"),
    (rf"(?P<name>\w+) must be a whole number in (?P<lo>[\d,]+)\.\.(?P<hi>[\d,]+) or auto, not {_VALUE}", "err.gamma_auto"),
    (rf"(?P<name>[\w ]+) must be a whole number in (?P<lo>[\d,]+)\.\.(?P<hi>[\d,]+), not {_VALUE}", "err.whole_range"),
    (rf"(?P<name>\w+) must be a number in (?P<range>\[[^\]]+\]), not {_VALUE}", "err.number_range"),
    (rf"(?P<name>\w+) must be a whole number >= 0 \((?P<off>\S+) = off\), not {_VALUE}", "err.whole_min_off"),
    (rf"(?P<name>\w+) must be in (?P<range>\S+ \S+) \((?P<off>\S+) = off\), not {_VALUE}", "err.in_off"),
    (rf"(?P<name>\w+) must be a finite number >= 0, not {_VALUE}", "err.finite_min"),
    (rf"(?P<name>\w+) must be a whole number >= 0, not {_VALUE}", "err.whole_min"),
    (rf"(?P<name>\w+) must be a whole number, not {_VALUE}", "err.whole"),
    (rf"(?P<name>\w+) must be a number, not {_VALUE}", "err.number"),
    (rf"(?P<name>\w+) must be text, not {_VALUE}", "err.text"),
    (r"drafts > 1 needs kl_budget = 0: .* \(got drafts=(?P<drafts>.+?), kl_budget=(?P<kl>.+?)\)", "err.drafts_kl"),
    (rf"(?P<name>\w+) must be a list of numbers, got {_VALUE}", "err.list"),
    (r"(?P<name>\w+) needs 2 to (?P<hi>\d+) tokens, got (?P<n>\d+)", "err.size"),
    (r"(?P<name>\w+) has a NaN or infinite weight", "err.nan"),
    (r"(?P<name>\w+) has a negative weight", "err.negative"),
    (r"(?P<name>\w+) has no mass: give at least one weight above 0", "err.no_mass"),
    (r"target has (?P<n>\d+) tokens but draft has (?P<m>\d+): give one weight per token to each", "err.pair"),
    (rf"(?:notation: )?unknown notation {_VALUE}; choose one of (?P<choices>.+)", "err.notation"),
    (rf"unknown preset {_VALUE}; choose one of (?P<choices>.+)", "err.preset"),
    (r"give both a draft and a target model, or a preset", "err.both_models"),
    (rf"the (?P<role>draft|target) model {_VALUE} is neither a model folder nor a hub id \(org/name\)", "err.model_missing"),
    (rf"the (?P<role>draft|target) model {_VALUE} is not a folder; a model folder holds config.json", "err.model_not_folder"),
    (rf"could not convert string to float: {_VALUE}", "err.not_float"),
    (r"Your earlier run had no event for (?P<minutes>\d+) minutes and was freed", "err.expired"),
    (r"Your earlier run was freed to make room for other visitors", "err.made_room"),
    (r"the prompt is (?P<n>[\d,]+) tokens for this pair; the limit is (?P<limit>[\d,]+) tokens \(SPECVIZ_MAX_PROMPT_TOKENS\)",
     "err.prompt_tokens"),
    (r"this event took longer than (?P<s>[\d.]+) s \(SPECVIZ_EVENT_TIMEOUT_S\) and was stopped; your run is as it was "
     r"before it: try a shorter prompt", "err.event_timeout"),
    (r"the server is reading other visitors' long prompts right now; try again in a few seconds, or use a shorter "
     r"prompt", "err.busy"),
    (r"other visitors' timed forwards held the machine for the (?P<s>[\d.]+) s this event may run "
     r"\(SPECVIZ_EVENT_TIMEOUT_S\), so it was not started; nothing changed: try again in a moment", "busy.clock"),
    (r"the server is running other visitors' long races right now; try again in a few seconds, or race fewer new "
     r"tokens \(max_new_tokens\) with a smaller gamma or fewer drafts", "busy.races"),
    (r"the race was stopped at the (?P<limit>[\d.]+) s an event may run \(SPECVIZ_EVENT_TIMEOUT_S\) before its lanes "
     r"started: it waited for other visitors' long prompts and races, then read its prompt; nothing was decoded: try "
     r"again in a few seconds, or race a shorter prompt", "race.not_started"),
    (r"a race of max_new_tokens (?P<n>\d+) with gamma (?P<gamma>\d+) and drafts (?P<drafts>\d+) is predicted to take "
     r"(?P<s>[\d.]+) s, more than this event has left of its (?P<limit>[\d.]+) s \(SPECVIZ_EVENT_TIMEOUT_S\); race "
     r"fewer new tokens, a smaller gamma or fewer drafts", "race.too_long"),
    (rf"showing step must be a whole number in 1\.\.(?P<hi>\d+), not {_VALUE}", "err.view_step"),
]
_COMPILED = [(re.compile(pattern, re.DOTALL), key) for pattern, key in FRAMES]
_PARSE = re.compile(r"(?P<name>\w+): (?P<detail>.+); write numbers separated by commas, e\.g\. 0\.5, 0\.3, 0\.2", re.DOTALL)


def localize(lang: str, message: str) -> str:
    """`message` (an exception's English) in `lang`: its frame translated, the blanks as they were."""
    if lang == "en" or not message:
        return message
    parse = _PARSE.fullmatch(message)
    if parse:  # "target: <a parse error>; write numbers ...": the inner error has a frame of its own
        return tr(lang, "err.parse", name=parse["name"], detail=localize(lang, parse["detail"]))
    for pattern, key in _COMPILED:
        match = pattern.fullmatch(message)
        if match:
            args = match.groupdict()
            if "role" in args:
                args["role"] = tr(lang, f"err.role.{args['role']}")
            return tr(lang, key, **args)
    return message
