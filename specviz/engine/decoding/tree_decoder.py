"""Several drafts at once: k draft chains per step, verified as a token tree (`core.tree`).

One `TreeDecoder.step()` is one round:
  1. draft    k chains of gamma tokens; one batched draft forward per depth ([k, 1] new ids)
  2. verify   one batched target forward: k rows of (pending + chain), over k copies of the prefix cache
  3. correct  `tree.verify_tree`; both caches keep the accepted chain's row, cropped to the accepted path

Why k batched rows over a shared KV prefix and not one row with a tree attention mask: every causal
LM in transformers runs a batch as it is, with the positions it infers from the cache, on every
attention kernel; a tree mask needs a custom 4D mask and explicit position ids, which some kernels
(flash attention) and some architectures ignore or refuse, and the cache would then hold every
branch and need compacting by gather after each step. The price is compute: the target scores
k (gamma + 1) positions, duplicates included, where a tree mask scores only the distinct nodes, and
the prefix cache is copied k times per step. On this project's CPU pair a forward over a few dozen
new positions costs about what one over a few does (docs/benchmarks.md, "Several drafts at once
(measured)"), so the simpler portable route was taken. Rows of chains that share a prefix are the same tree
node: the first such chain's row stands for all of them, so the tree's numbers are consistent to the bit.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from ...core import sampling, tree
from ...core.trace import Candidate, EmittedToken, StepRecord, StepTrace, TreeNode, TreeTrace, TreeTry
from . import round_trace
from .decoders import SpeculativeDecoder, counted_drafts, sync_device
from .drafting import Drafted
from .model_draft import node_representatives

RESIDUAL_TOP = 5  # tokens shown per residual after a rejected sibling


@dataclass
class _Chains:
    tokens: list[list[int]]      # [k][gamma]
    probs: torch.Tensor          # [k, gamma, V] the (node-shared) draft distributions they were drawn from


class TreeDecoder(SpeculativeDecoder):
    """Exact multi-draft speculative sampling: `config.drafts` chains per step (kl_budget must be 0), proposed by a
    drafter that drafts several chains at once (`propose_chains`: the draft model)."""

    static_ok = False  # k chains are k rows of one cache: the dynamic cache expands and selects rows

    def step(self) -> StepTrace | None:
        self._check_not_finished()
        t0 = time.perf_counter()
        chains = self._draft_chains()                          # 1. draft
        t1 = time.perf_counter()
        target_probs = self._verify_chains(chains)             # 2. verify   [k, gamma+1, V]
        t2 = time.perf_counter()
        result, kept = self._correct_tree(target_probs, chains)  # 3. correct
        t3 = time.perf_counter()
        counted = counted_drafts(self.eos, result, self.config.gamma)
        record = StepRecord(gamma=self.config.gamma, n_emitted=len(kept), draft_s=t1 - t0, target_s=t2 - t1,
                            step_s=t3 - t0, drafts=self.config.drafts,
                            level_tries=tuple(len(lv.tries) for lv in result.levels)[: counted["n_examined"]], **counted)
        self.records.append(record)
        self.counters.compute_s += record.step_s
        if not self.config.record:
            return None
        return self._tree_trace(target_probs, chains, result, kept, record)

    def _draft_chains(self) -> _Chains:
        """1. draft: k chains, one batched forward per depth; chains at one node share its distribution."""
        gamma = self.config.gamma
        tokens, probs = self.drafter.propose_chains(self._context(), self.config.drafts, gamma)
        sync_device(self.pair.device)
        self.counters.draft_calls += gamma
        return _Chains(tokens=tokens, probs=probs)  # [k][gamma], [k, gamma, V]

    def _verify_chains(self, chains: _Chains) -> torch.Tensor:
        """2. verify: one target forward over k rows of (pending + chain), gamma + 1 positions kept each."""
        k, gamma = self.config.drafts, self.config.gamma
        pending = self.tokens[self.target.seen:]
        self.target.expand(k)
        logits = self.target.forward_rows([pending + c for c in chains.tokens], keep=gamma + 1)  # [k, gamma+1, V]
        probs = self.config.warp(logits)
        reps = torch.tensor([node_representatives(chains.tokens, d) for d in range(gamma + 1)])  # [gamma+1, k]
        probs = probs[reps.T.to(probs.device), torch.arange(gamma + 1, device=probs.device)]      # [k, gamma+1, V]
        sync_device(self.pair.device)
        self.counters.target_calls += 1
        return probs

    def _correct_tree(self, target_probs: torch.Tensor, chains: _Chains) -> tuple[tree.TreeVerification, list[int]]:
        """3. correct: judge the tree, keep the accepted chain's cache row cropped to the accepted path."""
        result = tree.verify_tree(target_probs, chains.probs, torch.tensor(chains.tokens, device=chains.probs.device),
                                  generator=self.generator)
        keep = len(self.tokens) + result.n_accepted
        self.target.keep_row(result.path_chain)
        self.target.crop_to(keep)
        self.drafter.keep_row(result.path_chain)
        self.drafter.crop(keep)
        self.counters.examined += result.n_examined
        self.counters.accepted += result.n_accepted
        self.device_ids.write(len(self.tokens), torch.tensor(result.tokens).to(self.pair.device))
        return result, self._accept_new(result.tokens)

    # ------------------------------------------------------------------ trace

    def _tree_trace(self, target_probs, chains: _Chains, result: tree.TreeVerification, kept: list[int],
                    record: StepRecord) -> StepTrace:
        """The single-chain trace along the accepted chain (so every view keeps working), plus the tree."""
        gamma, path = self.config.gamma, result.path_chain
        path_tries = [next((t for t in lv.tries if t.accepted), None) or next(t for t in lv.tries if t.chain == path)
                      for lv in result.levels]
        exact = sampling.accept_probability(target_probs[path, :gamma], chains.probs[path],
                                            torch.tensor(chains.tokens[path], device=chains.probs.device)).tolist()
        chances = [t.accept_prob for t in path_tries] + exact[len(path_tries):]
        device, n = chains.probs.device, result.n_accepted
        tokens = torch.tensor(chains.tokens[path], device=device)  # [gamma]
        target, q = target_probs[path], chains.probs[path]          # [gamma+1, V], [gamma, V]
        drafted_p, drafted_q = (rows[:gamma].gather(-1, tokens[:, None])[:, 0] for rows in (target, q))
        uniforms = [t.uniform for t in path_tries] + [0.0] * (gamma + 1 - len(path_tries))  # unexamined: not shown
        # the accepted chain as one chain's round; every row of its correction is the law the last token came from
        as_chain = sampling.Round(
            n_accepted=torch.tensor(n, device=device), last=torch.tensor(result.tokens[-1], device=device),
            draft_tokens=tokens, uniforms=torch.tensor(uniforms, dtype=torch.float64, device=device),
            drafted_target_probs=drafted_p, drafted_draft_probs=drafted_q,
            accept_probs=torch.tensor(chances, dtype=torch.float64, device=device),
            candidates=result.final_probs.expand(gamma + 1, -1))
        shown = round_trace.round_tensors(target, q, as_chain, self.config.trace_top_k)
        read = sampling.pack(drafts=tokens, q_x=drafted_q, **shown).read()
        drafted = Drafted(tokens=tokens, probs=q, forwards=gamma)
        trace = self._trace(read, drafted, round_trace.RoundResult(gamma=gamma, n_accepted=n, tokens=result.tokens),
                            kept, record)
        # the correction was drawn from the residual after every rejection at its depth, not after one
        trace.correction.residual_probs = [c.final_prob for c in trace.correction.candidates]
        # the timeline shows the candidates rejected where the round stopped (siblings rejected before an
        # acceptance are told by the card)
        trace.rejected = [EmittedToken(id=t.token, text=self.pair.token_text(t.token), kind="rejected", step=self.steps)
                          for t in (result.levels[-1].tries if not result.bonus else [])]
        trace.drafts = self.config.drafts
        trace.tree = self._tree(target_probs, chains, result)
        return trace

    def _tree(self, target_probs, chains: _Chains, result: tree.TreeVerification) -> TreeTrace:
        text, k = self.pair.token_text, self.config.drafts
        # nodes: one per distinct prefix, in chain order within each depth
        ids: dict[tuple, int] = {}
        nodes: list[TreeNode] = []
        for depth in range(self.config.gamma):
            for i, chain in enumerate(chains.tokens):
                key = tuple(chain[: depth + 1])
                if key in ids:
                    nodes[ids[key]].chains.append(i)
                    continue
                ids[key] = len(nodes)
                x = chain[depth]
                nodes.append(TreeNode(id=len(nodes), parent=ids.get(key[:-1], -1), depth=depth, token=x, text=text(x),
                                      chains=[i], draft_prob=float(chains.probs[i, depth, x]),
                                      target_prob=float(target_probs[i, depth, x]), status="unexamined"))
        path_nodes = [ids[tuple(result.tokens[: d + 1])] for d in range(result.n_accepted)]
        tries = []
        for t in result.tries:
            node = ids[tuple(chains.tokens[t.chain][: t.depth + 1])]
            nodes[node].status = "accepted" if t.accepted else "rejected"
            tries.append(TreeTry(depth=t.depth, rank=t.rank, node=node, chain=t.chain, token=t.token, text=text(t.token),
                                 target_prob=t.target_prob, draft_prob=t.draft_prob, accept_prob=t.accept_prob,
                                 uniform=t.uniform, verdict="accepted" if t.accepted else "rejected",
                                 **self._residual_view(t, result, target_probs)))
        for lv, alive in zip(result.levels, result.alive):  # siblings left when one was accepted
            if lv.token is not None:
                for i in alive:
                    node = nodes[ids[tuple(chains.tokens[i][: lv.tries[0].depth + 1])]]
                    node.status = "untried" if node.status == "unexamined" else node.status
        return TreeTrace(drafts=k, nodes=nodes, tries=tries, path=path_nodes)

    def _residual_view(self, t: tree.Try, result: tree.TreeVerification, target_probs) -> dict:
        """A rejected try: the top tokens of p before it and of the residual after it."""
        if t.accepted:
            return {}
        level = result.levels[t.depth]
        before = level.tries[t.rank - 1].residual if t.rank else None
        if before is None:  # the first try at this depth is judged against the target's own p
            before = target_probs[result.alive[t.depth][0], t.depth]
        after = t.residual
        top = after.topk(min(RESIDUAL_TOP, after.shape[-1])).indices.tolist()
        values = torch.stack([before[top], after[top]]).tolist()
        return {"residual": [Candidate(id=x, text=self.pair.token_text(x), target_prob=b, draft_prob=0.0, final_prob=a)
                             for x, b, a in zip(top, *values)],
                "residual_other": max(0.0, 1.0 - sum(values[1]))}

