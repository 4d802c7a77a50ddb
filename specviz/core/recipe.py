"""A run's recipe as a link: every setting, the step shown and a digest of the tokens, compact and versioned.

A seeded run is reproducible, so a link needs no server-side state: it carries what to run (the settings by
name), how far (the step) and what it gave (a digest of every token up to that step), plus who produced it
(`Producer`: the versions and the device that computed it). The page that opens it replays the run and
compares digests, so another model version or another device's rounding is said, never shown as the same run.

Encoded as `v1.` + base64url(zlib(JSON)). Decoding only parses JSON of scalars, bounded before and after
decompression: nothing in a link is executed, unpickled or read from disk.
"""
from __future__ import annotations

import base64
import binascii
import datetime as _dt
import hashlib
import json
import zlib
from dataclasses import asdict, dataclass, fields
from importlib import metadata

RECIPE_VERSION = 1
PREFIX = f"v{RECIPE_VERSION}."
MAX_LINK_CHARS = 8_000        # the encoded recipe; a URL of ~8 KB still opens in every current browser
MAX_RECIPE_BYTES = 32_000     # the JSON after decompression: a zlib bomb stops here
DIGEST_CHARS = 16             # 64 bits of sha256: a changed token is caught, the link stays short


class RecipeError(ValueError):
    """A link that cannot be used: the message names what is wrong with it."""


