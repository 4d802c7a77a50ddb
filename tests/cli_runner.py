"""`python -m specviz ARGS` run inside the test process: the command-line contract without a new interpreter.

A subprocess costs an interpreter, torch's and transformers' imports and a model load (5-25 s a call on this 2-core
machine); in process, `specviz.tools.cli.main` parses the same arguments, loads pairs through the same cache (the
session's pair is handed out as it is) and prints to the same streams, captured here. What only a fresh process
shows stays in a subprocess: stdout holding nothing but JSON from the first import on (tests/tools/test_stdout.py),
the layers importing without gradio (tests/tools/test_cli.py), a model folder's code never run (test_cli_safety.py).
"""
from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """What `subprocess.run([python, -m, specviz, *args], capture_output=True, text=True)` returns, computed in
    this process: the exit status (argparse's SystemExit included), stdout and stderr as text. torch's thread
    count, which `--threads` may set, is restored afterwards."""
    import torch

    from specviz.tools.cli import main

    out, err, threads = io.StringIO(), io.StringIO(), torch.get_num_threads()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        finally:
            torch.set_num_threads(threads)
    return subprocess.CompletedProcess([sys.executable, "-m", "specviz", *args], code or 0, out.getvalue(),
                                       err.getvalue())
