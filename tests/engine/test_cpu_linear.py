"""engine/models/cpu_linear.py: the same outputs as nn.Linear, the same weight, and only where it is meant to apply."""
from __future__ import annotations

import pytest
import torch

from specviz.engine.models import cpu_linear
from specviz.engine.models.cpu_linear import MIN_HEAD_WEIGHTS, RowsFirstLinear, use_rows_first_linears

pytestmark = pytest.mark.cpu_only  # MKL's CPU linear layers: nothing of it runs on a GPU


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("rows", [1, 2, 5])
def test_outputs_equal_the_linear_layers(bias, rows):
    torch.manual_seed(rows)
    linear = torch.nn.Linear(64, 3000, bias=bias)
    hidden = torch.randn(1, rows, 64)
    layer = RowsFirstLinear(linear)
    assert layer.weight is linear.weight
    expected = hidden[0] @ linear.weight.detach().T + (linear.bias.detach() if bias else 0)  # written out, not nn.Linear
    assert torch.allclose(layer(hidden)[0], expected, atol=1e-5) and layer(hidden).shape == (1, rows, 3000)


def test_a_strided_input_gives_the_same_outputs():
    """Attention outputs arrive transposed; the layer reads them by value, not by layout."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(48, 100)
    hidden = torch.randn(1, 48, 3).transpose(1, 2)  # [1, 3, 48], not contiguous
    assert not hidden.is_contiguous()
    expected = hidden.contiguous()[0] @ linear.weight.detach().T + linear.bias.detach()
    assert torch.allclose(RowsFirstLinear(linear)(hidden)[0], expected, atol=1e-5)


class Tiny(torch.nn.Module):
    def __init__(self, vocab, width, dtype=torch.float32):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width, dtype=dtype)
        self.up = torch.nn.Linear(width, 2 * width, dtype=dtype)
        self.head = torch.nn.Linear(width, vocab, bias=False, dtype=dtype)
        self.head.weight = self.embed.weight  # tied, as SmolLM2's

    def get_output_embeddings(self):
        return self.head

    def set_output_embeddings(self, module):
        self.head = module


def test_a_large_head_on_the_cpu_is_replaced_and_stays_tied():
    big = Tiny(MIN_HEAD_WEIGHTS // 64 + 1, 64)
    assert use_rows_first_linears(big, torch.device("cpu")) == 1  # the head; the model is below MIN_MODEL_WEIGHTS
    assert isinstance(big.head, RowsFirstLinear) and big.head.weight is big.embed.weight
    assert type(big.up) is torch.nn.Linear
    assert use_rows_first_linears(Tiny(4096, 128), torch.device("cpu")) == 0     # the Shakespeare pair's size
    assert use_rows_first_linears(Tiny(MIN_HEAD_WEIGHTS // 64 + 1, 64), torch.device("cuda")) == 0
    assert use_rows_first_linears(big, torch.device("cpu")) == 0                # already replaced


def test_a_large_float32_model_gets_every_linear_layer_replaced(monkeypatch):
    monkeypatch.setattr(cpu_linear, "MIN_MODEL_WEIGHTS", 10_000)
    model = Tiny(256, 32)                           # 8,192 + 2,112 weights: above the lowered bar
    assert use_rows_first_linears(model, torch.device("cpu")) == 2
    assert isinstance(model.up, RowsFirstLinear) and isinstance(model.head, RowsFirstLinear)
    assert model.head.weight is model.embed.weight


def test_bfloat16_layers_of_a_large_model_are_left_to_nn_linear(monkeypatch):
    monkeypatch.setattr(cpu_linear, "MIN_MODEL_WEIGHTS", 10_000)
    model = Tiny(256, 32, dtype=torch.bfloat16)
    assert use_rows_first_linears(model, torch.device("cpu")) == 0
    assert type(model.up) is torch.nn.Linear


@pytest.mark.parametrize("rows", [1, 5])
@pytest.mark.parametrize("bias", [False, True])
def test_bfloat16_rounds_as_the_linear_layer_does(bias, rows):
    """The bias is fused into the product (addmm), as nn.Linear fuses it: no extra rounding in bf16."""
    torch.manual_seed(3)
    linear = torch.nn.Linear(64, 3000, bias=bias).to(torch.bfloat16)
    hidden = torch.randn(2, rows, 64, dtype=torch.bfloat16)
    with torch.no_grad():
        assert torch.equal(RowsFirstLinear(linear)(hidden), linear(hidden))
