"""specviz.core.race_record: a race as plain data reads back from JSON as it was, and a changed one is refused by field."""
from __future__ import annotations

import json

import pytest

from specviz.core.race_record import SPECULATIVE, TARGET_ONLY, Lane, Race

RACE = Race(target_only=Lane(TARGET_ONLY, ("a", " b", "<c>"), ("target",) * 3, (0.01, 0.02, 0.03), 3, 0),
            speculative=Lane(SPECULATIVE, ("a", " b", "<d>"), ("accepted", "accepted", "bonus"), (0.012,) * 3, 1, 2),
            first=TARGET_ONLY, device="cpu", slice_speedups=(2.0, 2.5, 3.0, 2.2), others_busy_cores=0.1,
            capped_to=3, predicted_s=4.5, requested=80, limit_s=60.0)

# The oracle: the race written out by hand as JSON, field by field (not through to_dict).
WRITTEN = {
    "target_only": {"side": "target_only", "texts": ["a", " b", "<c>"], "kinds": ["target"] * 3,
                    "times_s": [0.01, 0.02, 0.03], "target_passes": 3, "draft_passes": 0},
    "speculative": {"side": "speculative", "texts": ["a", " b", "<d>"], "kinds": ["accepted", "accepted", "bonus"],
                    "times_s": [0.012] * 3, "target_passes": 1, "draft_passes": 2},
    "first": "target_only", "device": "cpu", "slice_speedups": [2.0, 2.5, 3.0, 2.2], "others_busy_cores": 0.1,
    "capped_to": 3, "predicted_s": 4.5, "stopped_s": 0.0, "requested": 80, "limit_s": 60.0,
}


def test_a_race_written_as_json_reads_back_as_the_same_race():
    assert Race.from_dict(json.loads(json.dumps(WRITTEN))) == RACE
    assert json.loads(json.dumps(RACE.to_dict())) == WRITTEN


def test_a_race_read_back_keeps_its_speedup_and_spread():
    back = Race.from_dict(WRITTEN)
    assert back.speedup == pytest.approx(2.5) and back.spread == RACE.spread


def _changed(path: str, value):
    data = json.loads(json.dumps(WRITTEN))
    *outer, last = path.split(".")
    inner = data
    for key in outer:
        inner = inner[key]
    if value is KeyError:
        del inner[last]
    else:
        inner[last] = value
    return data


@pytest.mark.parametrize("path, value, said", [
    ("speculative.kinds", ["accepted", "evil", "bonus"], "race.speculative.kinds must be a list of target"),
    ("target_only.times_s", [0.03, 0.02, 0.01], "race.target_only.times_s must never go back"),
    ("target_only.times_s", [0.01, 0.02], "as many kinds and times as texts"),
    ("speculative.side", "target_only", "race.speculative.side must be 'speculative'"),
    ("speculative.texts", ["a", 1, "c"], "race.speculative.texts must be a list"),
    ("first", "both", "race.first must be"),
    ("device", 7, "race.device must be a short text"),
    ("predicted_s", float("nan"), "race.predicted_s must be a number >= 0"),
    ("capped_to", True, "race.capped_to must be a whole number"),
    ("stopped_s", -1, "race.stopped_s must be a number >= 0"),
    ("speculative", KeyError, "race.speculative is missing"),
    ("script", "alert(1)", "race has fields this version does not know: script"),
    ("target_only.draft_passes", "2", "race.target_only.draft_passes must be a whole number"),
])
def test_a_changed_race_is_refused_naming_its_field(path, value, said):
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(")", r"\)")):
        Race.from_dict(_changed(path, value))


def test_a_race_that_is_not_an_object_is_refused():
    with pytest.raises(ValueError, match="race must be an object, not list"):
        Race.from_dict([1, 2])
