"""Every deployment knob (`SPECVIZ_*` and the platform's own variables), read from the environment here only.

The rest of the package asks `current()` and never reads `os.environ` itself, so the list of variables in
docs/deployment-and-security.md is this file. A bad value is a ValueError naming the variable and what it takes.
"""
from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "")


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


def _graphs(environ) -> bool | str | None:
    """SPECVIZ_CUDA_GRAPHS: a flag, or "forwards" (each forward recorded, the round's decision eager: the graphs of
    before the round's regions, for comparing them)."""
    if environ.get("SPECVIZ_CUDA_GRAPHS", "").strip().lower() == "forwards":
        return "forwards"
    try:
        return _flag(environ, "SPECVIZ_CUDA_GRAPHS")
    except ValueError:
        raise ValueError(f"SPECVIZ_CUDA_GRAPHS must be 1, 0 or forwards (true/false), not "
                         f"{environ['SPECVIZ_CUDA_GRAPHS'].strip().lower()!r}") from None


def _count(environ, name: str, default: str, low: int, high: int) -> int:
    text = environ.get(name, default)
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value.is_integer() and low <= value <= high):
        raise ValueError(f"{name} must be a whole number in {low}..{high:g}, not {text!r}")
    return int(value)


def _loopback(server_name: str) -> bool:
    """Is `server_name` (GRADIO_SERVER_NAME, gradio's default 127.0.0.1) reachable from this machine only?"""
    name = server_name.strip().lower().strip("[]")
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _names(environ, name: str) -> tuple[str, ...] | None:
    """A comma list (`a, b`) as a tuple of names; unset -> None."""
    text = environ.get(name)
    if text is None:
        return None
    names = tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))
    if not names:
        raise ValueError(f"{name} must be a comma-separated list of preset names, not {text!r}")
    return names


