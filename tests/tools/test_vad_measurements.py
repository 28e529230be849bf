"""scripts/realtime_load.py, scripts/webrtc_load.py, scripts/cut_quality.py and
scripts/long_audio.py, run with small counts: their figures have their shape, and what they
count came out as it must. Nothing here depends on speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.process import REPO


def run(script: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_realtime_load_counts_the_cpu_of_live_sessions(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    run("realtime_load.py", "--sessions", "1,2", "--seconds", "4.5", "--json", str(out))
    rows = json.loads(out.read_text())
    assert [(row["sessions"], row["vad"]) for row in rows] == [
        (1, True),
        (1, False),
        (2, True),
        (2, False),
    ]
    for row in rows:
        # 4.5 s of 3 s speech, 1 s silence: one utterance per session, found or committed
        assert row["transcripts"] == row["sessions"]
        assert row["cpu_percent_of_a_core"] > 0
        per_session = row["cpu_percent_of_a_core"] / row["sessions"]
        assert row["per_session_percent"] == pytest.approx(per_session, abs=0.06)
        # speech that pauses may be transcribed at the pause, then again: never with commits
        assert 0 <= row["transcribed_twice"] <= (1 if row["vad"] else 0)


def test_webrtc_load_counts_the_cpu_of_calls_beside_sessions(tmp_path: Path) -> None:
    out = tmp_path / "calls.json"
    lines = run("webrtc_load.py", "--calls", "2", "--seconds", "4", "--json", str(out)).splitlines()
    assert lines[0].startswith("calls | server CPU per call, % of a core: WebRTC / WebSocket")
    assert lines[1].startswith("2 | ")
    rows = json.loads(out.read_text())
    assert [(row["kind"], row["callers"], row["connected"]) for row in rows] == [
        ("webrtc", 2, 2),
        ("websocket", 2, 2),
    ]
    for row in rows:
        # each caller spoke at least one 3 s utterance, ended it and heard it transcribed
        assert row["utterances_sent"] >= 2
        assert row["utterances_transcribed"] == row["utterances_sent"]
        assert row["server_cpu_percent"] > 0
        assert row["client_cpu_percent"] > 0
        assert row["server_loop_percent"] > 0
        # the 3 s spoken, 300 ms of prefix padding and the tail: the stand-in heard it all
        assert row["heard_mean_s"] == pytest.approx(3.4, abs=0.4)
        assert not [reason for reason in row["broke"] if "failed" in reason]


def test_cut_quality_counts_cuts_inside_sentences() -> None:
    lines = run("cut_quality.py", "--minutes", "1.5", "--snr", "10", "--stream").splitlines()
    assert lines[0] == (
        "SNR | sentences | pieces | edges inside a sentence | CPU ms per audio s"
        " | whole-Silero plan: inside, CPU ms | edges not in the other plan | as one stream"
    )
    rows = [line.split(" | ") for line in lines[1:]]
    assert [row[0] for row in rows] == ["clean", "10.0"]
    for _, sentences, pieces, inside_of, planned, before, apart, one_stream in rows:
        assert int(sentences) > 15
        inside, _, edges = inside_of.partition(" of ")
        assert int(edges) == 2 * (int(pieces) - 1) > 0  # each cut: one end, one start
        assert 0 <= int(inside) <= int(edges)
        before_of, _, before_cpu = before.partition(", ")
        before_inside, _, before_edges = before_of.partition(" of ")
        assert 0 <= int(before_inside) <= int(before_edges)
        ours, _, theirs = apart.partition(" / ")
        assert 0 <= int(ours) <= int(edges)
        assert 0 <= int(theirs) <= int(before_edges)
        assert float(planned) > 0
        assert float(before_cpu) > 0
        assert float(one_stream) > 0
    assert rows[0][3].startswith("0 of")
    assert rows[0][5].startswith("0 of")  # clean speech is never cut inside a sentence


def test_long_audio_measures_each_step_and_the_server() -> None:
    lines = run("long_audio.py", "--minutes", "1", "--concurrent", "2").splitlines()
    assert lines[0].startswith("1 min of speech in pink noise at 20 dB")
    steps = dict(line.split(" | ") for line in lines[2:5])
    assert list(steps) == [
        "decode (PyAV)",
        "plan (planning.split)",
        "plan (Silero over all of it)",
    ]
    assert all(float(cpu.removesuffix(" s")) > 0 for cpu in steps.values())
    assert lines[5] == "server | CPU per audio hour | idle RSS | peak RSS | statuses"
    this, together = (line.split(" | ") for line in lines[6:8])
    assert this[0] == "this checkout"
    assert this[-1] == "200"
    assert together[0].startswith("2 at once")
    assert together[-1] == "200 200"
    assert float(this[1].removesuffix(" s")) > 0
