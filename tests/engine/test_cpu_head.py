"""engine/cpu_head.py: the same logits as nn.Linear, the same weight, and only where it is meant to apply."""
from __future__ import annotations

import pytest
import torch

from specviz.engine.cpu_head import MIN_WEIGHTS, RowsFirstHead, use_rows_first_head


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("rows", [1, 2, 5])
def test_logits_equal_the_linear_layers(bias, rows):
    torch.manual_seed(rows)
    linear = torch.nn.Linear(64, 3000, bias=bias)
    hidden = torch.randn(1, rows, 64)
    head = RowsFirstHead(linear)
    assert head.weight is linear.weight
    expected = hidden[0] @ linear.weight.detach().T + (linear.bias.detach() if bias else 0)  # written out, not nn.Linear
    assert torch.allclose(head(hidden)[0], expected, atol=1e-5) and head(hidden).shape == (1, rows, 3000)


class Tiny(torch.nn.Module):
    def __init__(self, vocab, width):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.head = torch.nn.Linear(width, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied, as SmolLM2's

    def get_output_embeddings(self):
        return self.head

    def set_output_embeddings(self, module):
        self.head = module


def test_only_a_large_head_on_the_cpu_is_replaced_and_stays_tied():
    big = Tiny(MIN_WEIGHTS // 64 + 1, 64)
    assert use_rows_first_head(big, torch.device("cpu"))
    assert isinstance(big.head, RowsFirstHead) and big.head.weight is big.embed.weight
    assert not use_rows_first_head(Tiny(4096, 128), torch.device("cpu"))            # the Shakespeare pair's size
    assert not use_rows_first_head(Tiny(MIN_WEIGHTS // 64 + 1, 64), torch.device("cuda"))
    assert not use_rows_first_head(big, torch.device("cpu"))                       # already replaced


@pytest.mark.parametrize("bias", [False, True])
def test_bfloat16_rounds_as_the_linear_layer_does(bias):
    """The bias is fused into the product (addmm), as nn.Linear fuses it: no extra rounding in bf16."""
    torch.manual_seed(3)
    linear = torch.nn.Linear(64, 3000, bias=bias).to(torch.bfloat16)
    hidden = torch.randn(2, 5, 64, dtype=torch.bfloat16)
    with torch.no_grad():
        assert torch.equal(RowsFirstHead(linear)(hidden), linear(hidden))
