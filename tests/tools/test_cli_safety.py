"""The command line never runs a model folder's code (transformers asks before running remote code, and a
pickle checkpoint runs code as it loads) and fails in one line, never a traceback."""
from __future__ import annotations

import json
import os
import pickle
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomllib

from specviz.engine.models.presets import ASSETS
from tests.cli_runner import run_cli

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # fresh interpreters in pseudo-terminals, model folders written to disk

EVIL = '''
import os, pathlib
pathlib.Path(os.environ["SPECVIZ_MARKER"]).write_text("the folder's code ran")
from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerFast

class EvilConfig(PretrainedConfig):
    model_type = "specviz-evil"

class EvilModel(PreTrainedModel):
    config_class = EvilConfig

class EvilTokenizer(PreTrainedTokenizerFast):
    pass
'''


def evil_folders(tmp_path):
    """Two folders whose code (evil.py) writes a marker when imported: one names it for the config, the
    model and the tokenizer; the other has the bundled tokenizer, so only its config and model name it."""
    auto_map = {"AutoConfig": "evil.EvilConfig", "AutoModelForCausalLM": "evil.EvilModel"}
    folders = {}
    for name, own_tokenizer in (("evil-all", True), ("evil-model", False)):
        folder = tmp_path / name
        shutil.copytree(ASSETS / "shakespeare-draft", folder)
        (folder / "evil.py").write_text(EVIL)
        (folder / "config.json").write_text(json.dumps({"model_type": "specviz-evil", "auto_map": auto_map,
                                                        "architectures": ["EvilModel"]}))
        if own_tokenizer:
            config = json.loads((folder / "tokenizer_config.json").read_text())
            config["auto_map"] = {"AutoTokenizer": [None, "evil.EvilTokenizer"]}
            (folder / "tokenizer_config.json").write_text(json.dumps(config))
        folders[name] = str(folder)
    return folders


def in_terminal(args, env, answer=b"y\n", timeout=120) -> tuple[int, str]:
    """Run args with a pseudo-terminal as stdin/stdout/stderr, answering `answer` to every prompt."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
                if b"[y/N]" in chunk:
                    os.write(master, answer)
            elif proc.poll() is not None:
                break
        return proc.wait(timeout=10), out.decode("utf-8", "replace")
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()


@pytest.fixture
def evil(tmp_path):
    marker = tmp_path / "marker"
    env = {**os.environ, "SPECVIZ_MARKER": str(marker), "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.getcwd()}
    return evil_folders(tmp_path), marker, env


def test_the_harness_sees_transformers_default_run_the_code(evil):
    """The oracle: transformers' own default (trust_remote_code unset), asked in a terminal answering y,
    runs the folder's code. Without this the test below could pass without proving anything."""
    folders, marker, env = evil
    code = f"from transformers import AutoConfig; AutoConfig.from_pretrained({folders['evil-all']!r})"
    rc, out = in_terminal([sys.executable, "-c", code], env)
    assert "[y/N]" in out and marker.exists(), out[-800:]


def test_no_from_pretrained_of_specviz_runs_a_folders_code_even_when_told_y(evil):
    folders, marker, env = evil
    rc, out = in_terminal([sys.executable, "-m", "specviz", "generate", "--prompt", "KING.", "--max-new-tokens", "3",
                           "--draft", folders["evil-all"], "--target", folders["evil-all"]], env)
    assert rc == 2 and "error:" in out and "Traceback" not in out, out[-800:]
    code = ("import torch\nfrom specviz.engine.models import loading, policy, presets\n"
            f"for folder in ({folders['evil-all']!r}, {folders['evil-model']!r}):\n"
            "    for load in (lambda: policy.read_config(folder, 'draft'),\n"
            "                 lambda: loading._load_one(folder, 'draft', torch.device('cpu'), torch.float32)):\n"
            "        try:\n            load()\n            print('LOADED')\n"
            "        except presets.ModelLoadError as err:\n            print('REFUSED', err)\n")
    rc, out = in_terminal([sys.executable, "-c", code], env)  # in the main thread, where transformers would ask
    assert rc == 0 and out.count("REFUSED") == 4 and "[y/N]" not in out, out[-1500:]
    assert not marker.exists()


