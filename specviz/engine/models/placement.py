"""Where and in what a pair runs: the device, the dtype, and the engine's per-device choices for the models.

The device and dtype asked for are checked here (a ModelLoadError names what is wrong); `fit_to_device` then
makes the choices `loading` applies to every pair it reads: a bfloat16 draft and an exact bfloat16 target on a CPU
that computes bfloat16 natively, and rows-first linear layers on any CPU.
"""
from __future__ import annotations

import torch

from .. import settings
from .cpu_linear import use_rows_first_linears
from .draft_precision import convert_draft, draft_dtype
from .presets import ModelLoadError
from .target_precision import bf16_target_pays, convert_target


def pick_device(device: str | None = None) -> torch.device:
    if device:
        try:
            dev = torch.device(device)
        except RuntimeError as err:
            raise ModelLoadError(f"unknown device {device!r}: use cuda, mps or cpu") from err
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ModelLoadError(f"device {device!r} asked for, but this machine has no CUDA GPU (try cpu)")
        if dev.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ModelLoadError(f"device {device!r} asked for, but MPS is not available here (try cpu)")
        if dev.type not in ("cuda", "mps", "cpu"):
            raise ModelLoadError(f"unsupported device {device!r}: use cuda, mps or cpu")
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def pick_dtype(device: torch.device, dtype: str | torch.dtype | None = None) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype:
        if not isinstance(getattr(torch, str(dtype), None), torch.dtype):
            raise ModelLoadError(f"unknown dtype {dtype!r}: use float32, float16 or bfloat16")
        return getattr(torch, dtype)
    if device.type == "cuda":  # emulated bf16 (a T4, compute capability 7.5) is slow: fp16 there
        return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16
    return torch.float16 if device.type == "mps" else torch.float32


def fit_to_device(draft, target, device: torch.device, dtype: torch.dtype) -> tuple[torch.dtype, torch.dtype]:
    """The engine's choices for where the pair runs, made in place; returns the dtypes the draft computes in and the
    target's linear layers hold. On a bf16 CPU a memory-bound draft computes in bfloat16 (draft_precision.py) and a
    memory-bound target's linear layers too, batch-invariant (target_precision.py); on any CPU, other large float32
    layers compute their few rows as W·hᵀ (cpu_linear.py)."""
    own_dtype = draft_dtype(draft, target, device, dtype, settings.current().draft_bf16)
    if own_dtype != dtype:
        convert_draft(draft, target, own_dtype)
    target_weights = dtype
    if bf16_target_pays(target, device, dtype, settings.current().target_bf16):
        convert_target(target)
        target_weights = torch.bfloat16
    for model in (draft, target):
        use_rows_first_linears(model, device)
    return own_dtype, target_weights
