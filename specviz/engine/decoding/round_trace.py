"""What the page, the trace and the counters need from a speculative round, gathered on the device and read once.

`round_tensors` lays out, as tensors on the round's device, everything a `StepTrace` shows: the verdicts, u,
p(x) and q(x), the divergences at each drafted position, the top-k bars of both distributions and of the
correction, and the rows' validity stats. `sampling.pack` flattens them into one tensor, so the round crosses to
the host once; `step_trace` builds the trace from that read on the host (token texts, ordering, dedup).
"""
from __future__ import annotations

import math
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


def check_tensors(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> dict:
    """Every row's smallest entry and sum, target's rows then the draft's, left on the device: `check_read`
    refuses NaN, negative or unnormalised rows (and, with the round's q(x), a token q could not have drawn)."""
    rows = torch.cat([target_probs, draft_probs])                            # [2 gamma + 1, V]
    return {"row_min": rows.amin(-1), "row_sum": rows.sum(-1)}


def _stats(smallest: list[float], sums: list[float]) -> tuple[float, float, float]:
    """(smallest entry, smallest row sum, largest row sum) of some rows; NaN when any of them is not finite."""
    if not all(map(math.isfinite, smallest + sums)):
        return math.nan, math.nan, math.nan
    return min(smallest), min(sums), max(sums)


def check_read(read: dict) -> None:
    """ValueError (the messages `sampling.verify` gives) for what `check_tensors` found: `read` holds its row_min and
    row_sum, the round's drafted q(x) as "q_x"."""
    gamma = len(read["q_x"])
    sampling._check_stats("target_probs", *_stats(read["row_min"][: gamma + 1], read["row_sum"][: gamma + 1]))
    if not gamma:  # nothing was proposed: the round was one target pass
        return
    sampling._check_stats("draft_probs", *_stats(read["row_min"][gamma + 1:], read["row_sum"][gamma + 1:]))
    if not min(read["q_x"]) > 0:
        raise ValueError("a draft token has zero draft probability: it cannot have been sampled from draft_probs")


def round_tensors(target_probs: torch.Tensor, draft_probs: torch.Tensor, rnd: sampling.Round, top_k: int,
                  drafts_then: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Everything `positions` and `correction` show of a round, on the device, in about twenty operations; the host
    derives the rest (KL and entropies from the sums of p ln p, p ln q and q ln q, TV from the overlap, min(1, p/q)
    from p(x) and q(x)). target_probs [gamma+1, V], draft_probs [gamma, V], `rnd` the round's
    `sampling.verify_round`; `drafts_then` [gamma+1]: the drafts and any id after them (computed here if not given).

    The bars: at every position j (the gamma drafted ones and the bonus position) the rows p_j, q_j (zeros at the
    bonus position) and the correction's law there (the residual, the plan's law or p's next row, normalised),
    plus, in mentored decoding, the exact residual; the top-k ids of each row, then x_j and the last token, with
    every row's values there. A drafted position shows its slots of p and q and x_j; the correction shows row n's
    slots of its law and p, and the last token."""
    gamma, vocab = draft_probs.shape
    drafted = target_probs[:gamma]                                                        # [gamma, V]
    logs = torch.xlogy(torch.stack([drafted, drafted, draft_probs]),
                       torch.stack([drafted, draft_probs, draft_probs])).sum(-1)          # [3, gamma]
    rows = [target_probs, torch.cat([draft_probs, draft_probs.new_zeros(1, vocab)]),
            rnd.candidates / rnd.candidates.sum(-1, keepdim=True)]                         # 3 x [gamma+1, V]
    if rnd.drafted_kl is not None:  # mentored: the exact residual beside the plan's law
        rows.append(sampling.residual_distribution(rows[0], rows[1]))
    if drafts_then is None:
        drafts_then = torch.cat([rnd.draft_tokens, rnd.last.reshape(1)])
    must = torch.stack([drafts_then, rnd.last.expand(gamma + 1)], 1)                    # [gamma+1, 2]: x_j, last
    stacked = torch.stack(rows, 1)                                                      # [gamma+1, R, V]
    ids = torch.cat([stacked.topk(min(top_k, vocab), -1).indices.flatten(1), must], 1)  # [gamma+1, R k + 2]
    shown = {"logs": logs, "overlap": torch.minimum(drafted, draft_probs).sum(-1), "ids": ids,
             "values": stacked.gather(-1, ids.unsqueeze(1).expand(-1, len(rows), -1)),  # [gamma+1, R, R k + 2]
             "uniforms": rnd.uniforms[:gamma], "accept": rnd.accept_probs, "p_x": rnd.drafted_target_probs}
    if rnd.drafted_kl is not None:
        shown["kl_spent"] = rnd.drafted_kl
    return shown


def _union(ids: list[int], values: list[list[float]], slots: list[tuple[int, int]]) -> tuple[list[int], list[list[float]],
                                                                               list[float]]:
    """One figure's candidates: the ids at `slots` ((slot, row whose top-k it came from); a row of -1 always
    stays: the must tokens) that have mass in their row, once each, ordered by values[0] (largest first); each
    row's values there; each row's mass outside."""
    keep: dict[int, int] = {}
    for slot, row in slots:
        if row < 0 or values[row][slot] > 0:
            keep.setdefault(ids[slot], slot)
    order = sorted(keep.items(), key=lambda item: -values[0][item[1]])
    chosen = [x for x, _ in order]
    rows = [[row[slot] for _, slot in order] for row in values]
    return chosen, rows, [max(0.0, 1.0 - sum(row)) for row in rows]


def _slots(sources: tuple[tuple[int, int], ...], k: int, must: int) -> list[tuple[int, int]]:
    """(slot, row to check) for the top-k ids of each (bar row, shown row) in `sources` (bar row r's ids sit in slots
    r*k .. r*k+k-1, each kept where shown row has mass), then must token `must` (0: x_j, 1: the last token)."""
    return [(r * k + i, shown) for r, shown in sources for i in range(k)] + [(must - 2, -1)]


def positions(read: dict, n_accepted: int, gamma: int, k: int, text: Callable[[int], str]) -> list[PositionTrace]:
    """The drafted positions as the card shows them; after the first rejection a position was never examined (its
    accept chance is still shown)."""
    drafts, out = read["drafts"], []
    sum_p_log_p, sum_p_log_q, sum_q_log_q = read["logs"]
    kl_spent = read.get("kl_spent") or [0.0] * gamma
    examined = min(n_accepted + 1, gamma)
    for i in range(gamma):
        ids = read["ids"][i]
        chosen, (target_values, draft_values), (target_other, draft_other) = _union(
            ids, read["values"][i][:2], _slots(((0, 0), (1, 1)), k, 0))
        p_x, q_x = read["p_x"][i], read["q_x"][i]
        out.append(PositionTrace(
            index=i, draft_token=drafts[i], draft_text=text(drafts[i]), accept_prob=read["accept"][i],
            exact_accept_prob=min(1.0, p_x / q_x) if q_x > 0 else 0.0, draft_prob=q_x, target_prob=p_x,
            uniform=read["uniforms"][i] if i < examined else None,
            verdict="accepted" if i < n_accepted else "rejected" if i == n_accepted else "unexamined",
            candidates=[Candidate(id=x, text=text(x), target_prob=a, draft_prob=b)
                        for x, a, b in zip(chosen, target_values, draft_values)],
            target_other=target_other, draft_other=draft_other, tv=1.0 - read["overlap"][i],
            kl=sum_p_log_p[i] - sum_p_log_q[i], overlap=read["overlap"][i], kl_spent=kl_spent[i],
            target_entropy=-sum_p_log_p[i], draft_entropy=-sum_q_log_q[i]))
    return out


def correction(read: dict, result: RoundResult, k: int, text: Callable[[int], str]) -> Correction:
    """3. correct, as shown: the token added after the accepted drafts and the law it came from (row n of the bars:
    its law, p, q and the exact residual, which is its law unless mentored decoding chose another)."""
    last, values = result.tokens[-1], read["values"][result.n_accepted]
    law, target, draft = values[2], values[0], values[1]
    residual = values[3] if len(values) > 3 else law
    ids, (final, target, draft, residual), (final_other, *_) = _union(read["ids"][result.n_accepted],
                                                                      [law, target, draft, residual],
                                                                      _slots(((2, 0), (0, 1)), k, 1))
    return Correction(kind="bonus" if result.bonus else "resampled", position=result.n_accepted, token=last,
                      text=text(last), final_other=final_other, residual_probs=residual,
                      candidates=[Candidate(id=x, text=text(x), target_prob=a, draft_prob=b, final_prob=f)
                                  for x, f, a, b in zip(ids, final, target, draft)])
