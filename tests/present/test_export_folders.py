"""specviz.present.export_folders: a starting server removes the exports of servers that are gone, and only those."""
from __future__ import annotations

import os
import subprocess
import sys

from specviz.present.export_folders import export_prefix, remove_stale_exports


def _export(root, name: str, trace_file: str = "specviz-traces.jsonl") -> str:
    folder = root / name
    folder.mkdir()
    (folder / trace_file).write_text("{}\n")
    (folder / "specviz-tokens.csv").write_text("step\n")
    return name


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_exports_of_stopped_servers_go_and_a_running_servers_stay(tmp_path):
    gone = _export(tmp_path, f"specviz-{_dead_pid()}-abc123")
    older = _export(tmp_path, "specviz-k2j4_x", "specviz-traces.json")  # before folders carried their server's id
    running = _export(tmp_path, f"specviz-{os.getppid()}-def456")  # the process that started these tests
    assert remove_stale_exports(tmp_path) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [running]
    assert not (tmp_path / gone).exists() and not (tmp_path / older).exists()


def test_a_folder_with_anything_but_exports_in_it_is_left_alone(tmp_path):
    name = _export(tmp_path, f"specviz-{_dead_pid()}-abc")
    (tmp_path / name / "notes.txt").write_text("not ours")
    (tmp_path / "uploads").mkdir()
    assert remove_stale_exports(tmp_path) == 0
    assert (tmp_path / name / "notes.txt").exists() and (tmp_path / "uploads").exists()


def test_this_servers_folders_carry_its_process_id():
    assert export_prefix() == f"specviz-{os.getpid()}-"


def test_a_missing_cache_folder_is_nothing_to_clean(tmp_path):
    assert remove_stale_exports(tmp_path / "none") == 0
