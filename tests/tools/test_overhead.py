"""scripts/overhead.py, run as the manual says, with small counts: its figures have their shape.

It starts the stand-in vLLM and server.py itself; nothing here depends on speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fixtures.process import REPO


def overhead(out: Path, *args: str) -> dict[str, Any]:
    """scripts/overhead.py run with `args`, writing its figures to `out`: the figures."""
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "overhead.py"), *args, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    figures: dict[str, Any] = json.loads(out.read_text())
    return figures


def test_overhead_measures_proxy_against_the_same_upstream(tmp_path: Path) -> None:
    small = ["--runs", "2", "--requests", "20", "--cpu-requests", "20", "--model-ms", "5"]
    figures = overhead(tmp_path / "figures.json", *small)
    assert figures["upstream"] == "stand-in, 5.0 ms"
    assert figures["failed"] == 0
    assert figures["requests"] == 20
    workloads = [entry["workload"] for entry in figures["compare"]]
    assert workloads == ["speech-5s.wav", "speech-30s.mp3", "concurrency 16"]
    for entry in figures["compare"]:
        # both sides answered, and through the proxy nothing is faster than the 5 ms model
        assert entry["a_p50_ms"] >= 5
        assert entry["b_p50_ms"] >= 5
    assert figures["compare"][2]["throughput_ratio_b_over_a"] > 0
    [streamed] = figures["stream_compare"]
    assert streamed["added_first_delta_ms"] is not None
    assert 0 < figures["rss_idle_mib"] <= figures["rss_after_mib"] + 50
    cpu = figures["cpu_ms_per_request"]
    assert list(cpu) == ["speech-5s.wav", "speech-30s.mp3"]
    for targets in cpu.values():
        assert set(targets) == {"direct", "proxy"}
        for spent in targets.values():
            assert set(spent) == {"proxy", "upstream", "client"}
            assert all(ms >= 0 for ms in spent.values())
    # decoding 30 s of MP3 (20 times, many clock ticks) shows in whichever process does it:
    # the upstream when it is sent there directly, the proxy when it goes through the proxy
    mp3 = cpu["speech-30s.mp3"]
    assert mp3["direct"]["upstream"] > 0
    assert mp3["proxy"]["proxy"] > 0


def test_capacity_measures_each_worker_count_against_the_floor(tmp_path: Path) -> None:
    args = ["--capacity", "--seconds", "1", "--workers", "2,1"]
    figures = overhead(tmp_path / "capacity.json", *args)
    assert figures["upstream"] == "canned (scripts/canned_upstream.py)"
    assert list(figures["files"]) == ["speech-5s.wav", "speech-30s.mp3"]
    for runs in figures["files"].values():
        floor = runs["floor"]
        assert floor["failed"] == 0
        assert floor["req_per_s"] > 0
        assert floor["cpu_ms_per_request"] > 0
        assert [run["workers"] for run in runs["server"]] == [1, 2]
        for run in runs["server"]:
            assert run["failed"] == 0
            assert run["req_per_s"] > 0
            assert run["cpu_ms_per_request"] > 0
            ratio = run["cpu_ms_per_request"] / floor["cpu_ms_per_request"]
            assert run["cpu_ratio"] == round(ratio, 2)
            first = runs["server"][0]["req_per_s"]
            assert run["req_per_s_vs_first"] == round(run["req_per_s"] / first, 2)


def test_capacity_measures_a_keys_file_against_the_api_key(tmp_path: Path) -> None:
    args = ["--capacity", "--seconds", "1", "--workers", "1", "--keys", "50"]
    figures = overhead(tmp_path / "capacity.json", *args)
    for runs in figures["files"].values():
        auths = [run["auth"] for run in runs["server"]]
        assert auths == ["--api-key", "--keys-file (50 keys)"]
        for run in runs["server"]:
            assert run["failed"] == 0  # the key wrk sends is served, by either
            assert run["cpu_ms_per_request"] > 0


def test_capacity_measures_tracing_on_against_off_in_rounds(tmp_path: Path) -> None:
    args = ["--capacity", "--seconds", "1", "--workers", "1", "--traces", "--rounds", "3"]
    figures = overhead(tmp_path / "capacity.json", *args)
    for runs in figures["files"].values():
        assert [run["auth"] for run in runs["server"]] == ["tracing off", "tracing on"]
        for run in [runs["floor"], *runs["server"]]:
            assert run["failed"] == 0  # every span sent to the stand-in collector, or dropped
            rounds = run["rounds_cpu_ms_per_request"]
            assert len(rounds) == 3
            assert min(rounds) > 0
            assert run["cpu_ms_per_request"] == sorted(rounds)[1]  # the median round


def test_capacity_runs_another_checkouts_server_beside_this_ones(tmp_path: Path) -> None:
    before = tmp_path / "before"
    before.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "HEAD"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
    args = ["--capacity", "--seconds", "1", "--workers", "1", "--against", str(before)]
    figures = overhead(tmp_path / "capacity.json", *args)
    for runs in figures["files"].values():
        assert [run["auth"] for run in runs["server"]] == ["no key", "no key, before"]
        for run in runs["server"]:
            assert run["failed"] == 0
            assert run["cpu_ms_per_request"] > 0
