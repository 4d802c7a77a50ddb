"""engine.caches.cache: cropping after a rejection leaves exactly the accepted prefix's keys and values."""
import torch

from specviz.engine.caches.cache import CachedModel


def test_crop_to_keeps_the_prefix_and_the_next_logits_match_a_fresh_pass(pair):
    ids = pair.encode("ROMEO.\nBut soft, what light through yonder window")  # a dozen tokens
    cached = CachedModel(pair.target, pair.vocab_size)
    cached.forward(ids)                      # the whole sequence, as if drafts were verified
    cached.crop_to(5)                        # a rejection: keep the first 5 positions
    assert cached.seen == 5 and cached.cache.get_seq_length() == 5
    after_crop = cached.forward(ids[5:6])[-1]
    fresh = CachedModel(pair.target, pair.vocab_size)
    fresh.forward(ids[:5])
    assert torch.allclose(after_crop, fresh.forward(ids[5:6])[-1], atol=1e-5)


def test_crop_to_the_current_length_changes_nothing(pair):
    cached = CachedModel(pair.target, pair.vocab_size)
    cached.forward(pair.encode("KING.\nNow"))
    seen = cached.seen
    cached.crop_to(seen)
    assert cached.seen == cached.cache.get_seq_length() == seen
