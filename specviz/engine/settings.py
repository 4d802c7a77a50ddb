"""Every deployment knob (`SPECVIZ_*` and the platform's own variables), read from the environment here only.

The rest of the package asks `current()` and never reads `os.environ` itself, so the README's list
of variables is this file. A bad value is a ValueError naming the variable and what it takes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass


def _flag(environ, name: str) -> bool | None:
    """1/true/yes -> True, 0/false/no/empty -> False, unset -> None."""
    value = environ.get(name)
    if value is None:
        return None
    value = value.strip().lower()
    if value in ("1", "true", "t", "yes"):
        return True
    if value in ("", "0", "false", "f", "no"):
        return False
    raise ValueError(f"{name} must be 1 or 0 (true/false), not {value!r}")


def _count(environ, name: str, default: str, low: int, high: int) -> int:
    text = environ.get(name, default)
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value.is_integer() and low <= value <= high):
        raise ValueError(f"{name} must be a whole number in {low}..{high:g}, not {text!r}")
    return int(value)


@dataclass(frozen=True)
class Deployment:
    """What this server offers and how much it holds. Field comments name the variable."""
    preset: str                       # SPECVIZ_PRESET: the page's default pair (default "shakespeare")
    allow_custom_models: bool         # SPECVIZ_ALLOW_CUSTOM_MODELS, else: not on a Space
    max_custom_params: int            # SPECVIZ_MAX_CUSTOM_PARAMS: per model of your own pair (default 4e9)
    max_pairs: int                    # SPECVIZ_MAX_PAIRS: pairs kept loaded per device (default 1)
    warm_runs: int                    # SPECVIZ_WARM_RUNS: runs that keep their KV caches (default 32)
    concurrency: int                  # SPECVIZ_CONCURRENCY: model-bound events at once, all tabs (default 2)
    stateless_steps: bool             # SPACES_ZERO_GPU (set by ZeroGPU) or SPECVIZ_STATELESS_STEPS=1
    on_space: bool                    # SPACE_ID (set by Hugging Face Spaces)

    @classmethod
    def from_environ(cls, environ=None) -> "Deployment":
        env = os.environ if environ is None else environ
        on_space = bool(env.get("SPACE_ID"))
        custom = _flag(env, "SPECVIZ_ALLOW_CUSTOM_MODELS")
        return cls(
            preset=env.get("SPECVIZ_PRESET", "shakespeare"),
            allow_custom_models=(not on_space) if custom is None else custom,
            max_custom_params=_count(env, "SPECVIZ_MAX_CUSTOM_PARAMS", "4e9", 1, 1e13),
            max_pairs=_count(env, "SPECVIZ_MAX_PAIRS", "1", 1, 16),
            warm_runs=_count(env, "SPECVIZ_WARM_RUNS", "32", 1, 10_000),
            concurrency=_count(env, "SPECVIZ_CONCURRENCY", "2", 1, 64),
            stateless_steps=bool(_flag(env, "SPACES_ZERO_GPU") or _flag(env, "SPECVIZ_STATELESS_STEPS")),
            on_space=on_space,
        )


def current() -> Deployment:
    """The deployment as the environment says now (cheap; tests change the environment between calls)."""
    return Deployment.from_environ()
