"""Each hub preset's architecture, so its speed can be measured without downloading a weight.

The numbers are the models' own `config.json` on the Hugging Face hub (HuggingFaceTB/SmolLM2-135M and
-1.7B, Qwen/Qwen2.5-0.5B-Instruct and -3B-Instruct, openai-community gpt2 and gpt2-xl,
EleutherAI/pythia-70m and -1.4b). Speed depends on shapes, not on values, so a model built from one
of these configs with random weights costs what the real one costs per forward.
"""
from __future__ import annotations

_SMOLLM2 = dict(model_type="llama", vocab_size=49152, max_position_embeddings=8192, tie_word_embeddings=True,
                hidden_act="silu", rms_norm_eps=1e-5)
_QWEN25 = dict(model_type="qwen2", vocab_size=151936, max_position_embeddings=32768, tie_word_embeddings=True,
               hidden_act="silu", rms_norm_eps=1e-6, rope_theta=1_000_000.0)
_GPT2 = dict(model_type="gpt2", vocab_size=50257, n_positions=1024)
_PYTHIA = dict(model_type="gpt_neox", vocab_size=50304, max_position_embeddings=2048, rotary_pct=0.25,
               use_parallel_residual=True, tie_word_embeddings=False)

# preset -> (draft config, target config): keyword arguments of transformers' AutoConfig.for_model
ARCHITECTURES: dict[str, tuple[dict, dict]] = {
    "smollm2": (
        dict(_SMOLLM2, hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
             intermediate_size=1536, rope_theta=100_000.0),
        dict(_SMOLLM2, hidden_size=2048, num_hidden_layers=24, num_attention_heads=32, num_key_value_heads=32,
             intermediate_size=8192, rope_theta=130_000.0)),
    "qwen2.5": (
        dict(_QWEN25, hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
             intermediate_size=4864),
        dict(_QWEN25, hidden_size=2048, num_hidden_layers=36, num_attention_heads=16, num_key_value_heads=2,
             intermediate_size=11008)),
    "gpt2": (
        dict(_GPT2, n_embd=768, n_layer=12, n_head=12),
        dict(_GPT2, n_embd=1600, n_layer=48, n_head=25)),
    "pythia": (
        dict(_PYTHIA, hidden_size=512, num_hidden_layers=6, num_attention_heads=8, intermediate_size=2048),
        dict(_PYTHIA, hidden_size=2048, num_hidden_layers=24, num_attention_heads=16, intermediate_size=8192)),
}


def random_model(shape: dict, dtype, device, seed: int = 0):
    """A causal LM of this shape with random weights (seeded), in eval mode, on `device`.

    Built where it will run, in its dtype: the random initialisation of a 3B-parameter model takes minutes
    in float32 on a CPU and well under a second on a GPU. The global generators are left as they were."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(**shape)
    device = torch.device(device)
    on_cuda = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=on_cuda), torch.device(device):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model.to(device).eval()


def parameter_count(shape: dict) -> int:
    """Parameters of a model of this shape, counted on the meta device (no memory, no weights)."""
    from transformers import AutoConfig

    return config_parameter_count(AutoConfig.for_model(**shape))


def config_parameter_count(config) -> int:
    """Parameters of the causal LM a config describes, built on the meta device (no memory, no weights)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=False)
    return sum(p.numel() for p in model.parameters())
