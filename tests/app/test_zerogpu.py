"""ZeroGPU's contract, checked on a CPU with a stand-in `spaces` (tests/app/zerogpu_standin) that fails
loudly where the real package fails silently: `spaces` imported before torch, the GPU function decorated
by launch, and the offered pair moved to 'cuda' on the main thread before launch."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STANDIN = Path(__file__).resolve().parent / "zerogpu_standin"
pytestmark = pytest.mark.slow  # fresh interpreters with a stand-in spaces module that forks workers

LAUNCH_AS_A_SPACE = """
import runpy
runpy.run_path("app.py", run_name="app")  # app.py's imports, as `python app.py` runs them
from specviz.app.server import launch
from specviz.app.wiring import build_app
demo = build_app()
launch(demo, prevent_thread_lock=True)
demo.close()
"""


def run_on_standin(code: str, tmp_path, **env) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / "report.json"
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STANDIN), str(ROOT)]), "SPACES_ZERO_GPU": "true",
               "SPACE_ID": "standin/specviz", "SPECVIZ_PRESET": "shakespeare", "ZEROGPU_STANDIN_REPORT": str(report),
               "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", **env}
    environ.pop("SPECVIZ_PRESETS", None)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=300, check=False)
    return done, (json.loads(report.read_text()) if report.exists() else {})


def test_the_app_meets_zerogpus_startup_contract(tmp_path):
    done, report = run_on_standin(LAUNCH_AS_A_SPACE, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert report.get("startup") == "ran", "spaces never saw the launch"
    assert report["imported_before_torch"]
    assert sorted(report["decorated"]) == ["specviz.engine.serving.race.run_race",
                                           "specviz.engine.serving.run.stateless_step"]
    assert report["cuda_bytes"] > 5_000_000  # the bundled pair's weights (~9 MB in bf16)
    assert report["cuda_threads"] == ["MainThread"]


def test_a_load_on_another_thread_cannot_reach_the_emulated_gpu(tmp_path):
    """What the stand-in enforces: the emulation holds on the importing thread only, so the app's threaded
    load (a step's, with a time limit) fails there, as it would on ZeroGPU."""
    code = ("import spaces\nfrom specviz.engine.models.loading import load_pair\n"
            "try:\n    load_pair('shakespeare', device='cuda', timeout=120)\nexcept Exception as err:\n"
            "    print('refused:', type(err).__name__)\nelse:\n    print('loaded')\n")
    done, _ = run_on_standin(code, tmp_path)
    assert "refused:" in done.stdout, done.stdout + done.stderr[-2000:]


def test_on_zerogpu_every_offered_pair_stays_loaded(monkeypatch):
    """Each offered pair is packed for the GPU workers at startup, so the pair cache keeps them all."""
    from specviz.engine.models.loading import pairs_kept
    from specviz.engine.settings import Deployment

    space = {"SPACES_ZERO_GPU": "true", "SPACE_ID": "a/b", "SPECVIZ_PRESETS": "gpt2,pythia"}
    deployment = Deployment.from_environ(space)
    assert deployment.zero_gpu and deployment.stateless_steps and deployment.max_pairs is None  # follows the offer
    for name, value in space.items():
        monkeypatch.setenv(name, value)
    assert pairs_kept() == 3  # shakespeare too
    with pytest.raises(ValueError, match="SPECVIZ_MAX_PAIRS=2 is fewer than the 3 offered presets"):
        Deployment.from_environ({**space, "SPECVIZ_MAX_PAIRS": "2"})
    monkeypatch.delenv("SPECVIZ_PRESETS")
    monkeypatch.delenv("SPACE_ID")
    monkeypatch.delenv("SPACES_ZERO_GPU")
    monkeypatch.setenv("SPECVIZ_STATELESS_STEPS", "1")
    assert pairs_kept() == 1  # served locally (every preset offered): one pair at a time, as before
