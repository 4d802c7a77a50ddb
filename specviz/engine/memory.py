"""Bytes a warm run holds, and how many bytes warm runs may hold together.

A run's KV caches grow with its tokens: per token each model keeps a key and a value per layer and
key-value head, `2 · layers · kv_heads · head_dim` numbers (and a feature-reading draft's target its
last hidden state, `hidden` numbers). Counting runs (SPECVIZ_WARM_RUNS) bounds nothing when one visitor's
prompt is 50 times another's; this budget bounds the bytes: SPECVIZ_WARM_BYTES, else WARM_SHARE of the
device's memory (RAM on a CPU, the smaller of MemTotal and the container's limit; total memory on a GPU).
"""
from __future__ import annotations

from pathlib import Path

import torch

from . import settings

WARM_SHARE = 0.25  # of the device's memory: the weights, activations and the rest keep three quarters


def _text_config(model):
    config = model.config
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def kv_bytes_per_token(model) -> int:
    """Bytes of keys and values one token adds to `model`'s cache, from its config and dtype."""
    config = _text_config(model)
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None) or 0
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "n_head", None) or 1
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None) or 0
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    itemsize = next(model.parameters()).element_size()
    return 2 * layers * kv_heads * head_dim * itemsize


def held_bytes(cached) -> int:
    """Bytes a `cache.CachedModel` holds now: a static cache its whole buffer, a dynamic one what it has seen
    (times its rows), and kept features."""
    static = getattr(cached, "static", None)
    positions = static.max_len if static is not None else cached.seen * cached.rows
    total = positions * kv_bytes_per_token(cached.model)
    if cached.features is not None:
        total += cached.features.numel() * cached.features.element_size()
    return total


def host_memory(field: str, *, cgroup_free: bool) -> int | None:
    """The host's /proc/meminfo `field` (MemTotal, MemAvailable) in bytes, capped by the container's (cgroup)
    limit, less what it uses where `cgroup_free`; None where neither can be read."""
    value = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field + ":"):
                value = int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            used = int(Path("/sys/fs/cgroup/memory.current").read_text()) if cgroup_free else 0
            value = min(value if value is not None else 1 << 62, int(limit) - used)
    except (OSError, ValueError):
        pass
    return value


def device_memory(device: torch.device) -> int:
    """The device's memory in bytes: a GPU's total, or on the host the smaller of MemTotal and the
    container's (cgroup) limit."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    total = host_memory("MemTotal", cgroup_free=False)
    return total if total is not None else 8 << 30  # unknown (not Linux): assume a small machine


def warm_budget(device: torch.device) -> int:
    """Bytes all warm runs on `device` may hold: SPECVIZ_WARM_BYTES, else WARM_SHARE of its memory."""
    configured = settings.current().warm_bytes
    return configured if configured is not None else int(WARM_SHARE * device_memory(device))
