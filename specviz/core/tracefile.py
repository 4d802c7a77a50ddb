"""A recorded run as a file: JSON Lines, a header line (format version, producer, settings, prompts, and the race
the tab ran, where it ran one) then one step trace a line, as `StepTrace.to_dict` writes it. What `report` writes
(traces.jsonl), what the lessons in assets/lessons are, what the page exports, and what the page and `replay` open.

Also read, for files written before the header existed: traces.jsonl without a header, the page's exported
JSON (a list of steps) and `generate --json`'s output (an object with "steps"); those say "device and date not
recorded". Reading is bounded (bytes, steps) and only parses JSON into plain records: nothing is executed.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, is_dataclass

from .race_record import Race
from .recipe import Producer, RecipeError
from .trace import StepTrace

TRACE_FORMAT = 1
FORMAT_KEY = "specviz_trace"      # the header line's mark: {"specviz_trace": 1, ...}
MAX_FILE_BYTES = 20_000_000       # a report of many prompts; the page bounds uploads lower (public mode)
MAX_STEPS = 20_000


class TraceFileError(ValueError):
    """A trace file that cannot be opened: the message names what is wrong and where."""


@dataclass
class RecordedRun:
    """One run of a recording: which prompt and run it was (a report numbers each gamma's runs after the gammas' before
    it), the prompt, its steps."""
    prompt_index: int
    run_index: int
    prompt: str
    traces: list[StepTrace]


@dataclass
class Recording:
    """A trace file read back: who produced it (None: not recorded), its settings, its runs in file order."""
    producer: Producer | None
    settings: dict
    runs: list[RecordedRun]
    extra: dict = field(default_factory=dict)   # the header's other fields (a lesson's notes, the baseline's times)
    race: Race | None = None                    # the race recorded with the run (its own settings in race_settings)
    race_settings: dict = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return sum(len(r.traces) for r in self.runs)


def header(producer: Producer, settings: dict, prompts: list[str], **extra) -> dict:
    """The first line of a trace file."""
    return {FORMAT_KEY: TRACE_FORMAT, "producer": asdict(producer), "settings": settings, "prompts": prompts, **extra}


def race_entry(race: Race, settings: dict) -> dict:
    """A race for a header's "race": its lanes and how it was run, with the page settings it was run with."""
    return {**race.to_dict(), "settings": settings}


def header_line(producer: Producer, settings: dict, prompts: list[str], **extra) -> str:
    return json.dumps(header(producer, settings, prompts, **extra), ensure_ascii=False) + "\n"


def step_line(trace: StepTrace, prompt_index: int = 0, run_index: int = 0) -> str:
    return json.dumps({**trace.to_dict(), "prompt_index": prompt_index, "run_index": run_index}) + "\n"


def is_header(item) -> bool:
    return isinstance(item, dict) and FORMAT_KEY in item


def read_recording(data: bytes | str, *, max_bytes: int = MAX_FILE_BYTES, max_steps: int = MAX_STEPS,
                   name: str = "the trace file") -> Recording:
    """The recording in `data`; TraceFileError naming what is wrong (size, encoding, line, version, field)."""
    raw = data.encode() if isinstance(data, str) else data
    if not isinstance(raw, bytes):
        raise TraceFileError(f"{name} must be bytes or text")
    if len(raw) > max_bytes:
        raise TraceFileError(f"{name} is {len(raw):,} bytes, over the {max_bytes:,} bytes allowed here")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise TraceFileError(f"{name} is not UTF-8 text (byte {err.start})") from None
    items = _items(text, name)
    if not items:
        raise TraceFileError(f"{name} holds no steps")
    head = items[0] if is_header(items[0]) else None
    steps = items[1:] if head is not None else items
    if not steps:
        raise TraceFileError(f"{name} holds no steps")
    if len(steps) > max_steps:
        raise TraceFileError(f"{name} has {len(steps):,} steps, over the {max_steps:,} allowed here")
    producer, settings, prompts, extra = _header_fields(head, name)
    race, race_settings = _race(extra.pop("race", None), name)
    return Recording(producer=producer, settings=settings, runs=_runs(steps, prompts, name), extra=extra, race=race,
                     race_settings=race_settings)


