"""scripts/span_cost.py, run as the manual says, with a small count: its figures have their
shape, and it made and encoded the spans it says it did. Nothing here depends on speed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fixtures.process import run_script


def test_span_cost_times_recording_and_encoding_a_requests_two_spans(tmp_path: Path) -> None:
    out = tmp_path / "spans.json"
    result = run_script("scripts/span_cost.py", "--requests", "300", "--json", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    figures = json.loads(out.read_text())
    assert figures["requests"] == 300
    assert figures["recording_us_per_request"] > 0
    assert figures["encoding_us_per_request"] > 0
    total = figures["recording_us_per_request"] + figures["encoding_us_per_request"]
    assert abs(figures["total_us_per_request"] - total) <= 0.2  # each rounded apart
    assert "two spans a request" in result.stdout
