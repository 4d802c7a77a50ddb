"""What a visitor may load: the presets a server offers, your own pair's checks, the prompt's token limit.

Model names are checked before anything is read (a hub id, or a folder where this deployment reads folders),
a folder's entries before transformers opens it, a config's size before any weight is downloaded; messages
name models without server paths (`shown`, `scrub_paths`).
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from .. import settings
from .presets import ASSETS, OWN_PAIR_PROMPT_TOKENS, PRESETS, ModelLoadError, Preset, default_preset, pair_ref


def prompt_token_limit(ref: Preset | None) -> int:
    """The most prompt tokens a run of pair `ref` takes: SPECVIZ_MAX_PROMPT_TOKENS, else the pair's own limit."""
    override = settings.current().max_prompt_tokens
    if override is not None:
        return override
    return (ref.max_prompt_tokens if ref is not None else 0) or OWN_PAIR_PROMPT_TOKENS


def offered_presets() -> list[str]:
    """The presets a visitor may load: SPECVIZ_PRESETS, by default only the default preset where
    others can reach the server (a Space, a non-loopback binding, a share link), every one locally."""
    offered = settings.current().offered_presets
    default_preset()
    if offered is None:
        return list(PRESETS)
    unknown = [name for name in offered if name not in PRESETS]
    if unknown:
        raise ModelLoadError(f"SPECVIZ_PRESETS names {unknown}, which are not presets; choose from {sorted(PRESETS)}")
    return list(offered)


def visitor_pair(name) -> Preset:
    """A preset a visitor asked for by name, if this deployment offers it (a message lists only those)."""
    offered = offered_presets()
    if name and not (isinstance(name, str) and name in PRESETS):
        raise ModelLoadError(f"unknown preset {name!r}; choose one of {offered}")
    ref = pair_ref(name if name else None)
    if ref.name not in offered:
        raise ModelLoadError(f"preset {name!r} is not offered here; choose one of {offered} (SPECVIZ_PRESETS)")
    return ref


def custom_models_allowed() -> bool:
    """Your own pair: allowed when only this machine can reach the server (loopback binding, not a
    Space, no share link); elsewhere only with SPECVIZ_ALLOW_CUSTOM_MODELS=1."""
    return settings.current().allow_custom_models


# ------------------------------------------------------------------ naming models safely

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?")
MAX_FOLDER_ENTRIES = 2_000


def shown(model_id: str) -> str:
    """A model's name for messages: a bundled folder as assets/models/NAME, another absolute path as …/NAME.
    From the string alone: whether a path exists never changes the message."""
    if not os.path.isabs(model_id):
        return model_id
    path = os.path.normpath(model_id)
    assets = str(ASSETS)
    if path == assets or path.startswith(assets + os.sep):
        return "assets/models" + path[len(assets):]
    return f"…/{os.path.basename(path)}"


def scrub_paths(text: str) -> str:
    """`text` with every absolute path cut to what `shown` gives (messages never echo server paths). A path starts
    the text or follows a space, a quote, a bracket, "=" or ","; a "/" inside a word or a tag (`</b>`, `1/2`,
    `a/b`, a URL's `//`) is no path, so a refused value such as '<b>x</b>' is echoed as it was sent."""
    return re.sub(r"(?:^|(?<=[\s'\"(\[=,]))/[^\s'\"(),]+", lambda m: shown(m.group(0)), text)


def is_folder_name(model_id: str) -> bool:
    """Does transformers read `model_id` from disk? Anything path-shaped, or an existing folder."""
    return (not HUB_ID.fullmatch(model_id) or ".." in model_id) or Path(model_id).is_dir()


def canonical(model_id: str) -> str:
    """One name per model: a folder by its real path (so ./x, x/ and a link to x share one copy), else the hub id."""
    return os.path.realpath(model_id) if is_folder_name(model_id) and Path(model_id).is_dir() else model_id


def check_model_folder(model_id: str, role: str) -> None:
    """A model folder transformers may read: a directory holding config.json, whose entries are all regular
    files or folders inside it (no FIFOs, devices or sockets, which can block a reader forever; no links out)."""
    name = shown(model_id)
    try:
        root = Path(model_id).expanduser().resolve(strict=True)
    except (OSError, RuntimeError):
        raise ModelLoadError(f"the {role} model {name!r} is neither a model folder nor a hub id (org/name)") from None
    if not root.is_dir():
        raise ModelLoadError(f"the {role} model {name!r} is not a folder; a model folder holds config.json")
    seen = 0
    for folder, dirs, files in os.walk(root):
        for entry in [*dirs, *files]:
            seen += 1
            path = Path(folder) / entry
            inside = path.relative_to(root)
            if seen > MAX_FOLDER_ENTRIES:
                raise ModelLoadError(f"the {role} model folder {name!r} has more than {MAX_FOLDER_ENTRIES} entries")
            try:
                real = path.resolve(strict=True)
                mode = real.stat().st_mode
            except (OSError, RuntimeError):
                raise ModelLoadError(f"the {role} model folder {name!r} holds a broken link ({inside})") from None
            if real != root and root not in real.parents:
                raise ModelLoadError(f"the {role} model folder {name!r} links outside itself ({inside})")
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise ModelLoadError(f"the {role} model folder {name!r} holds {inside}, which is not a regular file")
    if not (root / "config.json").is_file():
        raise ModelLoadError(f"the {role} model folder {name!r} has no config.json")


PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")


def pickle_checkpoint(model_id: str) -> str | None:
    """The pickle checkpoint a model folder would be loaded from (no .safetensors beside it), or None."""
    folder = Path(model_id).expanduser()
    if not folder.is_dir() or any(folder.glob("*.safetensors")):
        return None
    return next((f.name for f in sorted(folder.iterdir()) if f.suffix in PICKLE_SUFFIXES), None)


def check_model_name(model_id: str, role: str) -> None:
    """Before anything is read: a folder only where this deployment reads folders, else a hub id."""
    if not isinstance(model_id, str) or not model_id.strip():
        raise ModelLoadError(f"the {role} model is empty: give a hub id (org/name) or a local folder")
    if is_folder_name(model_id):
        if not settings.current().allow_model_folders:
            raise ModelLoadError(f"this deployment loads your own models from the hub only (org/name), not from "
                                 f"its folders: the {role} model {shown(model_id)!r} is not a hub id (SPECVIZ_ALLOW_MODEL_FOLDERS)")
        check_model_folder(model_id, role)


def estimated_params(config) -> int:
    """Parameters a model's config implies, before any weight is read: counted on the meta device, or for
    an architecture transformers cannot build, an upper estimate (embeddings, twice when untied; per layer
    attention 4d^2 and a gated MLP 3dI, or 8d^2 without an intermediate size)."""
    from .shapes import config_parameter_count

    try:
        return config_parameter_count(config)
    except (ValueError, KeyError, TypeError, RuntimeError, AttributeError):
        pass
    config = config.get_text_config()
    width = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None) or 0
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None) or 0
    inner = getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None)
    mlp = 3 * width * inner if inner else 8 * width * width
    tied = getattr(config, "tie_word_embeddings", True)
    return int(width * getattr(config, "vocab_size", 0) * (1 if tied else 2) + layers * (4 * width * width + mlp))


HUB_PROBE_S = 3.0  # how long to wait for the hub before calling it unreachable


def _hub_reachable() -> bool:
    """Can a TCP connection to the hub open within HUB_PROBE_S? (huggingface_hub would retry for ~80 s.)"""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), HUB_PROBE_S).close()
        return True
    except OSError:
        return False


def hub_options(model_id: str, role: str) -> dict:
    """from_pretrained's options for `model_id`: a hub id the hub cannot be reached for is read from the
    local cache only, or fails at once (rather than after huggingface_hub's minute of retries)."""
    from huggingface_hub import constants, try_to_load_from_cache

    if is_folder_name(model_id) or constants.is_offline_mode() or _hub_reachable():
        return {}
    if isinstance(try_to_load_from_cache(model_id, "config.json"), str):
        return {"local_files_only": True}
    raise ModelLoadError(f"the hub ({constants.ENDPOINT}) cannot be reached from this server and the {role} model "
                         f"{model_id!r} is not in its local cache")


def read_config(model_id: str, role: str):
    """A model's config (config.json only: no weight is read or downloaded); ModelLoadError if it cannot be read."""
    from transformers import AutoConfig

    if is_folder_name(model_id) and not (Path(model_id).expanduser() / "config.json").is_file():
        raise ModelLoadError(f"the {role} model {shown(model_id)!r} is neither a folder holding config.json "
                             "nor a hub id (org/name)")
    options = hub_options(model_id, role)
    try:
        return AutoConfig.from_pretrained(canonical(model_id), trust_remote_code=False, **options)
    except (OSError, ValueError, KeyError) as err:
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        if is_folder_name(model_id):
            detail = type(err).__name__  # transformers' text names server paths
        raise ModelLoadError(f"could not read the {role} model's config {shown(model_id)!r}: {detail}") from None


def custom_pair(draft: str, target: str) -> Preset:
    """A user's own pair (hub ids or local folders), checked against the deployment's policy and size cap."""
    draft, target = (draft or "").strip(), (target or "").strip()
    if not (draft and target):
        raise ModelLoadError("give both a draft and a target model (hub ids or local folders), or clear both")
    if not custom_models_allowed():
        raise ModelLoadError("this deployment does not load your own models (set SPECVIZ_ALLOW_CUSTOM_MODELS=1 to allow)")
    for role, model_id in (("draft", draft), ("target", target)):
        check_model_name(model_id, role)
        params = estimated_params(read_config(model_id, role))
        cap = settings.current().max_custom_params
        if params > cap:
            raise ModelLoadError(f"the {role} model {shown(model_id)!r} has about {params / 1e9:.1f}B parameters; "
                                 f"this deployment's cap is {cap / 1e9:.1f}B (SPECVIZ_MAX_CUSTOM_PARAMS)")
    return pair_ref(draft=draft, target=target)
