"""scripts/batch_latency.py, run as the manual says at a tiny size: interactive requests
timed idle and while a batch runs, each figure in its place. Nothing here depends on speed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fixtures.process import run_script


def test_a_tiny_run_times_probes_idle_and_beside_a_running_batch(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    tiny = ["--probes", "3", "--lines", "30", "--line-seconds", "10", "--model-ms", "50"]
    result = run_script("scripts/batch_latency.py", *tiny, "--json", str(out), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(out.read_text())
    for step in ("idle", "busy"):
        assert 50 <= figures[step]["median_ms"] <= figures[step]["p95_ms"], figures
    assert figures["batch"]["total"] == 30
    assert figures["batch"]["failed"] == 0
    assert figures["ratio"]["median_ms"] == round(
        figures["busy"]["median_ms"] / figures["idle"]["median_ms"], 2
    )
