"""The smollm2-local draft that reads the target's hidden states (EAGLE: Li, Wei, Zhang and Zhang,
"EAGLE: Speculative Sampling Requires Rethinking Feature Uncertainty", arXiv:2401.15077).

    python -m specviz distill-smollm2 all --draft features --work ~/.cache/specviz/distill

It shares `data.py`'s data (the target's own answers to chat prompts, with its top-k log-probabilities,
and Shakespeare passages) and vocabulary stage, and replaces three stages:
  features  one target forward per stored sequence: its last hidden state (after the final norm, what
            the head reads) at every position, stored in float16 beside the data.
  train     a 1-layer llama decoder (--feature-layers; started from the target's last layers and final norm) whose input
            at position j is fc([embed(t_j); f_{j-1}]); its output should be f_j. Loss: smooth L1 to f_j
            (EAGLE's regression) + cross-entropy of the target's top-k under q = softmax(head(output)),
            with uniform noise on the input features (EAGLE: robustness to its own guesses, which it
            reads while drafting).
  save      the draft folder: config (1 layer), its own tensors (float16), feature_fc.safetensors, the
            vocabulary subset, and specviz_shared.json saying what it takes from the target.
  evaluate  through the engine itself (SpeculativeDecoder, gamma 4) on held-out prompts: alpha by drafted
            position (1 = read the target's feature, 2.. = read its own guesses) at T = 1, 0.7 and 0.

Seeded throughout; one thread unless --threads.
"""
from __future__ import annotations

import glob
import json
import random
import time
from pathlib import Path

import torch

from ...engine.models import smollm2
from .data import load_target, log, prompts
from .optim import optimizer_step, scheduled_lr


def _feature_path(work: Path, data_file: str) -> Path:
    return work / "features" / Path(data_file).name


@torch.inference_mode()
def features(args) -> None:
    work = Path(args.work)
    (work / "features").mkdir(exist_ok=True)
    model, _ = load_target(args.threads)
    for data_file in sorted(glob.glob(str(work / "data" / "*.pt"))):
        dst = _feature_path(work, data_file)
        if dst.exists():
            continue
        t0, rows, out = time.perf_counter(), torch.load(data_file)["rows"], []
        for i in range(0, len(rows), 8):
            seqs = [r["prompt"] + r["answer"] for r in rows[i:i + 8]]
            width = max(map(len, seqs))
            ids = torch.tensor([s + [0] * (width - len(s)) for s in seqs])  # right padding: causal is enough
            hidden = model.model(input_ids=ids).last_hidden_state            # [B, width, H]
            out += [hidden[b, : len(s)].half().clone() for b, s in enumerate(seqs)]
        torch.save(out, dst)
        log(work, f"features {dst.name}: {len(rows)} sequences in {time.perf_counter() - t0:.0f} s")


def make_draft(target, layers: int = 1):
    """A LlamaForCausalLM of `layers` layers (copies of the target's last ones) and its final norm, plus
    its feature_fc."""
    from transformers import AutoConfig, LlamaForCausalLM

    config = AutoConfig.for_model(**{**target.config.to_dict(), "num_hidden_layers": layers, "tie_word_embeddings": False})
    config.model_type = "llama"
    draft = LlamaForCausalLM(config)
    for i in range(layers):
        draft.model.layers[i].load_state_dict(target.model.layers[i - layers].state_dict())
    draft.model.norm.load_state_dict(target.model.norm.state_dict())
    hidden = config.hidden_size
    fc = torch.nn.Linear(2 * hidden, hidden)
    with torch.no_grad():  # start as the mean of the token's embedding and the feature
        fc.weight.zero_()
        fc.bias.zero_()
        fc.weight[:, :hidden] += 0.5 * torch.eye(hidden)
        fc.weight[:, hidden:] += 0.5 * torch.eye(hidden)
    draft.feature_fc = fc
    return draft


class NotASavedDraft(ValueError):
    """--init or --out names a folder that `save` did not write (the command line says so in one line)."""


