"""Who may load what (a public server once loaded any preset a visitor named, and read any model folder a
visitor typed): presets a deployment offers, and model folders only where the server is reachable by its own
user; folders are read only when they hold regular files inside them."""
from __future__ import annotations

import os
import shutil
import threading

import pytest

from specviz.engine import settings
from specviz.engine.models import policy, presets

EXPOSURES = [({"SPACE_ID": "someone/specviz"}, True), ({"GRADIO_SERVER_NAME": "0.0.0.0"}, True),
             ({"GRADIO_SERVER_NAME": "192.168.1.5"}, True), ({"GRADIO_SHARE": "True"}, True),
             ({}, False), ({"GRADIO_SERVER_NAME": "127.0.0.1"}, False), ({"GRADIO_SERVER_NAME": "localhost"}, False),
             ({"GRADIO_SERVER_NAME": "::1"}, False), ({"GRADIO_SERVER_NAME": "127.0.0.2"}, False)]


@pytest.mark.parametrize("environ, exposed", EXPOSURES)
def test_exposed_means_others_can_reach_the_server(environ, exposed):
    deployment = settings.Deployment.from_environ(environ)
    assert deployment.exposed == exposed
    assert deployment.allow_custom_models == deployment.allow_model_folders == (not exposed)
    assert deployment.offered_presets == (("shakespeare",) if exposed else None)


@pytest.fixture
def space(monkeypatch):
    for name in ("SPECVIZ_PRESETS", "SPECVIZ_ALLOW_CUSTOM_MODELS", "SPECVIZ_ALLOW_MODEL_FOLDERS", "SPECVIZ_PRESET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPACE_ID", "someone/specviz")
    return monkeypatch


def test_a_space_offers_the_default_preset_only_unless_told(space):
    assert policy.offered_presets() == ["shakespeare"]
    assert policy.visitor_pair("shakespeare").name == "shakespeare"
    with pytest.raises(presets.ModelLoadError, match=r"'qwen2\.5' is not offered here.*SPECVIZ_PRESETS"):
        policy.visitor_pair("qwen2.5")
    space.setenv("SPECVIZ_PRESETS", "gpt2, pythia")
    assert policy.offered_presets() == ["shakespeare", "gpt2", "pythia"]  # the default is always offered
    assert policy.visitor_pair("gpt2").name == "gpt2"
    space.setenv("SPECVIZ_PRESETS", "gpt2, gpt5")
    with pytest.raises(presets.ModelLoadError, match="SPECVIZ_PRESETS names.*gpt5"):
        policy.offered_presets()


@pytest.mark.parametrize("name", ["nope", ["shakespeare"], {"a": 1}, 7])
def test_an_unknown_preset_lists_only_what_this_server_offers(space, name):
    space.setenv("SPECVIZ_PRESETS", "shakespeare, gpt2")
    with pytest.raises(presets.ModelLoadError) as err:
        policy.visitor_pair(name)
    assert str(err.value) == f"unknown preset {name!r}; choose one of ['shakespeare', 'gpt2']"


def test_locally_every_preset_is_offered(monkeypatch):
    for name in ("SPACE_ID", "GRADIO_SERVER_NAME", "GRADIO_SHARE", "SPECVIZ_PRESETS"):
        monkeypatch.delenv(name, raising=False)
    assert policy.offered_presets() == list(presets.PRESETS)


def test_a_step_naming_a_preset_not_offered_loads_nothing(space, page_settings, pair):
    from specviz.app.handlers import step_handler
    from specviz.engine.serving.run import RunSettings
    from specviz.present.views import Session

    loads = []
    space.setattr(RunSettings, "load", lambda self: loads.append(self) or pair)
    _, view = step_handler(Session(), page_settings(preset="qwen2.5", prompt="Hello", max_new_tokens=20))
    assert "SPECVIZ_PRESETS" in view.message and loads == []


@pytest.mark.parametrize("environ", [{"GRADIO_SERVER_NAME": "0.0.0.0", "SPECVIZ_ALLOW_CUSTOM_MODELS": "1"},
                                     {"SPACE_ID": "x/y", "SPECVIZ_ALLOW_CUSTOM_MODELS": "1"}])
def test_an_exposed_server_reads_no_folder_and_says_the_same_whether_it_exists(monkeypatch, tmp_path, environ):
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    model_folder(tmp_path, "real")
    messages = []
    for folder in (tmp_path / "real", tmp_path / "nothing", "/etc", "../../etc/passwd"):
        with pytest.raises(presets.ModelLoadError, match="SPECVIZ_ALLOW_MODEL_FOLDERS") as err:
            policy.custom_pair(str(folder), "gpt2")
        messages.append(str(err.value))
    assert messages[0].replace("real", "X") == messages[1].replace("nothing", "X")
    assert str(tmp_path) not in " ".join(messages)
    monkeypatch.setenv("SPECVIZ_ALLOW_MODEL_FOLDERS", "1")
    ref = policy.custom_pair(str(presets.ASSETS / "shakespeare-draft"), str(presets.ASSETS / "shakespeare-target"))
    assert ref.draft.endswith("shakespeare-draft")


def model_folder(tmp_path, name="m"):
    folder = tmp_path / name
    shutil.copytree(presets.ASSETS / "shakespeare-draft", folder)
    return folder


def refused(folder) -> str:
    """check_model_folder's message, from a thread that must finish within 5 s (a FIFO would block a reader)."""
    out = {}

    def check():
        try:
            policy.check_model_folder(str(folder), "draft")
            out["message"] = ""
        except presets.ModelLoadError as err:
            out["message"] = str(err)
    worker = threading.Thread(target=check, daemon=True)
    worker.start()
    worker.join(5)
    assert "message" in out, "the folder check blocked"
    return out["message"]


def test_special_files_links_out_and_missing_configs_are_refused_without_server_paths(tmp_path):
    assert refused(model_folder(tmp_path, "fine")) == ""
    fifo = model_folder(tmp_path, "fifo")
    (fifo / "config.json").unlink()
    os.mkfifo(fifo / "config.json")
    link = model_folder(tmp_path, "link")
    (link / "model.safetensors").unlink()
    (link / "model.safetensors").symlink_to("/etc/hostname")
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "weights.bin").write_bytes(b"x")
    cases = [(fifo, "config.json, which is not a regular file"), (link, "links outside itself (model.safetensors)"),
             (bare, "has no config.json"), (tmp_path / "missing", "neither a model folder nor a hub id"),
             ("/dev/null", "is not a folder")]
    for folder, expected in cases:
        message = refused(folder)
        assert expected in message, (folder, message)
        assert str(tmp_path) not in message


def test_a_pickle_checkpoint_is_a_one_line_error(tmp_path):
    """A folder whose weights are a pickle (pytorch_model.bin) that torch's safe loader refuses."""
    import pickle

    from specviz.engine.models import loading

    folder = model_folder(tmp_path, "pickled")
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"weights": os.getcwd}))  # a pickle naming a function
    with pytest.raises(presets.ModelLoadError, match="pickle checkpoint .pytorch_model.bin.") as err:
        loading._load_one(str(folder), "draft", __import__("torch").device("cpu"), __import__("torch").float32)
    assert str(tmp_path) not in str(err.value) and "\n" not in str(err.value)
