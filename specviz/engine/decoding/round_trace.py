"""What the page, the trace and the counters need from a speculative round, gathered on the device and read once.

`round_tensors` lays out, as tensors on the round's device, everything a `StepTrace` shows: the verdicts, u,
p(x) and q(x), the divergences at each drafted position, the top-k bars of both distributions and of the
correction, and the rows' validity stats. `sampling.pack` flattens them into one tensor, so the round crosses to
the host once; `step_trace` builds the trace from that read on the host (token texts, ordering, dedup).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ...core import sampling
from ...core.trace import Candidate, Correction, PositionTrace

NO_TOKEN = sampling.NO_TOKEN


@dataclass(frozen=True)
class RoundResult:
    """A round's outcome on the host, as the counters and the token list need it."""
    gamma: int                  # drafts proposed
    n_accepted: int
    tokens: list[int]           # the accepted drafts, then the resampled or bonus token

    @property
    def n_examined(self) -> int:
        """Drafts the target tested: up to and including the first rejection."""
        return min(self.n_accepted + 1, self.gamma)

    @property
    def bonus(self) -> bool:
        return self.n_accepted == self.gamma


def check_tensors(target_probs: torch.Tensor, draft_probs: torch.Tensor, drafted_q: torch.Tensor) -> dict:
    """The rows' validity stats (smallest entry, smallest and largest row sum) and the smallest q(x), left on the
    device: `check_read` refuses NaN, negative or unnormalised rows and a token q could not have drawn."""
    smallest_q = drafted_q.min().double().reshape(1) if drafted_q.numel() else drafted_q.new_ones(1, dtype=torch.float64)
    return {"target_stats": sampling._prob_stats(target_probs), "draft_stats": sampling._prob_stats(draft_probs)
            if draft_probs.numel() else target_probs.new_tensor([0.0, 1.0, 1.0], dtype=torch.float64),
            "smallest_q": smallest_q}


def check_read(read: dict) -> None:
    """ValueError (the messages `sampling.verify` gives) for what `check_tensors` found."""
    sampling._check_stats("target_probs", *read["target_stats"])
    sampling._check_stats("draft_probs", *read["draft_stats"])
    if not read["smallest_q"][0] > 0:
        raise ValueError("a draft token has zero draft probability: it cannot have been sampled from draft_probs")


