"""Where exports live on disk: one folder per session, named after the server process that wrote it.

gradio's file cache (GRADIO_TEMP_DIR) outlives a server: one stopped by SIGKILL, or by SIGTERM before its
clean-up ran, leaves its visitors' exports there, and a later server on the same folder would serve them.
So each export folder carries its server's process id, and a server starting up removes every export
folder whose process is gone (or that an earlier server wrote without an id), never another live server's.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

_FOLDER = re.compile(r"specviz-(?:(?P<pid>\d+)-)?[\w-]+")
EXPORT_FILES = ("specviz-traces.jsonl", "specviz-tokens.csv")  # a trace file (core.tracefile), a row per token
EARLIER_FILES = ("specviz-traces.json",)  # what older versions exported: their folders are cleaned up too


def export_prefix() -> str:
    """The prefix of this process's export folders."""
    return f"specviz-{os.getpid()}-"


def _alive(pid: int) -> bool:
    """Another running process has this id (this process's own id means an earlier process that had it)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)  # signal 0: is there such a process? nothing is sent
    except ProcessLookupError:
        return False
    except PermissionError:  # there is one, of another user
        return True
    return True


def remove_stale_exports(root: str | os.PathLike) -> int:
    """Delete the export folders under `root` left by servers that are no longer running; returns how many.
    Called at start-up, before this server wrote any. Only folders named as exports and holding nothing but
    export files are touched."""
    removed = 0
    try:
        entries = list(Path(root).iterdir())
    except OSError:  # no cache folder yet: nothing was left
        return 0
    for entry in entries:
        match = _FOLDER.fullmatch(entry.name)
        if not match or entry.is_symlink() or not entry.is_dir():
            continue
        if match["pid"] is not None and _alive(int(match["pid"])):
            continue  # another server's, still running: its visitors' exports
        names = {child.name for child in entry.iterdir()}
        if names and names <= {*EXPORT_FILES, *EARLIER_FILES}:
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed

