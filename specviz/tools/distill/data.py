"""What both distillation recipes read: the chat prompts, the target, and its own answers.

Stages (each resumable: finished shards are kept under --work):
  generate  the target answers chat prompts written from topic x question templates (training topics
            only), sampled at several temperatures; each answer position keeps the target's top-k
            log-probabilities (the logits `generate` computed anyway). Plus Shakespeare passages
            scored by the target in one forward pass each.
  vocab     the draft's vocabulary: the most frequent tokens of the target's samples (FR-Spec style).
"""
from __future__ import annotations

import glob
import random
import time
from pathlib import Path

import torch

from ...engine.models import smollm2

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


def load_target(threads: int):
    """SmolLM2-135M-Instruct (float32) and its tokenizer, torch running on `threads` threads."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    folder = smollm2.target_folder()
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, trust_remote_code=False).eval()
    tok = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    return model, tok


def chat_ids(tok, prompt: str) -> list[int]:
    """A user turn in the chat template, ready for the assistant's answer."""
    ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def log(work: Path, msg: str) -> None:
    """A timed line on stdout and in --work/log.txt."""
    line = f"{time.strftime('%H:%M:%S')} {msg}"
    print(line, flush=True)
    with open(work / "log.txt", "a") as f:
        f.write(line + "\n")


@torch.inference_mode()
def sample_batch(model, tok, prompt_ids: list[list[int]], temperature: float, max_new: int, top_k: int, seed: int):
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
    model, tok = load_target(args.threads)
    train_prompts = prompts("train", args.seed)
    temps = [float(t) for t in args.temperatures.split(",")]
    deadline = time.time() + 60 * args.minutes_generate
    shard = args.first_shard
    done_tokens = sum(torch.load(f)["tokens"] for f in glob.glob(str(work / "data" / "chat_*.pt")))
    while time.time() < deadline and not (args.shards and shard >= args.first_shard + args.shards):
        path = work / "data" / f"chat_{shard:04d}.pt"
        if path.exists():
            shard += 1
            continue
        start = (shard * args.batch) % len(train_prompts)
        batch = [train_prompts[(start + i) % len(train_prompts)] for i in range(args.batch)]
        temp = temps[shard % len(temps)]
        t0 = time.perf_counter()
        rows = sample_batch(model, tok, [chat_ids(tok, p) for p in batch], temp, args.max_new, args.top_k,
                             seed=args.seed * 100003 + shard)
        tokens = sum(len(r["answer"]) for r in rows)
        torch.save({"rows": rows, "tokens": tokens}, path)
        done_tokens += tokens
        log(work, f"chat shard {shard} T={temp}: {tokens} tokens in {time.perf_counter() - t0:.0f} s "
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
        log(work, f"shakespeare: {total} tokens in {time.perf_counter() - t0:.0f} s")


def stored_rows(work: Path) -> list[dict]:
    """Every stored row of the generate stage (chat shards, then the Shakespeare passages)."""
    rows = []
    for f in sorted(glob.glob(str(Path(work) / "data" / "*.pt"))):
        rows.extend(torch.load(f)["rows"])
    return rows


def vocab(args) -> torch.Tensor:
    """The draft's vocabulary: the args.vocab most frequent tokens in the target's chat answers (ties by id)."""
    work = Path(args.work)
    counts = torch.zeros(49152, dtype=torch.long)
    for r in stored_rows(work):
        if r["temperature"] is not None:
            counts += torch.bincount(torch.tensor(r["answer"]), minlength=counts.numel())
    order = sorted(range(counts.numel()), key=lambda i: (-int(counts[i]), i))
    ids = torch.tensor(sorted(order[: args.vocab]), dtype=torch.int32)
    covered = counts[ids.long()].sum().item() / max(counts.sum().item(), 1)
    log(work, f"vocab: {args.vocab} of {int((counts > 0).sum())} seen tokens cover {covered:.4f} of answer tokens")
    torch.save(ids, work / "vocab.pt")
    return ids
