"""specviz.engine.serving.threads: the forwards leave a core to the web server and the browser while serving."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from specviz.engine.serving.threads import serving_threads


def test_every_core_but_one_by_default(monkeypatch):
    monkeypatch.delenv("SPECVIZ_THREADS", raising=False)
    assert serving_threads(cores=2) == 1
    assert serving_threads(cores=16) == 15


def test_one_core_still_gets_one_thread(monkeypatch):
    monkeypatch.delenv("SPECVIZ_THREADS", raising=False)
    assert serving_threads(cores=1) == 1


def test_specviz_threads_sets_it(monkeypatch):
    monkeypatch.setenv("SPECVIZ_THREADS", "2")
    assert serving_threads(cores=2) == 2


@pytest.mark.parametrize("bad", ["-1", "1.5", "many", "2000"])
def test_a_bad_count_is_refused_by_name(monkeypatch, bad):
    monkeypatch.setenv("SPECVIZ_THREADS", bad)
    with pytest.raises(ValueError, match="SPECVIZ_THREADS"):
        serving_threads(cores=2)


def test_timed_steps_wait_for_a_quiet_machine_only_where_a_browser_may_share_it():
    from specviz.engine.settings import Deployment

    assert Deployment.from_environ({}).quiet_wait_ms == 600  # served locally: the browser is on this machine
    assert Deployment.from_environ({"SPACE_ID": "a/b"}).quiet_wait_ms == 0
    assert Deployment.from_environ({"SPACE_ID": "a/b", "SPECVIZ_QUIET_WAIT_MS": "300"}).quiet_wait_ms == 300



@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads Linux's /proc/stat")
def test_a_busy_neighbour_process_is_seen_and_waited_for_at_most_the_limit():
    from specviz.engine.serving.quiet import others_busy_cores, wait_for_quiet

    spinner = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 20\nwhile time.time() < end: pass"])
    try:
        time.sleep(0.3)  # running now
        assert others_busy_cores(0.2) >= 0.5  # one core kept busy by another process
        waited = wait_for_quiet(0.3)
        assert 0.25 <= waited < 1.0  # it waited, and no longer than asked (plus one window)
    finally:
        spinner.kill()