SAVED_FILES = {"config.json", "generation_config.json", "model.safetensors", "feature_fc.safetensors",
               "vocab_subset.safetensors", smollm2.SHARED_FILE, "tokenizer.json", "tokenizer_config.json",
               "special_tokens_map.json", "chat_template.jinja"}  # what `save` writes (tokenizer files by version)


def load_saved(target, folder: Path):
    """A draft folder written by `save` (or shipped), as (vocabulary ids, float32 draft) to train on."""
    from safetensors.torch import load_file

    try:
        draft = make_draft(target, json.loads((folder / "config.json").read_text())["num_hidden_layers"])
        missing, unexpected = draft.load_state_dict(
            {k: v.float() for k, v in load_file(str(folder / "model.safetensors")).items()}, strict=False)
        draft.feature_fc.load_state_dict({k: v.float() for k, v in load_file(str(folder / "feature_fc.safetensors")).items()})
        ids = load_file(str(folder / "vocab_subset.safetensors"))["ids"].long()
    except Exception as error:  # a folder of other files: json, safetensors and torch each fail their own way
        raise NotASavedDraft(f"--init {folder} is not a saved feature draft: {error}") from error
    if unexpected or any(not k.startswith(("model.embed_tokens", "lm_head", "feature_fc")) for k in missing):
        raise NotASavedDraft(f"--init {folder} is not a saved feature draft (missing {missing}, unexpected {unexpected})")
    return ids, draft


def prior_training(init: str | None) -> dict | None:
    """What the draft trained on from (--init) says of its own training, kept in the new draft's record."""
    if not init:
        return None
    shared = Path(init) / smollm2.SHARED_FILE
    return json.loads(shared.read_text()).get("training") if shared.exists() else {}


def _sequences(work: Path) -> list[tuple]:
    """(token ids, features [L, H], start, top-k ids, top-k log-probs) per stored sequence with features."""
    out = []
    for data_file in sorted(glob.glob(str(work / "data" / "*.pt"))):
        path = _feature_path(work, data_file)
        if not path.exists():
            continue
        for r, f in zip(torch.load(data_file)["rows"], torch.load(path)):
            if len(r["answer"]) > 1:
                out.append((r["prompt"] + r["answer"], f.float(), len(r["prompt"]) - 1, r["topk_ids"].long(),
                            r["topk_logp"].float()))
    return out


def _run(draft, embed, batch, fed: list[torch.Tensor], noise: float, generator: torch.Generator | None):
    """The draft over each sequence, fed `fed[b]` [L-1, H] beside tokens 1..L-1 (the feature of the position
    before each): its output [B, L-1, H], at position j its guess of the target's f_j."""
    hidden = embed.weight.shape[1]
    width = max(len(s[0]) for s in batch) - 1
    x = torch.zeros(len(batch), width, 2 * hidden)
    for b, (tokens, *_) in enumerate(batch):
        n = len(tokens) - 1
        f = fed[b][:n]
        if noise:  # EAGLE's uniform noise on the features it reads
            f = f + noise * (2 * torch.rand(f.shape, generator=generator) - 1)
        x[b, :n, :hidden] = embed.weight[torch.tensor(tokens[1:])]
        x[b, :n, hidden:] = f
    return draft.model(inputs_embeds=draft.feature_fc(x)).last_hidden_state