def _race(data, name: str) -> tuple[Race | None, dict]:
    """The header's race (None where the file has none) and the page settings it was run with."""
    if data is None:
        return None, {}
    try:
        if not isinstance(data, dict):
            raise ValueError(f"race must be an object, not {type(data).__name__}")
        data = dict(data)
        settings = data.pop("settings", {})
        if not isinstance(settings, dict) or len(settings) > 50 or not all(
                isinstance(v, (str, int, float, bool, type(None))) and (not isinstance(v, str) or len(v) <= 20_000)
                for v in settings.values()):
            raise ValueError("race.settings must be an object of at most 50 plain values")
        return Race.from_dict(data), settings
    except ValueError as err:
        raise TraceFileError(f"{name}'s header: {err}") from None


def _load(text: str, where: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise TraceFileError(f"{where} is not JSON ({err.msg} at column {err.colno}): the file was cut or changed") from None
    except RecursionError:
        raise TraceFileError(f"{where} nests JSON too deeply") from None


def _items(text: str, name: str) -> list:
    """Every object of the file: a JSON array, `generate --json`'s object, or JSON Lines."""
    start = text.lstrip()[:1]
    if start == "[":
        items = _load(text, name)
    elif start == "{" and "\n" not in text.strip():
        whole = _load(text, name)
        items = whole.get("steps") if isinstance(whole, dict) and "steps" in whole else [whole]
    else:
        items = [_load(line, f"line {n} of {name}") for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
        raise TraceFileError(f"{name} must hold step traces (JSON objects), one a line")
    return items


def _header_fields(head: dict | None, name: str):
    if head is None:
        return None, {}, [], {}
    if head[FORMAT_KEY] != TRACE_FORMAT:
        raise TraceFileError(f"{name} is trace format {head[FORMAT_KEY]!r}; this specviz reads format {TRACE_FORMAT}: "
                             "open it with the version that wrote it")
    try:
        producer = Producer.from_dict(head.get("producer", {}))
    except RecipeError as err:
        raise TraceFileError(f"{name}'s header: {err}") from None
    settings, prompts = head.get("settings", {}), head.get("prompts", [])
    if not isinstance(settings, dict) or not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
        raise TraceFileError(f"{name}'s header must give settings as an object and prompts as a list of texts")
    extra = {k: v for k, v in head.items() if k not in (FORMAT_KEY, "producer", "settings", "prompts")}
    return producer, settings, prompts, extra


def _runs(steps: list[dict], prompts: list[str], name: str) -> list[RecordedRun]:
    runs: dict[tuple, RecordedRun] = {}
    for n, item in enumerate(steps, 1):
        item = dict(item)
        key = (item.pop("prompt_index", 0), item.pop("run_index", 0))
        if not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in key):
            raise TraceFileError(f"step {n} of {name}: prompt_index and run_index must be whole numbers >= 0")
        try:
            trace = StepTrace.from_dict(item)
            check_types(trace)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise TraceFileError(f"step {n} of {name} is not a step trace ({type(err).__name__}: {err})") from None
        if key not in runs:
            prompt = prompts[key[0]] if key[0] < len(prompts) else ""
            runs[key] = RecordedRun(prompt_index=key[0], run_index=key[1], prompt=prompt, traces=[])
        runs[key].traces.append(trace)
    for run in runs.values():
        if [t.step for t in run.traces] != list(range(1, len(run.traces) + 1)):
            raise TraceFileError(f"{name}: run {run.run_index} of prompt {run.prompt_index} does not number its "
                                 "steps 1, 2, 3, … in order")
    return list(runs.values())


SCALARS = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,)}


def check_types(record, where: str = "step") -> None:
    """TypeError naming the field unless every scalar field of `record` (and of the records inside it) has the
    type its annotation says: a number where a number is drawn, text where text is shown."""
    for f in fields(record):
        value, path = getattr(record, f.name), f"{where}.{f.name}"
        kinds = [k.strip() for k in str(f.type).split("|")]
        if value is None and "None" in kinds:
            continue
        scalar = [SCALARS[k] for k in kinds if k in SCALARS]
        if scalar and not (isinstance(value, tuple(t for group in scalar for t in group))
                           and (bool in scalar[0] or not isinstance(value, bool))):
            raise TypeError(f"{path} must be {' or '.join(kinds)}, not {type(value).__name__}")
        inner = [SCALARS[k[5:-1]] for k in kinds if k.startswith("list[") and k[5:-1] in SCALARS]
        if inner and not (isinstance(value, list) and all(isinstance(v, inner[0]) and not isinstance(v, bool)
                                                          for v in value)):
            raise TypeError(f"{path} must be a list of {kinds[0][5:-1]}")
        for item in (value if isinstance(value, list) else [value]):
            if is_dataclass(item):
                check_types(item, path)