def test_every_from_pretrained_in_the_package_says_trust_remote_code_false():
    """A static check beside the behavioural one: every from_pretrained call passes trust_remote_code=False."""
    import ast
    from pathlib import Path

    import specviz

    calls = 0
    for path in Path(specviz.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "from_pretrained":
                calls += 1
                flags = {k.arg: k.value for k in node.keywords}
                assert "trust_remote_code" in flags and isinstance(flags["trust_remote_code"], ast.Constant) \
                    and flags["trust_remote_code"].value is False, f"{path.name}:{node.lineno}"
    assert calls >= 3


def cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "specviz", *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def one_line_error(out, *words):
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), out.stderr[-1500:]
    for word in words:
        assert word in lines[0], lines[0]


def test_report_out_is_checked_before_any_model_loads(tmp_path):
    """--out onto a file, under /proc, or under a file: one line naming --out; the pair named is one that
    cannot load, so a check made after loading would name the model instead."""
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("KING.\n")
    existing = tmp_path / "summary.json"
    existing.write_text("{}")
    for out_dir in (existing, "/proc/specviz-report", existing / "below"):  # in process: nothing here needs a fresh one
        out = run_cli("report", "--prompts", str(prompts), "--draft", "no-such/draft", "--target", "no-such/target",
                      "--out", str(out_dir))
        one_line_error(out, "--out")


def test_generate_with_a_pickle_checkpoint_or_a_missing_folder_is_one_line(tmp_path):
    folder = tmp_path / "pickled"
    shutil.copytree(ASSETS / "shakespeare-draft", folder)
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": os.getcwd}))
    target = str(ASSETS / "shakespeare-target")
    one_line_error(cli("generate", "--prompt", "KING.", "--draft", str(folder), "--target", target), "pickle")
    one_line_error(cli("generate", "--prompt", "KING.", "--draft", "./no-such-folder", "--target", target),
                   "neither a folder holding config.json nor a hub id")


def test_an_unreachable_hub_fails_within_seconds():
    """huggingface_hub retries for about 80 s; a hub endpoint that refuses connections fails at once."""
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9"}
    env.pop("HF_HUB_OFFLINE", None)
    t0 = time.monotonic()
    out = cli("generate", "--prompt", "KING.", "--draft", "someorg/draft", "--target", "someorg/target", env=env)
    elapsed = time.monotonic() - t0
    one_line_error(out, "cannot be reached")
    assert elapsed < 30, elapsed  # of which ~8 s is importing torch and transformers on this machine


def console_script() -> list[str]:
    """The `specviz` command as pyproject.toml declares it (module:function), run as an installed script runs it."""
    module, function = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["specviz"].split(":")
    return [sys.executable, "-c", f"import sys; from {module} import {function}; sys.exit({function}())"]


@pytest.mark.parametrize("how", ["python -m specviz", "specviz"])
@pytest.mark.parametrize("name", ["SPECVIZ_TARGET_BF16", "SPECVIZ_DRAFT_BF16"])
def test_a_bad_deployment_variable_stops_a_command_with_one_line_naming_it(name, how):
    """The package's modules read the deployment as they load: both entries read it first."""
    entry = [sys.executable, "-m", "specviz"] if how == "python -m specviz" else console_script()
    env = {**os.environ, name: "half"}
    out = subprocess.run([*entry, "whatif", "--per-position", "0.9", "--cost-ratio", "0.1"],
                         capture_output=True, text=True, timeout=120, env=env, check=False, cwd=ROOT)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [f"error: {name} must be 1 or 0 (true/false), not 'half'"]
