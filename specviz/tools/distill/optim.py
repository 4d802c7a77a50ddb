"""The learning-rate schedule and the optimiser step both distillation recipes train with."""
from __future__ import annotations

import math

import torch


def scheduled_lr(base: float, step: int, frac: float, warmup: int) -> float:
    """Linear warm-up over `warmup` steps, then cosine from base to 0.1 x base over the time budget."""
    return base * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0))))


def optimizer_step(opt, params, loss, lr: float) -> None:
    """One AdamW step at `lr`, gradients clipped to norm 1."""
    for g in opt.param_groups:
        g["lr"] = lr
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
