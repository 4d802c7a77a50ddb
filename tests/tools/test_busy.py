"""A timing command says on stderr when other processes kept the machine busy while it ran (tools/busy.py): its
figures then ran beside something else, and a reader comparing two runs should know. The oracle is a real child
process spinning one core for the command's whole stretch."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from specviz.tools.busy import busy_warning, metered, times_the_machine


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="the kernel's CPU counters are Linux's")
def test_a_command_run_beside_a_process_spinning_a_core_says_so_on_stderr(capsys):
    """A child spinning ~1 s of CPU during the command: at least 0.5 of a core used by others, whatever else runs."""
    def bench(args):
        subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\n"
                        "while time.process_time() - t < 1.0: pass"], check=True)
        print('{"speedup": 1.0}')
        return 0

    assert metered(bench, argparse.Namespace(command="bench")) == 0
    out, err = capsys.readouterr()
    assert out == '{"speedup": 1.0}\n'                          # stdout stays the product
    assert err.startswith("warning: other processes used ") and "while this bench ran" in err
    assert err.count("\n") == 1


def test_the_warning_starts_at_half_a_core_and_names_the_command_and_its_figure():
    assert busy_warning(None, "bench") is None                 # no counters (not Linux): nothing said
    assert busy_warning(0.49, "bench") is None
    said = busy_warning(1.26, "report")
    assert said.startswith("warning: other processes used 1.3 of this machine's ") and "this report ran" in said


def test_only_commands_that_time_the_models_are_metered():
    """A report read from a trace file or a server's metrics times nothing here: a busy machine changes none of it."""
    from specviz.tools.cli import build_parser

    parse = build_parser().parse_args
    assert times_the_machine(parse(["bench", "--quick"]))
    assert times_the_machine(parse(["report", "--prompts", "p.txt", "--out", "r"]))
    assert not times_the_machine(parse(["report", "--from-traces", "t.jsonl", "--out", "r"]))
    assert not times_the_machine(parse(["report", "--from-metrics", "m.txt", "--out", "r"]))
    assert not times_the_machine(parse(["whatif", "--per-position", "0.9", "--cost-ratio", "0.1"]))
