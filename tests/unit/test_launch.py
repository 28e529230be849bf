from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from qwen3_asr_server import launch
from qwen3_asr_server.settings import parse_args


def _on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *names: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in names:
        program = bin_dir / name
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(launch, "_native_vllm_in_this_environment", lambda cpu: False)
    return bin_dir


def test_vllm_on_path_is_served_with_our_defaults(monkeypatch, tmp_path: Path) -> None:
    bin_dir = _on_path(monkeypatch, tmp_path, "vllm")
    settings, extra = parse_args(["--model", "m", "--gpu-memory-utilization", "0.55", "--x", "1"])
    command = launch.build(settings, 4321, extra)
    assert command.flavour == "vllm"
    assert command.device == "cuda"
    assert command.argv == [
        str(bin_dir / "vllm"),
        "serve",
        "m",
        "--host",
        "127.0.0.1",
        "--port",
        "4321",
        "--served-model-name",
        "m",
        "--max-model-len",
        "4096",
        "--kv-cache-dtype",
        "fp8",
        "--enable-prefix-caching",
        "--gpu-memory-utilization",
        "0.55",
        "--x",
        "1",
    ]


def test_older_stack_is_preferred_to_a_vllm_without_qwen3_asr(monkeypatch, tmp_path) -> None:
    bin_dir = _on_path(monkeypatch, tmp_path, "vllm", "qwen-asr-serve")
    command = launch.build(parse_args(["--model", "m"])[0], 1, [])
    assert command.flavour == "qwen-asr-serve"
    assert command.argv[:2] == [str(bin_dir / "qwen-asr-serve"), "m"]


def test_native_vllm_beside_the_server_is_run_with_this_python(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path, "qwen-asr-serve")
    monkeypatch.setattr(launch, "_native_vllm_in_this_environment", lambda cpu: True)
    command = launch.build(parse_args([])[0], 1, [])
    assert command.argv[:5] == [
        sys.executable,
        "-m",
        "vllm.entrypoints.cli.main",
        "serve",
        "Qwen/Qwen3-ASR-1.7B",
    ]


def test_cpu_mode_runs_eager(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path, "vllm")
    command = launch.build(parse_args(["--cpu", "--no-enable-prefix-caching"])[0], 1, [])
    assert command.device == "cpu"
    assert "--enforce-eager" in command.argv
    assert "--enable-prefix-caching" not in command.argv
    twice = launch.build(parse_args(["--cpu"])[0], 1, ["--enforce-eager"])
    assert twice.argv.count("--enforce-eager") == 1


def test_no_vllm_anywhere_says_what_to_install(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path)
    with pytest.raises(launch.LaunchError, match=r"pip install '\.\[gpu\]'"):
        launch.build(parse_args([])[0], 1, [])
    with pytest.raises(launch.LaunchError, match=r"pip install '\.\[cpu\]'"):
        launch.build(parse_args(["--cpu"])[0], 1, [])


def test_no_vllm_is_installed_in_the_test_environment() -> None:
    # The supervisor tests rely on PATH to choose the stand-in; a real vLLM here would win.
    assert not launch._native_vllm_in_this_environment(cpu=False)
    assert os.environ.get("PATH")


def test_free_port_is_bindable() -> None:
    port = launch.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
