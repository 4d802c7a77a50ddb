"""tools.bench's forward-only round: exactly the round's forwards, and the caches left as they started."""
from specviz.engine.cache import CachedModel
from specviz.tools.bench import forward_only_round_ms


def test_a_forward_only_round_is_gamma_draft_calls_and_one_verify(pair):
    gamma, rounds = 3, 5
    context = pair.encode("KING HENRY.") * 2
    draft, target = CachedModel(pair.draft, pair.vocab_size), CachedModel(pair.target, pair.vocab_size)
    ms = forward_only_round_ms(draft, target, context, gamma, rounds)
    assert ms > 0
    warm = 2  # two untimed rounds first
    assert draft.calls == 1 + (rounds + warm) * gamma  # the context once, then gamma 1-token calls a round
    assert target.calls == 1 + (rounds + warm)  # the context once, then one verify a round
    assert draft.seen == target.seen == len(context)  # both cropped back after every round
