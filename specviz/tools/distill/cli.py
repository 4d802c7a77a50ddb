"""Distil the offline SmolLM2-135M-Instruct pair's draft from the target's own answers.

    python -m specviz.tools.distill all --work ~/.cache/specviz/distill --minutes-generate 30 --minutes-train 40

With --draft features (the default) the features, train, save and evaluate stages are those of
`features.py` (a draft that reads the target's hidden states); --draft layers keeps the plain
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

The stages live beside this entry: data.py (generate, vocab), layers.py (the plain draft), features.py
(the feature-reading draft), optim.py (what both train with).
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..cli_values import OneLineParser, thread_count
from . import features, layers
from .data import generate, vocab

DEFAULT_OUT = Path(__file__).resolve().parents[3] / "assets" / "models" / "smollm2-draft"


TARGET_LAYERS = 30  # SmolLM2-135M's decoder layers (--layers, --feature-layers)
VOCAB = 49152       # its vocabulary (--vocab, --top-k)
WHOLE = {"batch": 1, "shards": 0, "first_shard": 0, "max_new": 1, "top_k": 1, "shakespeare_tokens": 0, "vocab": 1,
         "batch_tokens": 1, "eval_prompts": 1, "eval_tokens": 1, "feature_layers": 1, "unroll": 1}  # flag: least
HIGHEST = {"top_k": VOCAB, "vocab": VOCAB, "feature_layers": TARGET_LAYERS}
NUMBERS = {"minutes_generate": 0.0, "minutes_train": 0.0, "tv_weight": 0.0, "feature_noise": 0.0,
           "reg_weight": 0.0}   # finite numbers >= these; --lr: finite and > 0


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _check(parser: argparse.ArgumentParser, args) -> None:
    """Flags that argparse's types cannot check alone, all before any stage runs: one error line naming the flag
    and its range, exit 2."""
    for name, least in WHOLE.items():
        value, most = getattr(args, name), HIGHEST.get(name)
        if value < least or (most is not None and value > most):
            span = f"in {least}..{most}" if most is not None else f">= {least}"
            parser.error(f"{_flag(name)} is a whole number {span}, not {value}")
    for name, least in NUMBERS.items():
        value = getattr(args, name)
        if not (math.isfinite(value) and value >= least):
            parser.error(f"{_flag(name)} is a finite number >= {least:g}, not {value}")
    if not (math.isfinite(args.lr) and args.lr > 0):
        parser.error(f"--lr is a finite number > 0, not {args.lr}")
    try:
        temperatures = [float(t) for t in args.temperatures.split(",")]
    except ValueError:
        temperatures = []
    if not temperatures or not all(math.isfinite(t) and t >= 0 for t in temperatures):
        parser.error(f"--temperatures is a comma-separated list of finite numbers >= 0, not {args.temperatures!r}")
    try:
        target_layers = [int(x) for x in args.layers.split(",")]
    except ValueError:
        target_layers = []
    if not target_layers or not all(0 <= i < TARGET_LAYERS for i in target_layers):
        parser.error(f"--layers is a comma-separated list of the target's layers, whole numbers in "
                     f"0..{TARGET_LAYERS - 1}, not {args.layers!r}")
    if Path(args.checkpoint).name != args.checkpoint or args.checkpoint in ("", ".", ".."):
        parser.error(f"--checkpoint is a file name inside --work, not a path: {args.checkpoint!r}")
    if args.init is not None and (args.draft != "features" or not all(
            (Path(args.init) / name).is_file() for name in ("config.json", "model.safetensors", "feature_fc.safetensors",
                                                            "vocab_subset.safetensors"))):
        parser.error(f"--init takes a saved feature draft's folder (config.json, model.safetensors, "
                     f"feature_fc.safetensors, vocab_subset.safetensors) with --draft features: {args.init!r} is not one")
    if args.stage in ("generate", "all") and args.shakespeare_tokens and not args.corpus:
        parser.error("--shakespeare-tokens needs --corpus DIR (python -m specviz corpus --out DIR), or 0")


def _missing_inputs(stage: str, args) -> str:
    """What `stage` reads from --work that an earlier stage writes and is not there ('' when all is): checked
    before the stage loads any model."""
    work = Path(args.work)
    checkpoint = args.checkpoint if args.draft == "features" else "train.pt"
    needs = {"vocab": ["data/*.pt"], "features": ["data/*.pt", "vocab.pt"],
             "train": [] if args.init else ["vocab.pt"], "save": [checkpoint, "vocab.pt"]}.get(stage, [])
    if args.draft == "features" and stage == "train":
        needs.append("features/*.pt")
    return next((need for need in needs if not any(work.glob(need))), "")


def build_parser() -> OneLineParser:
    """The stages' flags (their ranges are checked by `_check`)."""
    parser = OneLineParser(prog="python -m specviz distill-smollm2", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=("generate", "vocab", "features", "train", "save", "evaluate", "all"))
    parser.add_argument("--draft", choices=("layers", "features"), default="features",
                        help="layers: a few of the target's layers on tokens alone; features: one layer reading "
                             "the target's hidden states (EAGLE; tools/distill/features.py)")
    parser.add_argument("--work", default=str(Path.home() / ".cache" / "specviz" / "distill"))
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=thread_count, default=1)
    parser.add_argument("--minutes-generate", type=float, default=30)
    parser.add_argument("--minutes-train", type=float, default=40)
    parser.add_argument("--batch", type=int, default=48, help="prompts sampled together")
    parser.add_argument("--shards", type=int, default=0, help="stop after this many batches (0: at the time budget)")
    parser.add_argument("--first-shard", type=int, default=0,
                        help="generate: the first batch (its prompts and seed), so two processes can share the work")
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
    parser.add_argument("--init", default=None,
                        help="features: train on from a saved draft folder (its layers, feature_fc and vocabulary) "
                             "instead of the target's last layers")
    parser.add_argument("--unroll", type=int, default=2, help="features: levels of the draft reading its own guesses")
    parser.add_argument("--reg-weight", type=float, default=1.0, help="features: weight of the feature regression")
    return parser


def main(argv=None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.draft == "features":
        stages = {"generate": generate, "vocab": vocab, "features": features.features,
                  "train": features.train, "save": features.save, "evaluate": features.evaluate}
    else:
        stages = {"generate": generate, "vocab": vocab, "train": layers.train, "save": layers.save,
                  "evaluate": layers.evaluate}
    if args.stage not in stages and args.stage != "all":
        parser.error(f"the {args.stage} stage belongs to --draft features")
    _check(parser, args)
    try:
        Path(args.work).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        parser.error(f"--work {args.work!r} cannot be made: {error.strerror or error}")
    for stage in stages if args.stage == "all" else (args.stage,):
        if missing := _missing_inputs(stage, args):
            parser.error(f"the {stage} stage needs {missing} in --work {args.work}: run the stages before it "
                         f"(generate, vocab{', features' if args.draft == 'features' else ''}) there first")
        try:
            stages[stage](args)
        except features.NotASavedDraft as error:
            parser.error(str(error).splitlines()[0])
        except FileNotFoundError as error:  # a stage before this one has not run in --work, or --out cannot be made
            parser.error(f"the {stage} stage cannot find {error.filename}: run the stages before it (generate, "
                         f"vocab{', features' if args.draft == 'features' else ''}) with the same --work, and give "
                         f"--out a folder that can be made")
        except OSError as error:
            parser.error(f"the {stage} stage cannot write or read {error.filename}: {error.strerror or error}")


if __name__ == "__main__":
    main()