def _top_candidates(rows: torch.Tensor, must: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """rows [P, R, V], must [P]: candidate ids [P, 2k+1] (the first two rows' top-k, then `must`) and every row's
    values there [P, R, 2k+1]."""
    best = rows[:, :2].topk(k, dim=-1).indices.flatten(1)                   # [P, 2k]
    ids = torch.cat([best, must.long()[:, None]], 1)                         # [P, 2k+1]
    return ids, rows.gather(-1, ids[:, None, :].expand(-1, rows.shape[1], -1))  # [P, R, 2k+1]


def round_tensors(target_probs: torch.Tensor, draft_probs: torch.Tensor, tokens: torch.Tensor,
                  rnd: sampling.Round, top_k: int) -> dict[str, torch.Tensor]:
    """Everything `step_trace` shows of a round, on the device. target_probs [gamma+1, V], draft_probs [gamma, V],
    tokens [gamma], `rnd` the round's `sampling.verify_round`."""
    gamma, vocab = draft_probs.shape
    k = min(top_k, vocab)
    target = target_probs[:gamma]                                            # [gamma, V]
    kl_spent = rnd.drafted_kl.to(target.dtype) if rnd.drafted_kl is not None else target.new_zeros(gamma)
    stats = torch.stack([rnd.drafted_draft_probs.to(target.dtype), rnd.drafted_target_probs.to(target.dtype),
                         sampling.accept_probability(target, draft_probs, tokens).to(target.dtype),
                         sampling.tv_distance(target, draft_probs), sampling.kl_divergence(target, draft_probs),
                         sampling.acceptance_rate(target, draft_probs), kl_spent,
                         sampling.entropy(target), sampling.entropy(draft_probs)])  # [9, gamma]
    ids, values = _top_candidates(torch.stack([target, draft_probs], 1), tokens, k)  # [gamma, 2k+1], [gamma, 2, 2k+1]
    # 3. correct, as shown: the law the last token came from beside p, q and the exact residual at its position
    n = rnd.n_accepted.reshape(1)
    target_row = target_probs.index_select(0, n)[0]                                          # [V]
    draft_row = torch.cat([draft_probs.to(target_row.dtype), target_row.new_zeros(1, vocab)]).index_select(0, n)[0]
    residual = sampling.residual_distribution(target_row, draft_row)                         # [V]
    correction_rows = torch.stack([rnd.final_probs.to(target_row.dtype), target_row, draft_row, residual])[None]
    correction_ids, correction_values = _top_candidates(correction_rows, rnd.last.reshape(1), k)
    return {"stats": stats, "uniforms": rnd.uniforms, "accept": rnd.accept_probs, "ids": ids, "values": values,
            "correction_ids": correction_ids[0], "correction_values": correction_values[0]}


def _union(ids: list[int], values: list[list[float]], k: int) -> tuple[list[int], list[list[float]], list[float]]:
    """One position's candidates: the first two rows' top-k of positive mass (row r's slots r*k .. r*k+k-1) and the
    last id, once each, ordered by the first row (largest first); each row's values there; each row's mass outside."""
    keep: dict[int, int] = {}
    for slot, x in enumerate(ids):
        if slot == len(ids) - 1 or values[slot // k][slot] > 0:  # the must token always; a top-k id with mass
            keep.setdefault(x, slot)
    order = sorted(keep.items(), key=lambda item: -values[0][item[1]])
    chosen = [x for x, _ in order]
    rows = [[row[slot] for _, slot in order] for row in values]
    return chosen, rows, [max(0.0, 1.0 - sum(row)) for row in rows]


def positions(read: dict, n_accepted: int, gamma: int, k: int, text: Callable[[int], str]) -> list[PositionTrace]:
    """The drafted positions as the card shows them; after the first rejection a position was never examined (its
    accept chance is still shown)."""
    names = ("draft_prob", "target_prob", "exact_accept_prob", "tv", "kl", "overlap", "kl_spent", "target_entropy",
             "draft_entropy")
    stats, drafts, out = dict(zip(names, read["stats"])), read["drafts"], []
    examined = min(n_accepted + 1, gamma)
    for i in range(gamma):
        ids, (target_values, draft_values), (target_other, draft_other) = _union(read["ids"][i], read["values"][i], k)
        out.append(PositionTrace(
            index=i, draft_token=drafts[i], draft_text=text(drafts[i]), accept_prob=read["accept"][i],
            uniform=read["uniforms"][i] if i < examined else None,
            verdict="accepted" if i < n_accepted else "rejected" if i == n_accepted else "unexamined",
            candidates=[Candidate(id=x, text=text(x), target_prob=a, draft_prob=b)
                        for x, a, b in zip(ids, target_values, draft_values)],
            target_other=target_other, draft_other=draft_other, **{name: v[i] for name, v in stats.items()}))
    return out


def correction(read: dict, result: RoundResult, k: int, text: Callable[[int], str]) -> Correction:
    """3. correct, as shown: the token added after the accepted drafts and the law it came from."""
    last = result.tokens[-1]
    ids, (final, target, draft, residual), (final_other, *_) = _union(read["correction_ids"],
                                                                      read["correction_values"], k)
    return Correction(kind="bonus" if result.bonus else "resampled", position=result.n_accepted, token=last,
                      text=text(last), final_other=final_other, residual_probs=residual,
                      candidates=[Candidate(id=x, text=text(x), target_prob=a, draft_prob=b, final_prob=f)
                                  for x, f, a, b in zip(ids, final, target, draft)])
