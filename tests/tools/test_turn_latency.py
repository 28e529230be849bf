"""scripts/turn_latency.py, run as the performance page says, with one cycle: every turn is
timed on both clocks, for each model time, and the stand-in's count of what it was asked comes
back. Nothing here depends on speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fixtures.process import REPO


def test_each_turn_is_timed_beside_a_slow_model(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    script = REPO / "scripts" / "turn_latency.py"
    small = ["--cycles", "1", "--model-ms", "0,50", "--json", str(out)]
    result = subprocess.run(
        [sys.executable, str(script), *small],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert [row["model_ms"] for row in rows] == [0.0, 50.0]
    for row in rows:
        assert row["turns"] == 2  # both turns of the cycle were transcribed
        for clock in ("stopped", "speech_end"):
            assert 0 <= row[clock]["p50_ms"] <= row[clock]["p95_ms"]
        # the window closes after the speech ends, and the transcript comes after that
        assert row["speech_end"]["p50_ms"] > row["stopped"]["p50_ms"]
        assert row["asked_per_utterance"] >= 1  # each utterance went to the model
    assert "model asked per utterance" in result.stdout
