"""scripts/batch_throughput.py, run as the manual says at a tiny size: the same recordings
answered synchronously and as batches on SQLite and PostgreSQL, every figure in its place.

It starts the stand-in vLLM, PostgreSQL and two servers itself; nothing here depends on speed.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fixtures.process import run_script

BATCHES = ("batch_sqlite", "batch_postgresql")


def test_a_tiny_run_answers_every_recording_both_ways_and_reports_each(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    tiny = ["--clips", "3", "--clip-seconds", "2", "--long", "1", "--long-seconds", "30"]
    tiny += ["--concurrency", "2", "--rounds", "2", "--store-lines", "20", "--model-ms", "5"]
    result = run_script("scripts/batch_throughput.py", *tiny, "--json", str(out), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(out.read_text())
    assert figures["upstream"] == "stand-in, 5.0 ms"
    assert figures["clips"] == {"count": 3, "seconds": 2.0, "format": "wav"}
    assert figures["long"] == {"count": 1, "seconds": 30.0, "format": "mp3"}
    assert figures["audio_seconds"] == 36.0
    assert figures["lines"] == 4
    assert len(figures["rounds"]) == 2
    for each in figures["rounds"]:
        assert each["sync"]["failed"] == 0
        for name in BATCHES:
            assert each[name]["status"] == "completed"
            assert each[name]["request_counts"] == {"total": 4, "completed": 4, "failed": 0}
            assert each[name]["answered_200"] == 4
            assert each[name]["upload"]["wall_s"] > 0
    summary = figures["summary"]
    assert list(summary) == ["sync", *BATCHES]
    for name, mode in summary.items():
        assert mode["wall_s"] > 0
        assert mode["audio_s_per_wall_s"] == round(2 * 36.0 / mode["wall_s"], 2), name
        assert mode["server_cpu_s"] >= 0
        assert mode["server_cpu_ms_per_audio_s"] >= 0
    assert "database_cpu_s" in summary["batch_postgresql"]
    for name in BATCHES:
        assert summary[name]["lines_completed"] == summary[name]["lines"] == 8
        versus = summary[name]["vs_sync"]
        assert versus["throughput_ratio"] > 0
        assert versus["cpu_ratio"] > 0
        added = summary[name]["server_cpu_s"] - summary["sync"]["server_cpu_s"]
        assert versus["added_cpu_ms_per_line"] == round(added * 1000 / 8, 3)
    store = figures["store"]
    assert list(store) == ["sqlite", "postgresql"]
    for cost in store.values():
        assert cost["wall_ms_per_line"] > 0
        assert cost["cpu_ms_per_line"] > 0
        calls = cost["cpu_ms_per_line_by_call"]
        assert set(calls) == {"batch", "claim_line", "file", "finish_line"}
    assert store["postgresql"]["database_cpu_ms_per_line"] >= 0
