"""Plain, JSON-serialisable records of what each decoding step did. Figures are built from these only."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

from .draft_length import DraftStop


@dataclass
class Candidate:
    """One bar of a figure: a token with its probability under each distribution shown."""
    id: int
    text: str
    target_prob: float
    draft_prob: float
    final_prob: float = 0.0  # resample/bonus distribution; only in a correction's candidates


@dataclass
class PositionTrace:
    """One drafted position: the draft's proposal and the target's verdict on it."""
    index: int
    draft_token: int
    draft_text: str
    draft_prob: float       # q(x): the draft's probability of its own token
    target_prob: float      # p(x): the target's probability of the same token
    accept_prob: float      # the accept chance: min(1, p/q), or mentored decoding's planned chance
    exact_accept_prob: float  # min(1, p/q) always: what exact decoding would have given
    uniform: float | None   # u ~ U(0, 1) drawn; None when an earlier position was rejected (not examined)
    verdict: str            # "accepted" | "rejected" | "unexamined"
    candidates: list[Candidate]  # union of both top-k and the drafted token, target-prob order
    target_other: float     # mass outside the candidates
    draft_other: float
    tv: float               # TV(p, q) = 1 - sum min(p, q) at this position
    kl: float               # KL(p || q)
    overlap: float          # sum min(p, q): the chance any draft token here is accepted
    kl_spent: float = 0.0   # mentored decoding: KL(target || its output) here, within the budget; 0 when exact
    target_entropy: float = 0.0  # H(p) in nats: how unsure the target is here (0 in traces of older versions)
    draft_entropy: float = 0.0   # H(q) in nats


@dataclass
class Correction:
    """The one token every step adds after the accepted drafts."""
    kind: str               # "resampled" (from the residual or mentored s) | "bonus" (from target_probs[gamma])
    position: int
    token: int
    text: str
    candidates: list[Candidate]  # final_prob is the distribution drawn from
    final_other: float
    residual_probs: list[float] = field(default_factory=list)  # the exact residual on the same candidates


@dataclass
class EmittedToken:
    id: int
    text: str
    kind: str               # "accepted" | "resampled" | "bonus" | "target" (baseline)
    step: int


@dataclass
class Counters:
    tokens: int = 0
    target_calls: int = 0
    draft_calls: int = 0    # one forward per drafted token, so also the number drafted
    examined: int = 0       # drafted tokens the target actually tested (up to the first rejection)
    accepted: int = 0
    compute_s: float = 0.0


@dataclass(frozen=True)
class StepRecord:
    """What metrics need of one speculative step; kept even when full traces are off."""
    gamma: int
    n_accepted: int         # drafts accepted (0..gamma)
    n_examined: int         # drafts the target tested: n_accepted + 1, or gamma when all were accepted
    n_emitted: int          # tokens this step added (n_accepted + 1, fewer when cut by EOS / max tokens)
    draft_s: float          # wall time of the gamma draft forwards
    target_s: float         # wall time of the one target forward over gamma + 1 positions
    step_s: float           # the whole step: draft, verify and correct
    drafts: int = 1         # k chains drafted (several drafts at once); gamma stays the draft forwards per step
    level_tries: tuple = ()  # drafts > 1: candidates tried at each examined depth (the last one accepted,
                            # except at the depth of the correction); () for the single chain (one each)
    after_eos: int = 0      # drafts after an EOS the step accepted: never output, so not counted as drafted,
                            # tested or accepted (n_accepted and n_examined stop at the EOS)
    auto: bool = False      # gamma auto chose this round's length (core.draft_length): gamma is what it drafted


@dataclass
class TreeNode:
    """A drafted token of the token tree: chains that drafted the same tokens so far share a node."""
    id: int
    parent: int             # -1: a child of the pending token (depth 0)
    depth: int
    token: int
    text: str
    chains: list[int]       # the chains through this node
    draft_prob: float       # q(x) at the parent
    target_prob: float      # p(x) at the parent, before any rejection there
    status: str             # "accepted" | "rejected" | "untried" (a sibling was accepted first) | "unexamined"


@dataclass
class TreeTry:
    """One candidate judged, in the order tried at its depth."""
    depth: int
    rank: int               # 0 = tried first at this depth
    node: int
    chain: int
    token: int
    text: str
    target_prob: float      # the current p(x): after the residual updates of earlier rejections here
    draft_prob: float       # q(x)
    accept_prob: float      # min(1, current p(x) / q(x))
    uniform: float
    verdict: str            # "accepted" | "rejected"
    residual: list[Candidate] = field(default_factory=list)  # rejected: p before (target_prob) and after
    residual_other: float = 0.0                              # (final_prob) this rejection, on its top tokens


@dataclass
class TreeTrace:
    """Several drafts at once: the tree, the tries in order, the accepted path."""
    drafts: int
    nodes: list[TreeNode]
    tries: list[TreeTry]
    path: list[int]         # node ids of the accepted tokens, depth 0 first

    @classmethod
    def from_dict(cls, data: dict) -> TreeTrace:
        tries = [TreeTry(**{**t, "residual": [Candidate(**c) for c in t.get("residual", [])]}) for t in data["tries"]]
        return cls(drafts=data["drafts"], nodes=[TreeNode(**n) for n in data["nodes"]], tries=tries,
                   path=list(data["path"]))


@dataclass
class LookupTrace:
    """Where a lookup round's drafts were copied from (`core.lookup`): token texts around the match."""
    ngram: int              # n of the matched n-gram (the context's last n tokens); 0: no earlier match
    start: int = 0          # index in prompt + generated where the copied tokens begin
    in_prompt: bool = True  # the copy starts inside the prompt (else in earlier output)
    before: list[str] = field(default_factory=list)   # a few tokens before the matched n-gram
    matched: list[str] = field(default_factory=list)  # the matched n-gram, as it stands earlier
    copied: list[str] = field(default_factory=list)   # the proposed tokens, where they stand earlier
    after: list[str] = field(default_factory=list)    # a few tokens after them
    searched: str = "context"  # "context" (prompt and output so far) or "prompt"