@dataclass(frozen=True)
class Deployment:
    """What this server offers and how much it holds. Field comments name the variable."""
    preset: str                       # SPECVIZ_PRESET: the page's default pair (default "shakespeare")
    allow_custom_models: bool         # SPECVIZ_ALLOW_CUSTOM_MODELS, else: not on a Space
    max_custom_params: int            # SPECVIZ_MAX_CUSTOM_PARAMS: per model of your own pair (default 4e9)
    max_pairs: int | None             # SPECVIZ_MAX_PAIRS: pairs kept loaded per device (None: loading.pairs_kept)
    warm_runs: int                    # SPECVIZ_WARM_RUNS: runs that keep their KV caches (default 32)
    concurrency: int                  # SPECVIZ_CONCURRENCY: model-bound events at once, all tabs (default 2)
    stateless_steps: bool             # SPACES_ZERO_GPU (set by ZeroGPU) or SPECVIZ_STATELESS_STEPS=1
    on_space: bool                    # SPACE_ID (set by Hugging Face Spaces)
    exposed: bool = False             # others can reach it: a Space, GRADIO_SERVER_NAME not loopback, GRADIO_SHARE
    offered_presets: tuple[str, ...] | None = None  # SPECVIZ_PRESETS; None: every preset (served locally only)
    allow_model_folders: bool = True  # SPECVIZ_ALLOW_MODEL_FOLDERS, else: not exposed (and own models allowed)
    load_timeout_s: int = 300         # SPECVIZ_LOAD_TIMEOUT_S: a load that takes longer is abandoned (default 300)
    session_capacity: int = 1000      # SPECVIZ_SESSION_CAPACITY: sessions gradio keeps (default 1000)
    cuda_graphs: bool = True          # SPECVIZ_CUDA_GRAPHS: static KV cache + CUDA graphs on a CUDA device (default 1)
    cuda_graph_regions: bool = True   # SPECVIZ_CUDA_GRAPHS not "forwards": a round's two regions recorded, not only
                                      # its forwards (decoding/round_regions.py)
    draft_bf16: bool = True           # SPECVIZ_DRAFT_BF16: a large draft in bfloat16 on a bf16-capable CPU (default 1)
    target_bf16: bool = True          # SPECVIZ_TARGET_BF16: a large target's linear layers in bfloat16, batch-invariant,
                                      # on a bf16-capable CPU (default 1)
    threads: int = 0                  # SPECVIZ_THREADS: torch's intra-op threads while serving (0: every core but one)
    cache: str = ""                   # SPECVIZ_CACHE: where derived model files go (default ~/.cache/specviz)
    quiet_wait_ms: int = 600          # SPECVIZ_QUIET_WAIT_MS: the most a timed CPU step waits for a quiet machine
                                      # (0: never; the default on a Space, where no visitor's browser is local)
    zero_gpu: bool = False            # SPACES_ZERO_GPU: on ZeroGPU (every offered pair loads at startup)
    max_prompt_tokens: int | None = None  # SPECVIZ_MAX_PROMPT_TOKENS: prompt tokens per run; None: each pair's measured default
    event_timeout_s: int = 60         # SPECVIZ_EVENT_TIMEOUT_S: a model-bound event stops after this long (default 60)
    warm_bytes: int | None = None     # SPECVIZ_WARM_BYTES: KV bytes all warm runs hold; None: memory.WARM_SHARE of the device's

    @classmethod
    def from_environ(cls, environ=None) -> Deployment:
        env = os.environ if environ is None else environ
        on_space = bool(env.get("SPACE_ID"))
        exposed = (on_space or not _loopback(env.get("GRADIO_SERVER_NAME", "127.0.0.1"))
                   or bool(_flag(env, "GRADIO_SHARE")))
        custom = _flag(env, "SPECVIZ_ALLOW_CUSTOM_MODELS")
        custom = (not exposed) if custom is None else custom
        folders = _flag(env, "SPECVIZ_ALLOW_MODEL_FOLDERS")
        preset = env.get("SPECVIZ_PRESET", "shakespeare")
        offered = _names(env, "SPECVIZ_PRESETS")
        if offered is None and exposed:
            offered = (preset,)
        elif offered is not None and preset not in offered:
            offered = (preset, *offered)  # the page's default pair is always offered
        zero_gpu = bool(_flag(env, "SPACES_ZERO_GPU"))
        # unset: the pairs kept follow the offer (loading.check_offer checks they fit at startup)
        max_pairs = _count(env, "SPECVIZ_MAX_PAIRS", "1", 1, 16) if env.get("SPECVIZ_MAX_PAIRS") is not None else None
        # on ZeroGPU every offered pair is loaded at startup and packed for the GPU worker: all must stay cached
        if zero_gpu and offered is not None and max_pairs is not None and max_pairs < len(offered):
            raise ValueError(f"SPECVIZ_MAX_PAIRS={max_pairs} is fewer than the {len(offered)} offered presets; on "
                             "ZeroGPU every offered pair stays loaded: raise it or offer fewer (SPECVIZ_PRESETS)")
        return cls(
            preset=preset,
            allow_custom_models=custom,
            max_custom_params=_count(env, "SPECVIZ_MAX_CUSTOM_PARAMS", "4e9", 1, 1e13),
            max_pairs=max_pairs,
            warm_runs=_count(env, "SPECVIZ_WARM_RUNS", "32", 1, 10_000),
            concurrency=_count(env, "SPECVIZ_CONCURRENCY", "2", 1, 64),
            stateless_steps=zero_gpu or bool(_flag(env, "SPECVIZ_STATELESS_STEPS")),
            on_space=on_space,
            exposed=exposed,
            offered_presets=offered,
            allow_model_folders=custom and ((not exposed) if folders is None else folders),
            load_timeout_s=_count(env, "SPECVIZ_LOAD_TIMEOUT_S", "300", 1, 86_400),
            session_capacity=_count(env, "SPECVIZ_SESSION_CAPACITY", "1000", 10, 1_000_000),
            cuda_graphs=_graphs(env) is not False,
            cuda_graph_regions=_graphs(env) is not False and _graphs(env) != "forwards",
            draft_bf16=_flag(env, "SPECVIZ_DRAFT_BF16") is not False,
            target_bf16=_flag(env, "SPECVIZ_TARGET_BF16") is not False,
            threads=_count(env, "SPECVIZ_THREADS", "0", 0, 1024),
            # the browser shares the machine only when served locally; a Space's /proc/stat counts its neighbours
            quiet_wait_ms=_count(env, "SPECVIZ_QUIET_WAIT_MS", "0" if on_space else "600", 0, 10_000),
            cache=env.get("SPECVIZ_CACHE", ""),
            zero_gpu=zero_gpu,
            max_prompt_tokens=(_count(env, "SPECVIZ_MAX_PROMPT_TOKENS", "0", 1, 1_000_000)
                               if env.get("SPECVIZ_MAX_PROMPT_TOKENS") is not None else None),
            event_timeout_s=_count(env, "SPECVIZ_EVENT_TIMEOUT_S", "60", 1, 86_400),
            warm_bytes=(_count(env, "SPECVIZ_WARM_BYTES", "0", 1 << 20, 1e15)
                        if env.get("SPECVIZ_WARM_BYTES") is not None else None),
        )


def current() -> Deployment:
    """The deployment as the environment says now (cheap; tests change the environment between calls)."""
    return Deployment.from_environ()
