"""The plain smollm2-local draft (--draft layers): a few of the target's layers on tokens alone.

  train     the draft: a few of the target's layers (copied as its start), the target's frozen
            embeddings and head rows for the draft vocabulary; forward KL against the target's top-k.
  save      the draft's own tensors (layers + final norm, float16) and its vocabulary into --out.
  evaluate  alpha = E sum_x min(p, q) at T = 1, 0.7 and 0 on the target's answers to held-out prompts
            (topics never trained on), the draft loaded from --out as the app loads it.
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

import torch

from ...engine.models import smollm2
from .data import chat_ids, load_target, log, prompts, sample_batch, stored_rows
from .optim import optimizer_step, scheduled_lr


def make_draft(target, layers: list[int]):
    """A LlamaForCausalLM with the target's layers `layers` (copies) and final norm, sharing nothing yet."""
    from transformers import AutoConfig, LlamaForCausalLM

    config = AutoConfig.for_model(**{**target.config.to_dict(), "num_hidden_layers": len(layers),
                                     "tie_word_embeddings": False})
    config.model_type = "llama"
    draft = LlamaForCausalLM(config)
    for i, j in enumerate(layers):
        draft.model.layers[i].load_state_dict(target.model.layers[j].state_dict())
    draft.model.norm.load_state_dict(target.model.norm.state_dict())
    return draft


def _batches(rows, batch_tokens: int, rng: random.Random):
    order = list(range(len(rows)))
    rng.shuffle(order)
    batch, size = [], 0
    for i in order:
        n = len(rows[i]["prompt"]) + len(rows[i]["answer"])
        batch.append(rows[i])
        size += n
        if size >= batch_tokens:
            yield batch
            batch, size = [], 0


def _loss(draft, head_w, index_of, rows, tv_weight: float):
    """Forward KL(target top-k || draft) on answer positions, plus tv_weight * (1 - sum min(p, q)) on the top-k."""
    seqs = [r["prompt"] + r["answer"] for r in rows]
    width = max(len(s) for s in seqs)
    ids = torch.tensor([s + [0] * (width - len(s)) for s in seqs])
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
    hidden = draft.model(input_ids=ids, attention_mask=mask).last_hidden_state  # right padding: causal is enough
    pos, tk_ids, tk_logp = [], [], []
    for b, r in enumerate(rows):
        n, start = len(r["answer"]), len(r["prompt"]) - 1
        pos.append(torch.stack([torch.full((n,), b), torch.arange(start, start + n)], 1))
        tk_ids.append(r["topk_ids"].long())
        tk_logp.append(r["topk_logp"].float())
    pos = torch.cat(pos)
    h = hidden[pos[:, 0], pos[:, 1]]                       # [n, H]
    logq = (h @ head_w.T).log_softmax(-1)                  # [n, N] over the draft vocabulary
    tk_ids, p = torch.cat(tk_ids), torch.cat(tk_logp).exp()
    j = index_of[tk_ids]                                   # [n, k] index in the draft vocabulary, -1 outside
    inside = j >= 0
    lq = logq.gather(1, j.clamp(min=0))
    kl = -(p * lq * inside).sum(1).mean()
    overlap = (torch.minimum(p, lq.exp()) * inside).sum(1).mean()
    return kl + tv_weight * (1 - overlap), overlap.item(), len(pos)