@dataclass
class DraftSource:
    """Where a step's drafts came from: the drafter's registry name and what it tells of this round, as plain
    data (the model draft: {"reads_target": true} for a draft reading the target's hidden states; prompt lookup: a
    `LookupTrace` as a dict). The card picks its view by `kind`."""
    kind: str = "model"
    details: dict = field(default_factory=dict)

    @classmethod
    def from_legacy(cls, data: dict, known: set[str]) -> DraftSource:
        """From a trace written before the source was one record, taking out of `data` every field not in
        `known`: `drafter` (absent: the draft model), `draft_reads_target`, and a field named after the drafter
        that said where its drafts came from (prompt lookup's)."""
        old = {key: data.pop(key) for key in set(data) - known}
        kind = old.get("drafter") or "model"
        where = old.get(kind)
        details = dict(where) if isinstance(where, dict) else {"reads_target": True} if old.get("draft_reads_target") else {}
        return cls(kind=kind, details=details)


@dataclass
class StepTrace:
    step: int
    gamma: int
    kl_budget: float
    positions: list[PositionTrace]
    n_accepted: int
    correction: Correction
    emitted: list[EmittedToken]
    draft_ms: float         # wall time of the gamma draft forwards (cuda synchronised)
    target_ms: float        # wall time of the one target forward over gamma + 1 positions
    verify_ms: float        # sampling.verify and trace building
    counters: Counters      # running totals after this step
    record: StepRecord | None = None
    temperature: float = 1.0
    finished: bool = False
    notice: str = ""
    rejected: list[EmittedToken] = field(default_factory=list)  # draft tokens thrown away this step
    drafts: int = 1         # k chains; > 1: `tree` tells the step, `positions` follow the accepted chain
    tree: TreeTrace | None = None
    source: DraftSource = field(default_factory=DraftSource)  # who drafted this step, and what it tells of it
    draft_stop: DraftStop | None = None  # gamma auto: how many were drafted and why no more (absent: a fixed gamma)

    @property
    def greedy(self) -> bool:
        """Temperature 0: both distributions are one-hot and verification is the argmax test."""
        return self.temperature == 0

    def to_dict(self) -> dict:
        """Plain data; a single-chain step (drafts = 1) leaves the tree fields out, as before they existed, and a
        fixed-gamma step the draft stop."""
        data = asdict(self)
        if self.draft_stop is None:
            data.pop("draft_stop")
        if data["record"] and not data["record"]["auto"]:
            data["record"].pop("auto")
        if self.drafts == 1:
            for key in ("drafts", "tree"):
                data.pop(key)
            if data["record"]:
                for key in ("drafts", "level_tries"):
                    data["record"].pop(key)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict) -> StepTrace:
        """The inverse of to_dict (an exported run read back), also of a trace written before the draft source was
        one record (`DraftSource.from_legacy`)."""
        data = dict(data)
        legacy = DraftSource.from_legacy(data, {f.name for f in fields(cls)})  # takes the older fields out either way
        data["source"] = DraftSource(**data["source"]) if data.get("source") else legacy
        data["positions"] = [PositionTrace(**{**p, "candidates": [Candidate(**c) for c in p["candidates"]]})
                             for p in data["positions"]]
        corr = data["correction"]
        data["correction"] = Correction(**{**corr, "candidates": [Candidate(**c) for c in corr["candidates"]]})
        data["emitted"] = [EmittedToken(**e) for e in data["emitted"]]
        data["rejected"] = [EmittedToken(**e) for e in data.get("rejected", [])]
        data["counters"] = Counters(**data["counters"])
        data["record"] = (StepRecord(**{**data["record"], "level_tries": tuple(data["record"].get("level_tries", ())),
                                        "auto": data["record"].get("auto", bool(data.get("draft_stop")))})
                          if data.get("record") else None)   # a trace before records said "auto": its draft stop
        data["tree"] = TreeTrace.from_dict(data["tree"]) if data.get("tree") else None
        data["draft_stop"] = DraftStop(**data["draft_stop"]) if data.get("draft_stop") else None
        return cls(**data)
