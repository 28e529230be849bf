"""scripts/turn_end_quality.py on a few flite sentences and pyannote's sample conversation
(which scripts/test.sh installs with the [pyannote] environment in .cache/pyannote): every
comparison counted, its AUC and rates in range. Nothing here depends on what the model thinks."""

from __future__ import annotations

import glob
import math
import subprocess
import sys

import pytest

from tests.fixtures.process import REPO

SAMPLES = glob.glob(
    str(REPO / ".cache/pyannote/lib/python3*/site-packages/pyannote/audio/sample/sample.wav")
)
pytest.importorskip("pipecat", reason="the [turn] extra is not installed")


@pytest.mark.skipif(not SAMPLES, reason="pyannote's sample is not installed (.cache/pyannote)")
def test_turn_end_quality_compares_every_kind_of_point() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts/turn_end_quality.py"), "--flite", "4"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "comparison | counts | AUC | share judged finished (p > 0.5), each kind"
    rows = {line.split(" | ")[0]: line.split(" | ")[1:] for line in lines[1:5]}
    assert list(rows) == [
        "human: turn end / mid-sentence pause",
        "human: turn end / any pause in a turn",
        "human: sentence end / mid-sentence cut",
        "flite: complete / cut mid-sentence",
    ]
    # the sample's 13 sentences (sample.stm), 8 of them long enough to cut; 4 flite sentences,
    # the third "Yes." (too short to cut)
    assert rows["human: sentence end / mid-sentence cut"][0] == "13 / 8"
    assert rows["flite: complete / cut mid-sentence"][0] == "4 / 3"
    assert int(rows["human: turn end / mid-sentence pause"][0].split(" / ")[0]) > 0
    for counts, area, *shares in rows.values():
        assert math.isnan(float(area)) or 0.0 <= float(area) <= 1.0
        for count, share in zip(counts.split(" / "), shares, strict=True):
            assert share == "-" if count == "0" else 0.0 <= float(share) <= 1.0
    assert lines[5].startswith("CPU per call: ")