def feature_loss(draft, embed, head_w, index_of, batch, noise, reg_weight, generator=None, unroll: int = 1):
    """Regression to the target's features + cross-entropy of its top-k, averaged over `unroll` levels: level 1
    reads the target's features; level k reads, at each position, the draft's own level k-1 guess of the
    feature before it (as when it drafts its k-th token: EAGLE-3's training-time test, Li et al. 2025).
    Returns the loss and the top-k overlap sum min(p, q) at each level."""
    fed = [feats[:-1] for _, feats, *_ in batch]  # level 1: f_{j-1}, the target's own
    total, overlaps = 0.0, []
    for _ in range(unroll):
        out = _run(draft, embed, batch, fed, noise, generator)
        hidden = out.shape[-1]
        reg, ce, overlap, n = 0.0, 0.0, 0.0, 0
        for b, (tokens, feats, start, tk_ids, tk_logp) in enumerate(batch):
            js = torch.arange(max(start, 1), len(tokens) - 1)   # positions whose next token is an answer token
            guess, true = out[b, js - 1], feats[js]             # [m, H]
            reg = reg + torch.nn.functional.smooth_l1_loss(guess, true, reduction="sum") / hidden
            k0 = int(js[0]) - start
            p = tk_logp[k0:k0 + len(js)].exp()                  # [m, k] the target's top-k at T = 1
            j = index_of[tk_ids[k0:k0 + len(js)]]
            inside = j >= 0
            logq = (guess @ head_w.T).log_softmax(-1).gather(1, j.clamp(min=0))
            ce = ce - (p * logq * inside).sum()
            overlap += (torch.minimum(p, logq.exp()) * inside).sum().item()
            n += len(js)
        total = total + (reg_weight * reg / n + ce / n) / unroll
        overlaps.append(overlap / n)
        # the next level reads, beside token j, the draft's guess of f_{j-1} (the first position keeps f_0)
        fed = [torch.cat([feats[:1], out[b, : len(tokens) - 2].detach()]) for b, (tokens, feats, *_) in enumerate(batch)]
    return total, overlaps


def train(args) -> None:
    work = Path(args.work)
    torch.manual_seed(args.seed)
    target, _ = load_target(args.threads)
    if args.init:  # train on from a saved draft: its vocabulary is the head's, so it is the one saved after
        ids, draft = load_saved(target, Path(args.init))
        torch.save(ids.to(torch.int32), work / "vocab.pt")
        draft.train()
    else:
        ids = torch.load(work / "vocab.pt").long()
        draft = make_draft(target, args.feature_layers).train()
    embed = target.get_input_embeddings()
    head_w = target.lm_head.weight[ids].detach().clone()
    index_of = torch.full((target.config.vocab_size,), -1, dtype=torch.long)
    index_of[ids] = torch.arange(len(ids))
    seqs = _sequences(work)
    if not seqs:
        raise SystemExit("no features: run the generate and features stages first")
    watch, seqs = seqs[:48], seqs[48:]
    params = [p for n, p in draft.named_parameters() if not n.startswith(("model.embed_tokens", "lm_head"))]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0, betas=(0.9, 0.95))
    generator = torch.Generator().manual_seed(args.seed)
    log(work, f"train (features): {len(seqs)} sequences, {sum(len(s[0]) - s[2] - 1 for s in seqs)} "
                 f"answer tokens; vocab {len(ids)}")
    t0, step, epoch, budget = time.time(), 0, 0, 60 * args.minutes_train
    while time.time() - t0 < budget:
        order = list(range(len(seqs)))
        random.Random(args.seed * 7919 + epoch).shuffle(order)
        for i in range(0, len(order), 8):
            lr = scheduled_lr(args.lr, step, (time.time() - t0) / budget, warmup=20)
            loss, overlap = feature_loss(draft, embed, head_w, index_of, [seqs[j] for j in order[i:i + 8]],
                                  args.feature_noise, args.reg_weight, generator, unroll=args.unroll)
            optimizer_step(opt, params, loss, lr)
            step += 1
            if step % 50 == 0:
                with torch.no_grad():
                    _, watched = feature_loss(draft.eval(), embed, head_w, index_of, watch, 0.0, args.reg_weight,
                                              unroll=3)
                    draft.train()
                log(work, f"step {step} epoch {epoch} loss {loss.item():.3f} overlap(top-k) {overlap[0]:.3f} "
                             f"watch by depth {[round(w, 3) for w in watched]} lr {lr:.1e} {(time.time() - t0) / 60:.1f} min")
            if time.time() - t0 >= budget:
                break
        epoch += 1
    own = {k: v for k, v in draft.state_dict().items() if not k.startswith(("model.embed_tokens", "lm_head"))}
    torch.save({"model": own, "step": step, "epoch": epoch, "elapsed": time.time() - t0,
                "layers": draft.config.num_hidden_layers, "prior_training": prior_training(args.init)},
               work / args.checkpoint)
    log(work, f"train (features) done: {step} steps, {epoch} epochs, {(time.time() - t0) / 60:.1f} min")


