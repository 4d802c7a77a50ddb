"""Train the bundled offline draft/target pair on the Shakespeare corpus.

    python -m specviz train --stage all            # tokenizer, target, distilled draft, plain draft
    python -m specviz train --stage target --minutes 20 --resume   # keep improving the target

Stages, in order (each one reads what the previous wrote):
  tokenizer    one byte-level BPE shared by both models (the `tokenizers` library)
  target       GPT-2 causal LM, next-token cross-entropy
  draft        small GPT-2 distilled from the final target: it is trained on the target's
               soft next-token distribution (forward KL, as DistillSpec does), because the
               acceptance rate sum_x min(p, q) is what speculative decoding lives on
  plain-draft  the same small model trained on hard labels only, for the model card's comparison

Whole works are held out for validation (never random lines). Every stage is seeded, bounded by
a wall-clock budget, checkpointed under --checkpoints and resumable with --resume, and writes a
folder that `AutoModelForCausalLM.from_pretrained` / `AutoTokenizer.from_pretrained` load with
no custom code.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from ..engine.models.presets import ASSETS

DEFAULT_OUT = ASSETS
VALIDATION_WORKS = ("julius_caesar.txt", "twelfth_night.txt")
EOS = "<|endoftext|>"


@dataclass(frozen=True)
class Architecture:
    n_layer: int
    n_embd: int
    n_head: int

    def __post_init__(self):
        if self.n_layer < 1 or self.n_embd < 1 or self.n_head < 1 or self.n_embd % self.n_head:
            raise ValueError(f"bad architecture {self}: n_embd must be a multiple of n_head")


# Deep and narrow on purpose: at batch 1 on a CPU per-layer call overhead dominates, so a (gamma+1)-token
# verify costs little more than a 1-token forward (the GPU regime) and the 2-layer draft stays cheap (c ~ 0.2).
TARGET_ARCH = Architecture(n_layer=16, n_embd=128, n_head=4)
DRAFT_ARCH = Architecture(n_layer=2, n_embd=128, n_head=2)


@dataclass(frozen=True)
class TrainConfig:
    minutes: float
    lr: float = 2e-3
    batch_size: int = 32
    block_size: int = 128
    warmup_steps: int = 100
    weight_decay: float = 0.1
    dropout: float = 0.05
    seed: int = 0

    def __post_init__(self):
        if self.minutes <= 0 or self.lr <= 0 or self.batch_size < 1 or self.block_size < 8:
            raise ValueError(f"bad training config {self}")


# ---------------------------------------------------------------- data


def read_works(corpus: Path, limit_chars: int | None = None) -> tuple[list[str], list[str]]:
    """(train texts, validation texts), split by whole work."""
    files = sorted(corpus.glob("*.txt"))
    if not files:
        raise FileNotFoundError(f"no .txt works under {corpus}")
    train, val = [], []
    for f in files:
        text = f.read_text(encoding="utf-8")
        if limit_chars is not None:
            text = text[:limit_chars]
        (val if f.name in VALIDATION_WORKS else train).append(text)
    if not val:  # a sliced corpus for tests may miss the named works: hold out the last one
        val.append(train.pop())
    return train, val


def train_tokenizer(texts: list[str], vocab_size: int, out_dir: Path):
    from tokenizers import ByteLevelBPETokenizer, Tokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer(add_prefix_space=False)
    bpe.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2, special_tokens=[EOS])
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(bpe.to_str()), bos_token=EOS, eos_token=EOS,
                                  unk_token=EOS, pad_token=EOS, clean_up_tokenization_spaces=False)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out_dir)
    return tok


def encode(tok, texts: list[str]) -> torch.Tensor:
    """One long 1-D stream of ids, works separated by EOS."""
    ids: list[int] = []
    for text in texts:
        ids.extend(tok(text)["input_ids"])
        ids.append(tok.eos_token_id)
    return torch.tensor(ids, dtype=torch.long)


def random_batch(stream: torch.Tensor, cfg: TrainConfig, gen: torch.Generator) -> torch.Tensor:
    starts = torch.randint(0, len(stream) - cfg.block_size - 1, (cfg.batch_size,), generator=gen)
    return torch.stack([stream[s: s + cfg.block_size + 1] for s in starts])  # [B, T+1]


def validation_windows(stream: torch.Tensor, block_size: int, max_windows: int = 256) -> torch.Tensor:
    n = min(max_windows, (len(stream) - 1) // block_size)
    return stream[: n * block_size + 1].unfold(0, block_size + 1, block_size)[:n]  # [n, T+1]


@torch.inference_mode()
def validation_loss(model, windows: torch.Tensor, batch: int = 32) -> float:
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(windows), batch):
        w = windows[i: i + batch]
        logits = model(w[:, :-1]).logits
        total += F.cross_entropy(logits.flatten(0, 1), w[:, 1:].flatten(), reduction="sum").item()
        count += w[:, 1:].numel()
    model.train()
    return total / count


# ---------------------------------------------------------------- models


def new_model(arch: Architecture, tok, cfg: TrainConfig):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=len(tok), n_positions=256, n_embd=arch.n_embd,
                        n_layer=arch.n_layer, n_head=arch.n_head, resid_pdrop=cfg.dropout,
                        embd_pdrop=cfg.dropout, attn_pdrop=cfg.dropout,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                        pad_token_id=tok.pad_token_id, tie_word_embeddings=True)
    return GPT2LMHeadModel(config)


def lr_at(step: int, progress: float, cfg: TrainConfig) -> float:
    """Linear warm-up, then cosine decay to 10% over the wall-clock budget."""
    warm = min(1.0, (step + 1) / cfg.warmup_steps)
    return cfg.lr * warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


def fit(name: str, model, stream: torch.Tensor, val_windows: torch.Tensor, cfg: TrainConfig,
        ckpt_dir: Path, resume: bool, teacher=None) -> dict:
    """Train `model` for cfg.minutes of wall time; distil from `teacher` when given."""
    gen = torch.Generator().manual_seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95),
                            weight_decay=cfg.weight_decay)
    ckpt = ckpt_dir / f"{name}.pt"
    step, tokens_seen, seconds_before = 0, 0, 0.0
    if resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        step, tokens_seen, seconds_before = state["step"], state["tokens"], state["seconds"]
        print(f"[{name}] resumed at step {step}, {tokens_seen:,} tokens, {seconds_before / 60:.1f} min")
    model.train()
    budget = cfg.minutes * 60
    start = time.perf_counter()
    bar = tqdm(total=int(budget), desc=name, unit="s", mininterval=5, bar_format="{l_bar}{bar}| {n}/{total}s {postfix}")
    last_save = start
    while (elapsed := time.perf_counter() - start) < budget:
        for group in opt.param_groups:
            group["lr"] = lr_at(step, elapsed / budget, cfg)
        batch = random_batch(stream, cfg, gen)  # [B, T+1]
        inputs, labels = batch[:, :-1], batch[:, 1:]
        logits = model(inputs).logits  # [B, T, V]
        if teacher is None:
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        else:
            with torch.inference_mode():
                teacher_probs = teacher(inputs).logits.softmax(-1)  # [B, T, V]
            # forward KL(target || draft) up to a constant: the soft cross-entropy
            loss = -(teacher_probs.clone() * logits.log_softmax(-1)).sum(-1).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens_seen += inputs.numel()
        now = time.perf_counter()
        bar.n = int(now - start)
        bar.set_postfix_str(f"loss {loss.item():.3f}  {tokens_seen / (seconds_before + now - start):.0f} tok/s")
        if now - last_save > 120:
            _save_checkpoint(ckpt, model, opt, gen, step, tokens_seen, seconds_before + now - start)
            last_save = now
    bar.close()
    seconds = seconds_before + time.perf_counter() - start
    _save_checkpoint(ckpt, model, opt, gen, step, tokens_seen, seconds)
    val = validation_loss(model, val_windows)
    print(f"[{name}] steps {step}  tokens {tokens_seen:,}  {seconds / 60:.1f} min  val CE {val:.3f}")
    return {"steps": step, "tokens": tokens_seen, "train_minutes": round(seconds / 60, 2),
            "val_cross_entropy": round(val, 4), "config": asdict(cfg)}


def _save_checkpoint(path, model, opt, gen, step, tokens, seconds):
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "gen": gen.get_state(),
                "step": step, "tokens": tokens, "seconds": seconds}, path)


def export(model, tok, out_dir: Path, report: dict):
    """Save a folder that from_pretrained loads: fp16 weights (half the size in git; the loader
    upcasts to fp32 on CPU) and no dropout."""
    model.config.resid_pdrop = model.config.embd_pdrop = model.config.attn_pdrop = 0.0
    out_dir.mkdir(parents=True, exist_ok=True)
    model.to(torch.float16).save_pretrained(out_dir, safe_serialization=True)
    model.to(torch.float32)
    tok.save_pretrained(out_dir)
    (out_dir / "training.json").write_text(json.dumps(report, indent=2))


# ---------------------------------------------------------------- main


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="specviz train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stage", choices=["tokenizer", "target", "draft", "plain-draft", "all"], default="all")
    ap.add_argument("--corpus", type=Path, required=True,
                    help="a folder of .txt works (`python -m specviz corpus --out DIR` writes the bundled pair's)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--checkpoints", type=Path, default=Path("checkpoints"))
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--minutes", type=float, default=None, help="wall-clock budget of each model stage")
    ap.add_argument("--target-minutes", type=float, default=45)
    ap.add_argument("--draft-minutes", type=float, default=12)
    ap.add_argument("--plain-draft-minutes", type=float, default=5)
    ap.add_argument("--target-arch", type=int, nargs=3, metavar=("LAYERS", "WIDTH", "HEADS"), default=None)
    ap.add_argument("--draft-arch", type=int, nargs=3, metavar=("LAYERS", "WIDTH", "HEADS"), default=None)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--limit-chars", type=int, default=None, help="use only the first N characters of each work")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target_arch = Architecture(*args.target_arch) if args.target_arch else TARGET_ARCH
    draft_arch = Architecture(*args.draft_arch) if args.draft_arch else DRAFT_ARCH
    target_dir, draft_dir = args.out / "shakespeare-target", args.out / "shakespeare-draft"
    plain_dir = args.checkpoints / "shakespeare-draft-plain"
    tok_dir = args.checkpoints / "tokenizer"
    stages = ["tokenizer", "target", "draft", "plain-draft"] if args.stage == "all" else [args.stage]
    train_texts, val_texts = read_works(args.corpus, args.limit_chars)

    if "tokenizer" in stages and not (args.resume and (tok_dir / "tokenizer.json").exists()):
        train_tokenizer(train_texts, args.vocab_size, tok_dir)
    tok = AutoTokenizer.from_pretrained(tok_dir, trust_remote_code=False)
    train_stream, val_stream = encode(tok, train_texts), encode(tok, val_texts)
    print(f"train tokens {len(train_stream):,}  validation tokens {len(val_stream):,}")

    def cfg(stage_minutes):
        return TrainConfig(minutes=args.minutes or stage_minutes, lr=args.lr, seed=args.seed,
                           block_size=min(128, len(val_stream) // 2 - 2))

    def windows(c):
        return validation_windows(val_stream, c.block_size)

    if "target" in stages:
        c = cfg(args.target_minutes)
        model = new_model(target_arch, tok, c)
        report = fit("target", model, train_stream, windows(c), c, args.checkpoints, args.resume)
        export(model, tok, target_dir, {**report, "architecture": asdict(target_arch)})
    if "draft" in stages:
        c = cfg(args.draft_minutes)
        teacher = AutoModelForCausalLM.from_pretrained(target_dir, dtype=torch.float32, trust_remote_code=False).eval()
        model = new_model(draft_arch, tok, c)
        report = fit("draft", model, train_stream, windows(c), c, args.checkpoints, args.resume, teacher=teacher)
        export(model, tok, draft_dir, {**report, "architecture": asdict(draft_arch), "distilled_from": "shakespeare-target"})
    if "plain-draft" in stages:
        c = cfg(args.plain_draft_minutes)
        model = new_model(draft_arch, tok, c)
        report = fit("plain-draft", model, train_stream, windows(c), c, args.checkpoints, args.resume)
        export(model, tok, plain_dir, {**report, "architecture": asdict(draft_arch)})


if __name__ == "__main__":
    main()
