"""scripts/wake_time.py, run as its usage says on the stand-in vLLM: its table and figures have
their shape, and each first answer after a sleep waited for the wake /metrics counted."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fixtures.process import run_script


def test_wake_time_times_the_first_answer_after_sleep_and_an_awake_one(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    small = ["--stand-in", "--level", "2", "--runs", "2", "--idle-sleep", "0.5"]
    result = run_script("scripts/wake_time.py", *small, "--json", str(out), timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    table = result.stdout.splitlines()
    assert table[0].startswith("| engine | runs | wake to answer, p50 | awake answer, p50 |")
    assert table[2].startswith("| stand-in, level 2 | 2 | ")
    assert table[2].endswith("| - | - |")  # no nvidia-smi here
    figures = json.loads(out.read_text())
    assert figures["engine"] == "stand-in, level 2"
    assert len(figures["rounds"]) == 2
    for entry in figures["rounds"]:
        # level 2 wakes the weights and the KV cache, 0.2 s each in the stand-in
        assert entry["wake_s"] >= 0.4
        assert entry["wake_to_answer_s"] >= entry["wake_s"]  # the answer waited for it
        assert entry["awake_answer_s"] > 0
        assert entry["gpu_mib_awake"] is None
