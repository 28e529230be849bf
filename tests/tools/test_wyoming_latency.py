"""scripts/wyoming_latency.py, run as the manual says, with small counts: its figures have their
shape, and every clock holds the stand-in's answer. Nothing here depends on speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fixtures.process import REPO


def test_wyoming_and_http_are_timed_for_the_same_clip_through_the_stand_in(
    tmp_path: Path,
) -> None:
    out = tmp_path / "figures.json"
    script = REPO / "scripts" / "wyoming_latency.py"
    small = ["--runs", "3", "--warmup", "1", "--seconds", "1", "--model-ms", "20"]
    result = subprocess.run(
        [sys.executable, str(script), *small, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(out.read_text())
    assert figures["upstream"] == "stand-in, 20.0 ms"
    assert (figures["runs"], figures["clip_seconds"]) == (3, 1.0)
    assert figures["texts"] == ["Hello world."]  # every leg answered, with the same text
    for protocol in ("wyoming", "http", "http_stream"):
        # each clock starts before the model's 20 ms and stops after them
        assert 20 <= figures[protocol]["p50_ms"] <= figures[protocol]["p90_ms"]
    difference = figures["http"]["p50_ms"] - figures["wyoming"]["p50_ms"]
    assert figures["http_minus_wyoming_p50_ms"] == round(difference, 2)
    assert "Wyoming, audio-stop -> transcript" in result.stdout