def save(args) -> None:
    from safetensors.torch import save_file

    work, out = Path(args.work), Path(args.out)
    state = torch.load(work / args.checkpoint)
    out.mkdir(parents=True, exist_ok=True)
    others = sorted(p.name for p in out.iterdir() if p.name not in SAVED_FILES or not p.is_file())
    if others:  # what it replaces is only a saved draft's own files: never a folder given by mistake
        raise NotASavedDraft(f"--out {out} holds files a saved draft does not ({', '.join(others[:5])}): give an "
                             f"empty folder or a saved draft's own")
    for stale in out.iterdir():
        stale.unlink()
    target, tok = load_target(args.threads)
    draft = make_draft(target, state["layers"])
    draft.load_state_dict(state["model"], strict=False)
    own = {k: v.half().contiguous() for k, v in draft.state_dict().items()
           if k.startswith("model.") and not k.startswith("model.embed_tokens")}
    save_file(own, str(out / "model.safetensors"), metadata={"format": "pt"})
    save_file({k: v.half().contiguous() for k, v in draft.feature_fc.state_dict().items()},
              str(out / "feature_fc.safetensors"))
    draft.config.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    save_file({"ids": torch.load(work / "vocab.pt").to(torch.int32).contiguous()}, str(out / "vocab_subset.safetensors"))
    (out / smollm2.SHARED_FILE).write_text(json.dumps({
        "target": "SmolLM2-135M-Instruct", "embeddings": "shared with the target",
        "vocab_subset": "vocab_subset.safetensors", "feature_fc": "feature_fc.safetensors",
        "reads": "the target's last hidden state (EAGLE, arXiv:2401.15077)", "layers_from_target": f"the last {state['layers']}",
        "training": {"steps": state["step"], "epochs": state["epoch"], "minutes": round(state["elapsed"] / 60, 1),
                     **({"trained_on_from": state["prior_training"]} if state.get("prior_training") is not None else {})}},
        indent=1) + "\n")
    log(work, f"saved {out}: {sum(f.stat().st_size for f in out.iterdir()) / 1e6:.1f} MB")


def evaluate(args) -> dict:
    """alpha by drafted position through the engine: SpeculativeDecoder (gamma 4) on held-out prompts,
    mean sum_x min(p, q) over every examined position (those after an acceptance are the target's own
    samples), at T = 1, 0.7 and 0 (at T = 0: the share of positions where the argmaxes agree)."""
    from ...core.config import DecodeConfig
    from ...engine.decoding.decoders import SpeculativeDecoder
    from ...engine.models.loading import load_pair
    from ...engine.models.presets import Preset

    work = Path(args.work)
    torch.set_num_threads(args.threads)
    pair = load_pair(Preset(draft=str(args.out), target=smollm2.TARGET_REF, name="smollm2-eval", chat=True), device="cpu")
    held = prompts("held-out", args.seed)[: args.eval_prompts]
    result = {}
    for temp in (1.0, 0.7, 0.0):
        sums, counts, accepted, examined = [0.0] * 4, [0] * 4, 0, 0
        for i, prompt in enumerate(held):
            dec = SpeculativeDecoder(pair, prompt, DecodeConfig(gamma=4, temperature=temp, seed=args.seed + i,
                                                                max_new_tokens=args.eval_tokens))
            while not dec.finished:
                trace = dec.step()
                for pos in trace.positions[: trace.n_accepted + 1]:
                    sums[pos.index] += pos.overlap
                    counts[pos.index] += 1
                accepted, examined = accepted + trace.n_accepted, examined + min(trace.n_accepted + 1, 4)
        key = f"T{temp:g}"
        result[f"alpha_{key}"] = round(sum(sums) / sum(counts), 4)
        result[f"alpha_by_position_{key}"] = [round(s / max(c, 1), 4) for s, c in zip(sums, counts)]
        result[f"positions_{key}"] = sum(counts)
        result[f"accepted_share_{key}"] = round(accepted / examined, 4)
        log(work, f"held-out (engine, gamma 4) T={temp:g}: alpha {result[f'alpha_{key}']} by position "
                     f"{result[f'alpha_by_position_{key}']} over {sum(counts)} positions")
    (work / "eval_features.json").write_text(json.dumps(result, indent=1))
    return result
