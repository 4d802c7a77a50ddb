"""specviz.engine.threads: the forwards leave a core to the web server and the browser while serving."""
from __future__ import annotations

import pytest

from specviz.engine.threads import serving_threads


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