def train(args) -> None:
    work = Path(args.work)
    torch.manual_seed(args.seed)
    model, _ = load_target(args.threads)
    ids = torch.load(work / "vocab.pt").long()
    layers = [int(x) for x in args.layers.split(",")]
    draft = make_draft(model, layers)
    draft.model.embed_tokens = model.model.embed_tokens
    for p in draft.model.embed_tokens.parameters():
        p.requires_grad_(False)
    head_w = model.lm_head.weight[ids].detach().clone()
    index_of = torch.full((49152,), -1, dtype=torch.long)
    index_of[ids] = torch.arange(len(ids))
    params = [p for n, p in draft.model.named_parameters() if not n.startswith("embed_tokens")]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0, betas=(0.9, 0.98))
    rows = [r for r in stored_rows(work) if len(r["answer"])]
    n_watch = min(64, len(rows) // 10)
    eval_rows, rows = rows[:n_watch] or rows[:1], rows[n_watch:]  # a fixed slice to watch the loss on
    if not rows:
        raise SystemExit("no training data: run the generate stage first")
    ckpt = work / "train.pt"
    step, elapsed, epoch = 0, 0.0, 0
    if ckpt.exists():
        state = torch.load(ckpt)
        draft.model.load_state_dict(state["model"], strict=False)
        opt.load_state_dict(state["opt"])
        step, elapsed, epoch = state["step"], state["elapsed"], state["epoch"]
        log(work, f"resumed at step {step} ({elapsed / 60:.1f} min)")
    budget = 60 * args.minutes_train
    t0 = time.time() - elapsed
    total_tokens = sum(len(r["answer"]) for r in rows)
    log(work, f"train: {len(rows)} sequences, {total_tokens} answer tokens; layers {layers}; vocab {len(ids)}")
    draft.train()
    done = False
    while not done:
        rng = random.Random(args.seed * 7919 + epoch)
        for batch in _batches(rows, args.batch_tokens, rng):
            lr = scheduled_lr(args.lr, step, (time.time() - t0) / budget, warmup=30)
            loss, overlap, _ = _loss(draft, head_w, index_of, batch, args.tv_weight)
            optimizer_step(opt, params, loss, lr)
            step += 1
            if step % 20 == 0:
                with torch.no_grad():
                    draft.eval()
                    _, ev, _ = _loss(draft, head_w, index_of, eval_rows, 0.0)
                    draft.train()
                log(work, f"step {step} epoch {epoch} loss {loss.item():.4f} overlap(top-k) {overlap:.3f} "
                     f"watch {ev:.3f} lr {lr:.2e} {(time.time() - t0) / 60:.1f} min")
                torch.save({"model": {k: v for k, v in draft.model.state_dict().items() if not k.startswith("embed")},
                            "opt": opt.state_dict(), "step": step, "elapsed": time.time() - t0, "epoch": epoch,
                            "layers": layers}, ckpt)
            if time.time() - t0 >= budget:
                done = True
                break
        epoch += 1
    torch.save({"model": {k: v for k, v in draft.model.state_dict().items() if not k.startswith("embed")},
                "opt": opt.state_dict(), "step": step, "elapsed": time.time() - t0, "epoch": epoch,
                "layers": layers}, ckpt)
    log(work, f"train done: {step} steps, {epoch} epochs, {(time.time() - t0) / 60:.1f} min")


def save(args) -> None:
    """Write the draft folder: config, own tensors (float16), vocabulary, and what it shares."""
    from safetensors.torch import save_file

    work, out = Path(args.work), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model, tok = load_target(args.threads)
    state = torch.load(work / "train.pt")
    draft = make_draft(model, state["layers"])
    draft.model.load_state_dict(state["model"], strict=False)
    own = {f"model.{k}": v.half().contiguous() for k, v in draft.model.state_dict().items()
           if not k.startswith("embed_tokens")}
    save_file(own, str(out / "model.safetensors"), metadata={"format": "pt"})
    draft.config.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    ids = torch.load(work / "vocab.pt")
    save_file({"ids": ids.to(torch.int32).contiguous()}, str(out / "vocab_subset.safetensors"))
    (out / smollm2.SHARED_FILE).write_text(json.dumps({
        "target": "SmolLM2-135M-Instruct", "embeddings": "shared with the target",
        "vocab_subset": "vocab_subset.safetensors", "layers_from_target": state["layers"],
        "training": {"steps": state["step"], "minutes": round(state["elapsed"] / 60, 1)}}, indent=1) + "\n")
    log(work, f"saved {out}: {sum(f.stat().st_size for f in out.iterdir()) / 1e6:.1f} MB")


def load_draft(folder, target):
    """The draft as the app loads it: from_pretrained, then what it shares with the target."""
    from transformers import AutoModelForCausalLM

    draft = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, trust_remote_code=False).eval()
    smollm2.attach_shared(draft, target, folder)
    return draft


@torch.inference_mode()
def evaluate(args) -> dict:
    """alpha at each temperature on the target's own answers to held-out prompts (fresh samples per T)."""
    work = Path(args.work)
    model, tok = load_target(args.threads)
    draft = load_draft(args.out, model)
    held = prompts("held-out", args.seed)[: args.eval_prompts]
    result = {}
    for temp in (1.0, 0.7, 0.0):
        total, n = 0.0, 0
        for b in range(0, len(held), 8):
            batch = [chat_ids(tok, p) for p in held[b:b + 8]]
            rows = sample_batch(model, tok, batch, temp, args.eval_tokens, 1, seed=args.seed + 17 + b)
            for r in rows:
                seq = torch.tensor([r["prompt"] + r["answer"]])
                start = len(r["prompt"]) - 1
                p_logits = model(seq).logits[0, start:start + len(r["answer"])]
                q_logits = draft(seq).logits[0, start:start + len(r["answer"])]
                if temp == 0:
                    total += (p_logits.argmax(-1) == q_logits.argmax(-1)).float().sum().item()
                else:
                    p = (p_logits / temp).softmax(-1)
                    q = (q_logits / temp).softmax(-1)
                    total += torch.minimum(p, q).sum(-1).sum().item()
                n += len(r["answer"])
        result[f"alpha_T{temp:g}"] = round(total / n, 4)
        result[f"tokens_T{temp:g}"] = n
        log(work, f"held-out alpha at T={temp:g}: {total / n:.4f} over {n} tokens")
    (work / "eval.json").write_text(json.dumps(result, indent=1))
    return result
