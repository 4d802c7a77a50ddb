"""Which decoder a config asks for: one chain, several drafts at once, or drafts copied by prompt lookup.

The one place that chooses (as transformers' `_get_candidate_generator` does for its generation modes), so
the decoders themselves build on one another one way only: `tree_decoder` and `lookup_decoder` extend
`decoders`, and nothing in `decoders` knows them.
"""
from __future__ import annotations

from ...core.config import DecodeConfig
from ..models.loading import ModelPair
from .decoders import DecoderState, SpeculativeDecoder
from .lookup_decoder import LookupDecoder
from .tree_decoder import TreeDecoder

__all__ = ["decoder_class", "make_decoder"]


def decoder_class(config: DecodeConfig) -> type[SpeculativeDecoder]:
    """TreeDecoder for config.drafts > 1, LookupDecoder for config.drafter "lookup", else SpeculativeDecoder."""
    if not isinstance(config, DecodeConfig):
        raise TypeError("config must be a DecodeConfig")
    if config.drafts > 1:
        return TreeDecoder
    if config.drafter == "lookup":
        return LookupDecoder
    return SpeculativeDecoder


def make_decoder(pair: ModelPair, prompt: str, config: DecodeConfig, *, resume: DecoderState | None = None,
                 static_cache: bool | None = None) -> SpeculativeDecoder:
    """The speculative decoder `config` asks for (`decoder_class`), prefilled on `prompt` or resumed from `resume`."""
    return decoder_class(config)(pair, prompt, config, resume=resume, static_cache=static_cache)
