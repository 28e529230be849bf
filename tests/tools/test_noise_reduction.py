"""scripts/noise_reduction.py on three utterances in one noise: its tables have their shape,
and the signal left alone is measured as exactly the clean one. Nothing here depends on speed
or on which denoiser wins."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fixtures.process import REPO

DENOISERS = ["none", "webrtc", "speex"]


def test_noise_reduction_measures_each_denoiser_near_and_far(tmp_path: Path) -> None:
    out = tmp_path / "noise.json"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "noise_reduction.py"),
            *("--turns", "3", "--snr", "10", "--noise", "pink"),
            *("--denoisers", ",".join(DENOISERS), "--json", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    profile = lines.index(
        "denoiser | fed as | lag ms | clean kept: SNR dB, level dB, log-mel distance dB"
    )
    untouched = lines[profile + 1].split(" | ")
    assert untouched == ["none", "-", "0.0", "99.0, +0.0, 0.0"]
    table = lines.index("field | noise | SNR | none | webrtc | speex")
    rows = [line.split(" | ") for line in lines[table + 1 : table + 5]]
    assert [row[:3] for row in rows] == [
        ["near", "clean", "-"],
        ["near", "pink", "10"],
        ["far", "clean", "-"],
        ["far", "pink", "10"],
    ]
    assert rows[0][3] == "0/0 0/0 0.0"  # the clean near field against itself
    figures = json.loads(out.read_text())
    assert figures["turns"] == 3
    for row in figures["rows"]:
        assert list(row["denoisers"]) == DENOISERS
        for cell in row["denoisers"].values():
            assert 0 <= cell["missed"] <= 3
            assert cell["false"] >= 0
            assert cell["mel_db"] >= 0
    noisy = figures["rows"][1]["denoisers"]["none"]
    assert noisy["mel_db"] > 0  # the noise is heard
    summary = figures["summary"]
    assert summary["webrtc"]["cpu_ms_per_s"] > 0
    assert summary["speex"]["cpu_ms_per_s"] > 0
    assert 0 < summary["speex"]["lag"] < 800  # a streaming denoiser's delay, measured
