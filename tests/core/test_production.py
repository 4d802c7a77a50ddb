"""core.production on scrapes written from the Prometheus text exposition format as vLLM's
prometheus_client renders its SpecDecodingProm counters (labels model_name, engine; position on the
per-position counter) and SGLang's gauges. Expected figures are worked out by hand in the comments."""
from __future__ import annotations

import pytest

from specviz.core import production, theory

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def vllm_scrape(engines: dict) -> str:
    """engines: engine id -> (drafts, draft_tokens, accepted, [accepted at position 0, 1, ...])."""
    lines = []
    for metric, index in (("num_drafts", 0), ("num_draft_tokens", 1), ("num_accepted_tokens", 2)):
        lines += [f"# HELP vllm:spec_decode_{metric}_total Number of spec decoding {metric}.",
                  f"# TYPE vllm:spec_decode_{metric}_total counter"]
        for engine, values in engines.items():
            lines.append(f'vllm:spec_decode_{metric}_total{{engine="{engine}",model_name="{MODEL}"}} {float(values[index])}')
            lines.append(f'vllm:spec_decode_{metric}_created{{engine="{engine}",model_name="{MODEL}"}} 1.7e+09')
    lines += ["# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.",
              "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter"]
    for engine, values in engines.items():
        for pos, count in enumerate(values[3]):
            lines.append(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="{engine}",model_name="{MODEL}",'
                         f'position="{pos}"}} {float(count)}')
    lines += ['# TYPE vllm:num_requests_running gauge', f'vllm:num_requests_running{{engine="0",model_name="{MODEL}"}} 3.0']
    return "\n".join(lines) + "\n"


# two engines, gamma 3: 200 drafts, 600 draft tokens, 280 accepted; per position 130, 95, 55
ONE = vllm_scrape({"0": (100, 300, 150, [70, 50, 30]), "1": (100, 300, 130, [60, 45, 25])})


def test_engines_are_summed():
    s = production.spec_decode_summary([ONE])
    assert (s["drafts"], s["draft_tokens"], s["accepted_tokens"], s["gamma"]) == (200, 600, 280, 3)
    assert s["engines"] == ["0", "1"] and s["models"] == [MODEL]


def test_vllm_definitions():
    s = production.spec_decode_summary([ONE])
    assert s["draft_acceptance_rate"] == pytest.approx(280 / 600)
    assert s["mean_acceptance_length"] == pytest.approx(1 + 280 / 200)
    assert s["per_position_acceptance"] == pytest.approx([130 / 200, 95 / 200, 55 / 200])
    assert s["conditional_acceptance"] == pytest.approx([130 / 200, 95 / 130, 55 / 95])


def test_leviathan_alpha_is_accepted_over_tested():
    # position 0 tested in all 200 drafts, position 1 in the 130 that accepted position 0, position 2 in 95
    assert production.spec_decode_summary([ONE])["alpha"] == pytest.approx(280 / (200 + 130 + 95))


def test_expected_speedup_by_gamma_at_a_cost_ratio():
    s = production.spec_decode_summary([ONE], cost_ratio=0.1)
    alpha = 280 / 425
    assert s["expected_speedup_by_gamma"]["2"] == pytest.approx((1 + alpha + alpha ** 2) / 1.2)
    assert s["best_gamma"] == max(range(1, 17), key=lambda g: (theory.expected_speedup(alpha, g, 0.1), -g))


def test_two_scrapes_give_the_counts_between_them():
    later = vllm_scrape({"0": (150, 450, 200, [90, 65, 45]), "1": (130, 390, 160, [75, 50, 35])})
    s = production.spec_decode_summary([ONE, later])
    # between: 80 drafts, 240 draft tokens, 80 accepted; per position 35, 20, 25
    assert (s["drafts"], s["draft_tokens"], s["accepted_tokens"]) == (80, 240, 80)
    assert s["per_position_acceptance"] == pytest.approx([35 / 80, 20 / 80, 25 / 80])
    assert s["interval"] == "between the two scrapes"


def test_a_counter_that_went_backwards_is_an_error():
    restarted = vllm_scrape({"0": (10, 30, 5, [3, 1, 1]), "1": (100, 300, 130, [60, 45, 25])})
    with pytest.raises(ValueError, match="went backwards"):
        production.spec_decode_summary([ONE, restarted])


def test_a_scrape_without_spec_decoding_metrics_is_an_error():
    with pytest.raises(ValueError, match="no speculative-decoding metrics"):
        production.spec_decode_summary(['vllm:num_requests_running{engine="0",model_name="m"} 1.0\n'])


def test_alpha_from_the_mean_length_without_per_position_counts():
    text = "\n".join(line for line in ONE.splitlines() if "per_pos" not in line)
    s = production.spec_decode_summary([text])
    alpha = s["alpha"]  # 1.4 accepted per draft of 3: alpha + alpha^2 + alpha^3 = 1.4
    assert alpha + alpha ** 2 + alpha ** 3 == pytest.approx(1.4, abs=1e-9)


def test_sglang_gauges_are_averaged():
    text = (f'sglang:spec_accept_length{{dp_rank="0",engine_type="unified",model_name="{MODEL}",tp_rank="0"}} 2.0\n'
            f'sglang:spec_accept_length{{dp_rank="1",engine_type="unified",model_name="{MODEL}",tp_rank="0"}} 3.0\n'
            f'sglang:spec_accept_rate{{dp_rank="0",engine_type="unified",model_name="{MODEL}",tp_rank="0"}} 0.4\n')
    s = production.spec_decode_summary([text])
    assert s["engine"] == "sglang" and s["mean_acceptance_length"] == pytest.approx(2.5)
    assert s["draft_acceptance_rate"] == pytest.approx(0.4)


def test_labels_with_escaped_quotes_and_commas_parse():
    samples = production.parse_exposition('m{a="x\\"y,z",b="2"} 4 1700000000\n')
    assert samples == [("m", {"a": 'x"y,z', "b": "2"}, 4.0)]


def test_llama_cpp_counters_read_with_vllm_definitions():
    # llama.cpp's server exports vLLM's counter schema under llamacpp: (no _total suffix, no labels):
    # 50 drafts of 4, 90 accepted; per position 40, 25, 15, 10 -> length 1 + 90/50 = 2.8
    scrape = ("# TYPE llamacpp:spec_decode_num_drafts counter\nllamacpp:spec_decode_num_drafts 50\n"
              "llamacpp:spec_decode_num_draft_tokens 200\nllamacpp:spec_decode_num_accepted_tokens 90\n"
              + "".join(f'llamacpp:spec_decode_num_accepted_tokens_per_pos{{position="{i}"}} {n}\n'
                        for i, n in enumerate((40, 25, 15, 10))))
    s = production.spec_decode_summary([scrape])
    assert s["engine"] == "llama.cpp" and s["gamma"] == 4
    assert s["mean_acceptance_length"] == pytest.approx(2.8) and s["draft_acceptance_rate"] == pytest.approx(0.45)
    assert s["per_position_acceptance"] == pytest.approx([0.8, 0.5, 0.3, 0.2])
    assert s["alpha"] == pytest.approx(90 / (50 + 40 + 25 + 15))  # accepted / tested