@dataclass(frozen=True)
class Producer:
    """Who computed a run: the versions whose arithmetic decides its tokens, the device and dtype, and when."""
    specviz: str = "unknown"
    torch: str = "unknown"
    transformers: str = "unknown"
    device: str = "unknown"
    dtype: str = "unknown"
    date: str = "unknown"     # ISO date (UTC) of the recording

    def differences(self, other: Producer) -> list[str]:
        """'torch 2.13.0 here, 2.12.1 in the link'-style names of what differs (the date never counts)."""
        return [f"{f.name} {getattr(other, f.name)} here, {getattr(self, f.name)} in the recording"
                for f in fields(self) if f.name != "date" and getattr(self, f.name) != getattr(other, f.name)]

    @classmethod
    def from_dict(cls, data) -> Producer:
        if not isinstance(data, dict):
            raise RecipeError(f"the producer must be an object of versions, not {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RecipeError(f"the producer names fields this version does not know: {', '.join(map(str, unknown))}")
        if not all(isinstance(v, str) and len(v) <= 100 for v in data.values()):
            raise RecipeError("the producer's versions must be short texts")
        return cls(**data)


def package_version(name: str) -> str:
    """An installed distribution's version, read from its metadata (nothing is imported)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def specviz_version() -> str:
    """The installed specviz's version, else the source tree's pyproject.toml."""
    found = package_version("specviz")
    if found != "unknown":
        return found
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if pyproject.is_file():
        for line in pyproject.read_text(encoding="utf-8").splitlines():
            if line.startswith("version"):
                return line.split("=", 1)[1].strip().strip('"')
    return "unknown"


def producer_here(device: str, dtype: str, today: _dt.date | None = None) -> Producer:
    """This process as a producer, on `device` in `dtype` (e.g. "cpu", "float32")."""
    return Producer(specviz=specviz_version(), torch=package_version("torch"),
                    transformers=package_version("transformers"), device=device, dtype=dtype,
                    date=(today or _dt.datetime.now(_dt.timezone.utc).date()).isoformat())


def token_digest(traces, upto: int | None = None) -> str:
    """A short digest of every token the first `upto` steps produced (all when None): each step's emitted
    tokens with their kind, and the drafts it threw away, so a different verdict changes it too."""
    shown = traces if upto is None else traces[:upto]
    rounds = [[t.step, [[e.id, e.kind] for e in t.emitted], [e.id for e in t.rejected]] for t in shown]
    return hashlib.sha256(json.dumps(rounds, separators=(",", ":")).encode()).hexdigest()[:DIGEST_CHARS]


@dataclass(frozen=True)
class Recipe:
    """What a link holds: the settings by name, the step shown, the tokens' digest, the producer."""
    settings: dict
    step: int
    digest: str
    producer: Producer
    version: int = RECIPE_VERSION


def encode_recipe(recipe: Recipe) -> str:
    """`v1.` + base64url(zlib(JSON)) without padding: safe in a URL's fragment or query as it is."""
    data = {"v": recipe.version, "settings": recipe.settings, "step": recipe.step, "digest": recipe.digest,
            "producer": asdict(recipe.producer)}
    packed = zlib.compress(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode(), 9)
    text = PREFIX + base64.urlsafe_b64encode(packed).decode().rstrip("=")
    if len(text) > MAX_LINK_CHARS:
        raise RecipeError(f"this run's recipe is {len(text)} characters, over a link's {MAX_LINK_CHARS}: "
                          "shorten the prompt")
    return text


def _inflate(body: str) -> bytes:
    try:
        packed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raise RecipeError("the link's recipe is not base64url text: it was cut or changed") from None
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(packed, MAX_RECIPE_BYTES + 1)
    except zlib.error:
        raise RecipeError("the link's recipe does not decompress: it was cut or changed") from None
    if len(raw) > MAX_RECIPE_BYTES or inflater.unconsumed_tail:
        raise RecipeError(f"the link's recipe unpacks to more than {MAX_RECIPE_BYTES} bytes")
    if not inflater.eof:
        raise RecipeError("the link's recipe ends early: it was cut (copy the whole link)")
    return raw


def decode_recipe(text, setting_names) -> Recipe:
    """The recipe in `text` (a whole link or its recipe part); RecipeError naming what is wrong. Its settings
    must be exactly `setting_names`, each a JSON scalar (the caller validates their values by name)."""
    if not isinstance(text, str) or not text.strip():
        raise RecipeError("the link holds no recipe")
    text = text.strip()
    for mark in ("#run=", "?run=", "&run="):
        text = text.split(mark, 1)[1] if mark in text else text
    if len(text) > MAX_LINK_CHARS:
        raise RecipeError(f"the link's recipe is {len(text)} characters, over the {MAX_LINK_CHARS} a link may hold")
    version, dot, body = text.partition(".")
    if not dot or not version.startswith("v") or not version[1:].isdigit():
        raise RecipeError("the link's recipe has no version mark (v1.…): it was cut or is not a specviz link")
    if int(version[1:]) != RECIPE_VERSION:
        raise RecipeError(f"the link's recipe is format {version}, this specviz reads v{RECIPE_VERSION}: open it "
                          "with the version that made it")
    try:
        data = json.loads(_inflate(body))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise RecipeError("the link's recipe is not valid JSON: it was changed") from None
    return _recipe_from(data, tuple(setting_names))


def _recipe_from(data, names: tuple) -> Recipe:
    if not isinstance(data, dict) or set(data) != {"v", "settings", "step", "digest", "producer"}:
        raise RecipeError("the link's recipe lacks a field or has one too many: it was changed")
    if data["v"] != RECIPE_VERSION:
        raise RecipeError(f"the link's recipe says format {data['v']!r} inside, v{RECIPE_VERSION} outside: it was changed")
    settings = data["settings"]
    if not isinstance(settings, dict):
        raise RecipeError("the link's settings must be an object of settings by name")
    missing, extra = sorted(set(names) - set(settings)), sorted(set(settings) - set(names))
    if missing or extra:
        said = [f"lacks {', '.join(missing)}" if missing else "", f"has unknown {', '.join(extra)}" if extra else ""]
        raise RecipeError(f"the link's settings {' and '.join(s for s in said if s)}: it was made by another version")
    bad = [k for k, v in settings.items() if not (v is None or isinstance(v, (str, int, float, bool)))]
    if bad:
        raise RecipeError(f"the link's setting {bad[0]} must be a number or text")
    step, digest = data["step"], data["digest"]
    if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= 100_000:
        raise RecipeError(f"the link's step must be a whole number >= 1, not {step!r}")
    if not (isinstance(digest, str) and len(digest) == DIGEST_CHARS and all(c in "0123456789abcdef" for c in digest)):
        raise RecipeError(f"the link's digest must be {DIGEST_CHARS} hex digits: it was changed")
    return Recipe(settings=dict(settings), step=step, digest=digest, producer=Producer.from_dict(data["producer"]))
