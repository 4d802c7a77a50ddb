"""Distil the offline SmolLM2-135M-Instruct pair's draft from the target's own answers.

    python -m specviz.tools.distill all --work ~/.cache/specviz/distill --minutes-generate 30 --minutes-train 40

With --draft features (the default) the features, train, save and evaluate stages are those of
`distill_features.py` (a draft that reads the target's hidden states); --draft layers keeps the plain
draft described below.

Stages (each resumable: finished shards and checkpoints are kept under --work):
  generate  the target answers chat prompts written from topic x question templates (training topics
            only), sampled at several temperatures; each answer position keeps the target's top-k
            log-probabilities (the logits `generate` computed anyway). Plus Shakespeare passages
            scored by the target in one forward pass each.
  vocab     the draft's vocabulary: the most frequent tokens of the target's samples (FR-Spec style).
  train     the draft: a few of the target's layers (copied as its start), the target's frozen
            embeddings and head rows for the draft vocabulary; forward KL against the target's top-k.
  save      the draft's own tensors (layers + final norm, float16) and its vocabulary into --out.
  evaluate  alpha = E sum_x min(p, q) at T = 1, 0.7 and 0 on the target's answers to held-out prompts
            (topics never trained on), the draft loaded from --out as the app loads it.

Seeded throughout; every stage runs with one thread (torch.set_num_threads(1)) unless --threads.

Over 300 lines on purpose: the four stages share their data format and seeds, and one file keeps the
whole recipe reproducible from top to bottom.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import random
import time
from pathlib import Path

import torch

from ..engine import smollm2

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "assets" / "models" / "smollm2-draft"

TOPICS = (
    "photosynthesis", "the water cycle", "volcanoes", "earthquakes", "the moon's phases", "black holes",
    "gravity", "magnetism", "electricity", "the human heart", "the immune system", "DNA", "evolution",
    "the French Revolution", "ancient Egypt", "the Roman Empire", "World War I", "the printing press",
    "the Industrial Revolution", "democracy", "inflation", "supply and demand", "the stock market",
    "climate change", "renewable energy", "recycling", "rainforests", "coral reefs", "bees", "dinosaurs",
    "the solar system", "Mars", "rainbows", "thunderstorms", "the seasons", "tides", "sound waves",
    "light", "atoms", "chemical reactions", "acids and bases", "fractions", "prime numbers",
    "the Pythagorean theorem", "probability", "algorithms", "the internet", "computer programming",
    "artificial intelligence", "encryption", "the camera", "vaccines", "sleep", "nutrition", "exercise",
    "memory", "languages", "poetry", "Shakespeare", "music", "painting", "the Olympic Games", "football",
    "chess", "maps", "mountains", "rivers", "deserts", "oceans", "the Arctic", "friendship", "money",
    "taxes", "elections", "the United Nations", "airplanes", "trains", "bridges", "cooking", "bread",
    "coffee", "chocolate", "cats", "dogs", "whales", "spiders", "trees", "fungi", "bacteria", "viruses",
    "the brain", "the eye", "glaciers", "batteries", "robots", "satellites", "the telescope", "pyramids",
)
TEMPLATES = (
    "What is {t}?", "Explain {t} to a ten-year-old.", "Why is {t} important?", "Give me three facts about {t}.",
    "How does {t} work?", "Write a short paragraph about {t}.", "What is the history of {t}?",
    "What are common misconceptions about {t}?", "Summarise {t} in two sentences.",
    "What should a student know about {t}?", "How would you teach {t} to a class?",
    "Write a short poem about {t}.", "What questions do scientists still ask about {t}?",
    "Compare {t} with something from everyday life.", "What is the most surprising thing about {t}?",
    "Describe {t} in simple words.", "Can you give an example of {t}?", "What are the pros and cons of {t}?",
    "Tell me a story that involves {t}.", "Write a quiz question about {t} and answer it.",
)
HELD_OUT_EVERY = 10  # topics 0, 10, 20, ... are never trained on


def prompts(split: str, seed: int = 0) -> list[str]:
    """Chat prompts of a split: 'train' or 'held-out' (disjoint topics); shuffled with the seed."""
    topics = [t for i, t in enumerate(TOPICS) if (i % HELD_OUT_EVERY == 0) == (split == "held-out")]
    out = [tmpl.format(t=t) for t in topics for tmpl in TEMPLATES]
    random.Random(seed).shuffle(out)
    return out


def _load_target(threads: int):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    folder = smollm2.target_folder()
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, trust_remote_code=False).eval()
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    return model, tok


def _chat(tok, prompt: str) -> list[int]:
    ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def _log(work: Path, msg: str) -> None:
    line = f"{time.strftime('%H:%M:%S')} {msg}"
    print(line, flush=True)
    with open(work / "log.txt", "a") as f:
        f.write(line + "\n")


@torch.inference_mode()
def _sample_batch(model, tok, prompt_ids: list[list[int]], temperature: float, max_new: int, top_k: int, seed: int):
    """Left-padded batched sampling; returns per row (prompt ids, answer ids, topk ids, topk logp)."""
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    width = max(len(p) for p in prompt_ids)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompt_ids])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompt_ids])
    torch.manual_seed(seed)
    out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new, do_sample=temperature > 0,
                         temperature=temperature if temperature > 0 else None, top_k=0, top_p=1.0,
                         output_logits=True, return_dict_in_generate=True, pad_token_id=pad)
    answers = out.sequences[:, width:]
    logp = torch.stack(out.logits, 1).float().log_softmax(-1)  # [B, n, V]
    top = logp.topk(top_k, -1)
    rows = []
    eos = tok.eos_token_id
    for b, p in enumerate(prompt_ids):
        a = answers[b].tolist()
        n = a.index(eos) + 1 if eos in a else len(a)  # keep the end token: the draft must predict it too
        rows.append({"prompt": p, "answer": a[:n], "topk_ids": top.indices[b, :n].to(torch.int32).clone(),
                     "topk_logp": top.values[b, :n].half().clone(), "temperature": temperature})
    return rows


def generate(args) -> None:
    work = Path(args.work)
    (work / "data").mkdir(parents=True, exist_ok=True)
    model, tok = _load_target(args.threads)
    train_prompts = prompts("train", args.seed)
    temps = [float(t) for t in args.temperatures.split(",")]
    deadline = time.time() + 60 * args.minutes_generate
    shard = 0
    done_tokens = sum(torch.load(f)["tokens"] for f in glob.glob(str(work / "data" / "chat_*.pt")))
    while time.time() < deadline and not (args.shards and shard >= args.shards):
        path = work / "data" / f"chat_{shard:04d}.pt"
        if path.exists():
            shard += 1
            continue
        start = (shard * args.batch) % len(train_prompts)
        batch = [train_prompts[(start + i) % len(train_prompts)] for i in range(args.batch)]
        temp = temps[shard % len(temps)]
        t0 = time.perf_counter()
        rows = _sample_batch(model, tok, [_chat(tok, p) for p in batch], temp, args.max_new, args.top_k,
                             seed=args.seed * 100003 + shard)
        tokens = sum(len(r["answer"]) for r in rows)
        torch.save({"rows": rows, "tokens": tokens}, path)
        done_tokens += tokens
        _log(work, f"chat shard {shard} T={temp}: {tokens} tokens in {time.perf_counter() - t0:.0f} s "
             f"({done_tokens} in all)")
        shard += 1
    # Shakespeare: passages scored in one forward pass (the whole passage is "answer")
    if args.shakespeare_tokens and not (work / "data" / "shakespeare.pt").exists():
        texts = sorted(Path(args.corpus).glob("*.txt")) if args.corpus else []
        rng = random.Random(args.seed)
        rows, total, t0 = [], 0, time.perf_counter()
        while total < args.shakespeare_tokens and texts:
            text = rng.choice(texts).read_text(errors="ignore")
            at = rng.randrange(0, max(len(text) - 2000, 1))
            ids = tok(text[at:at + 2000], add_special_tokens=False)["input_ids"][1:129]
            with torch.inference_mode():
                logp = model(torch.tensor([ids])).logits[0, :-1].float().log_softmax(-1)
            top = logp.topk(args.top_k, -1)
            rows.append({"prompt": ids[:1], "answer": ids[1:], "topk_ids": top.indices.to(torch.int32),
                         "topk_logp": top.values.half(), "temperature": None})
            total += len(ids) - 1
        torch.save({"rows": rows, "tokens": total}, work / "data" / "shakespeare.pt")
        _log(work, f"shakespeare: {total} tokens in {time.perf_counter() - t0:.0f} s")


def _rows(work: Path) -> list[dict]:
    rows = []
    for f in sorted(glob.glob(str(Path(work) / "data" / "*.pt"))):
        rows.extend(torch.load(f)["rows"])
    return rows


def vocab(args) -> torch.Tensor:
    """The draft's vocabulary: the args.vocab most frequent tokens in the target's chat answers (ties by id)."""
    work = Path(args.work)
    counts = torch.zeros(49152, dtype=torch.long)
    for r in _rows(work):
        if r["temperature"] is not None:
            counts += torch.bincount(torch.tensor(r["answer"]), minlength=counts.numel())
    order = sorted(range(counts.numel()), key=lambda i: (-int(counts[i]), i))
    ids = torch.tensor(sorted(order[: args.vocab]), dtype=torch.int32)
    covered = counts[ids.long()].sum().item() / max(counts.sum().item(), 1)
    _log(work, f"vocab: {args.vocab} of {int((counts > 0).sum())} seen tokens cover {covered:.4f} of answer tokens")
    torch.save(ids, work / "vocab.pt")
    return ids


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


def scheduled_lr(base: float, step: int, frac: float, warmup: int) -> float:
    """Linear warm-up over `warmup` steps, then cosine from base to 0.1 x base over the time budget."""
    return base * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0))))


def optimizer_step(opt, params, loss, lr: float) -> None:
    for g in opt.param_groups:
        g["lr"] = lr
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()


def train(args) -> None:
    work = Path(args.work)
    torch.manual_seed(args.seed)
    model, _ = _load_target(args.threads)
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
    rows = [r for r in _rows(work) if len(r["answer"])]
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
        _log(work, f"resumed at step {step} ({elapsed / 60:.1f} min)")
    budget = 60 * args.minutes_train
    t0 = time.time() - elapsed
    total_tokens = sum(len(r["answer"]) for r in rows)
    _log(work, f"train: {len(rows)} sequences, {total_tokens} answer tokens; layers {layers}; vocab {len(ids)}")
    draft.train()
    done = False
    while not done:
        rng = random.Random(args.seed * 7919 + epoch)
        for i, batch in enumerate(_batches(rows, args.batch_tokens, rng)):
            lr = scheduled_lr(args.lr, step, (time.time() - t0) / budget, warmup=30)
            loss, overlap, _ = _loss(draft, head_w, index_of, batch, args.tv_weight)
            optimizer_step(opt, params, loss, lr)
            step += 1
            if step % 20 == 0:
                with torch.no_grad():
                    draft.eval()
                    _, ev, _ = _loss(draft, head_w, index_of, eval_rows, 0.0)
                    draft.train()
                _log(work, f"step {step} epoch {epoch} loss {loss.item():.4f} overlap(top-k) {overlap:.3f} "
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
    _log(work, f"train done: {step} steps, {epoch} epochs, {(time.time() - t0) / 60:.1f} min")


def save(args) -> None:
    """Write the draft folder: config, own tensors (float16), vocabulary, and what it shares."""
    from safetensors.torch import save_file

    work, out = Path(args.work), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model, tok = _load_target(args.threads)
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
    _log(work, f"saved {out}: {sum(f.stat().st_size for f in out.iterdir()) / 1e6:.1f} MB")


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
    model, tok = _load_target(args.threads)
    draft = load_draft(args.out, model)
    held = prompts("held-out", args.seed)[: args.eval_prompts]
    result = {}
    for temp in (1.0, 0.7, 0.0):
        total, n = 0.0, 0
        for b in range(0, len(held), 8):
            batch = [_chat(tok, p) for p in held[b:b + 8]]
            rows = _sample_batch(model, tok, batch, temp, args.eval_tokens, 1, seed=args.seed + 17 + b)
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
        _log(work, f"held-out alpha at T={temp:g}: {total / n:.4f} over {n} tokens")
    (work / "eval.json").write_text(json.dumps(result, indent=1))
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m specviz.tools.distill", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=("generate", "vocab", "features", "train", "save", "evaluate", "all"))
    parser.add_argument("--draft", choices=("layers", "features"), default="features",
                        help="layers: a few of the target's layers on tokens alone; features: one layer reading "
                             "the target's hidden states (EAGLE; tools/distill_features.py)")
    parser.add_argument("--work", default=str(Path.home() / ".cache" / "specviz" / "distill"))
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--minutes-generate", type=float, default=30)
    parser.add_argument("--minutes-train", type=float, default=40)
    parser.add_argument("--batch", type=int, default=48, help="prompts sampled together")
    parser.add_argument("--shards", type=int, default=0, help="stop after this many batches (0: at the time budget)")
    parser.add_argument("--max-new", type=int, default=160)
    parser.add_argument("--temperatures", default="1.0,0.7,1.0,1.2")
    parser.add_argument("--top-k", type=int, default=32, help="target log-probabilities kept per position")
    parser.add_argument("--shakespeare-tokens", type=int, default=20000)
    parser.add_argument("--corpus", default=None,
                        help="folder of Shakespeare .txt works for the passages (`python -m specviz corpus --out DIR`)")
    parser.add_argument("--vocab", type=int, default=8192, help="the draft's vocabulary size")
    parser.add_argument("--layers", default="0,1", help="target layers the draft starts from")
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--batch-tokens", type=int, default=2048)
    parser.add_argument("--tv-weight", type=float, default=0.5)
    parser.add_argument("--eval-prompts", type=int, default=40)
    parser.add_argument("--eval-tokens", type=int, default=64)
    parser.add_argument("--feature-noise", type=float, default=0.1, help="features: uniform noise on the features read")
    parser.add_argument("--feature-layers", type=int, default=1, help="features: the draft's decoder layers")
    parser.add_argument("--checkpoint", default="train_features.pt", help="features: the training checkpoint under --work")
    parser.add_argument("--unroll", type=int, default=2, help="features: levels of the draft reading its own guesses")
    parser.add_argument("--reg-weight", type=float, default=1.0, help="features: weight of the feature regression")
    args = parser.parse_args(argv)
    Path(args.work).mkdir(parents=True, exist_ok=True)
    if args.draft == "features":
        from . import distill_features

        stages = {"generate": generate, "vocab": vocab, "features": distill_features.features,
                  "train": distill_features.train, "save": distill_features.save, "evaluate": distill_features.evaluate}
    else:
        stages = {"generate": generate, "vocab": vocab, "train": train, "save": save, "evaluate": evaluate}
    if args.stage not in stages and args.stage != "all":
        parser.error(f"the {args.stage} stage belongs to --draft features")
    if args.stage in ("generate", "all") and args.shakespeare_tokens and not args.corpus:
        parser.error("--shakespeare-tokens needs --corpus DIR (python -m specviz corpus --out DIR), or 0")
    for stage in stages if args.stage == "all" else (args.stage,):
        stages[stage](args)


if __name__ == "__main__":
    main()
