"""Which decoder and which drafter a config asks for: one chain or several drafts at once, proposed by the
drafter `config.drafter` names (`drafters`: the draft model, prompt lookup, ...).

The one place that chooses (as transformers' `_get_candidate_generator` does for its generation modes), so
the decoders themselves build on one another one way only: `tree_decoder` extends `decoders`, and nothing in
`decoders` knows it.
"""
from __future__ import annotations

from ...core.config import DecodeConfig
from ..models.loading import ModelPair
from .decoders import DecoderState, SpeculativeDecoder
from .drafters import drafter_class
from .tree_decoder import TreeDecoder

__all__ = ["decoder_class", "drafter_class", "make_decoder"]


def decoder_class(config: DecodeConfig) -> type[SpeculativeDecoder]:
    """TreeDecoder for config.drafts > 1, else SpeculativeDecoder (after `drafter_class` has checked the drafter)."""
    if not isinstance(config, DecodeConfig):
        raise TypeError("config must be a DecodeConfig")
    drafter_class(config)
    return TreeDecoder if config.drafts > 1 else SpeculativeDecoder


def make_decoder(pair: ModelPair, prompt: str, config: DecodeConfig, *, resume: DecoderState | None = None,
                 static_cache: bool | None = None, follow: list[int] | None = None) -> SpeculativeDecoder:
    """The speculative decoder `config` asks for (`decoder_class`) with its drafter (`drafter_class`), prefilled on
    `prompt` or resumed from `resume`; `follow`: a text from the target its rounds follow (`SpeculativeDecoder`)."""
    return decoder_class(config)(pair, prompt, config, resume=resume, static_cache=static_cache,
                                 drafter=drafter_class(config), follow=follow)
