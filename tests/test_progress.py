"""Time expectations of ``zoo run`` (inference/core/progress.py): the last run's time as an estimate, a heartbeat."""

import time

from inference.core import progress


def test_the_last_run_like_this_is_the_estimate(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_RUN_TIMES", str(tmp_path / "times.json"))
    key = progress.run_key("blr", "nuts", {"num_samples": 10}, {"size": ["n=20"]})
    assert key != progress.run_key("blr", "nuts", {"num_samples": 11}, {"size": ["n=20"]})
    lines = []
    with progress.expectations("zoo: nuts on blr", key, every=60, out=lines.append):
        time.sleep(0.01)
    assert lines == []  # nothing known yet, and shorter than a heartbeat
    first = progress.last_time(key)
    assert first is not None and first >= 0.01
    with progress.expectations("zoo: nuts on blr", key, every=60, out=lines.append):
        pass
    assert lines == [f"zoo: nuts on blr: the last run like this took {progress.duration(first)}"]


def test_heartbeat_during_a_long_run():
    lines = []
    with progress.Heartbeat("zoo: svi on dagp", every=0.05, out=lines.append):
        time.sleep(0.3)
    assert len(lines) >= 3 and all(line.startswith("zoo: svi on dagp: ") and "elapsed" in line for line in lines)


def test_durations_read_as_a_person_says_them():
    assert [progress.duration(s) for s in (4.2, 42, 185, 3725)] == ["4.2 s", "42 s", "3 min 05 s", "1 h 02 min"]


def test_off_keeps_no_times(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_RUN_TIMES", "off")
    progress.record("k", 1.0)
    assert progress.last_time("k") is None
