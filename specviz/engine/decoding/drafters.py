"""The drafters' registry: each drafter by the name a DecodeConfig, the command line and the page use.

A new drafter is a class with the `drafting.Drafter` interface and one `register(name, cls)` line; the
decoders, the factory, the compared run, the race, the trace and the card need no change (the card shows
a drafter it has no view for in a plain form; `present/draft_sources.py` holds the views by name).
"""
from __future__ import annotations

from ...core.config import DecodeConfig
from .drafter_names import DEFAULT_DRAFTER, DRAFTER_NAMES, HYBRID_DRAFTER, LOOKUP_DRAFTER, MODEL_DRAFTER
from .drafting import Drafter
from .hybrid_draft import HybridDraft
from .lookup_draft import PromptLookup
from .model_draft import ModelDraft

__all__ = ["DEFAULT_DRAFTER", "DRAFTERS", "HybridDraft", "ModelDraft", "PromptLookup", "check_drafter", "drafter_class",
           "register"]

DRAFTERS: dict[str, type[Drafter]] = {}


def register(name: str, drafter: type) -> type:
    """Offer `drafter` under `name` (its `kind` in traces); returns the class."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"a drafter's name must be a plain word, not {name!r}")
    drafter.kind = name
    DRAFTERS[name] = drafter
    return drafter


register(MODEL_DRAFTER, ModelDraft)     # the pair's draft model (plain, or reading the target's features)
register(LOOKUP_DRAFTER, PromptLookup)  # prompt lookup: copies what followed an earlier n-gram (core.lookup)
register(HYBRID_DRAFTER, HybridDraft)   # per round: the lookup where the context has a match, the draft model elsewhere
if tuple(DRAFTERS) != DRAFTER_NAMES:  # the command line offers DRAFTER_NAMES without importing this registry
    raise ImportError(f"the registry's drafters {tuple(DRAFTERS)} are not drafter_names' {DRAFTER_NAMES}")


def drafter_class(config: DecodeConfig) -> type[Drafter]:
    """The drafter `config.drafter` names; ValueError naming the setting for a name not registered or a drafter
    that cannot honour the config (several drafts, mentored decoding)."""
    drafter = DRAFTERS.get(config.drafter) if isinstance(config.drafter, str) else None
    if drafter is None:
        raise ValueError(f"drafter must be one of {', '.join(DRAFTERS)}, not {config.drafter!r}")
    if (config.drafts > 1 and not drafter.several_drafts) or (config.kl_budget > 0 and not drafter.mentored):
        # one proposal per round, verified by the exact rule: that is what is proven for such a drafter
        raise ValueError(f"drafter {config.drafter} needs drafts = 1 and kl_budget = 0 (got drafts={config.drafts!r}, "
                         f"kl_budget={config.kl_budget!r})")
    return drafter


def check_drafter(config: DecodeConfig) -> DecodeConfig:
    """`config` once its drafter is known to honour it (`drafter_class`'s messages); for settings checked before
    any model loads."""
    drafter_class(config)
    return config
