from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from qwen3_asr_server.backend import launch
from qwen3_asr_server.serving.cli import parse_args


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
        "--enable-prompt-tokens-details",
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


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def test_cpu_mode_fits_a_shared_machine(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path, "vllm")
    monkeypatch.setattr(launch, "available_memory", lambda: 20 * launch.GiB)
    command = launch.build(parse_args(["--cpu", "--no-enable-prefix-caching"])[0], 1, [], {})
    assert command.device == "cpu"
    assert "--enforce-eager" in command.argv
    assert "--enable-prefix-caching" not in command.argv
    assert _flag(command.argv, "--kv-cache-dtype") == "auto"  # fp8 needs AVX-512 on CPU
    assert _flag(command.argv, "--kv-cache-memory-bytes") == str(4 * launch.GiB)
    assert _flag(command.argv, "--distributed-executor-backend") == "uni"
    assert command.env == {
        "TORCH_COMPILE_DISABLE": "1",  # eager means no C++ compiler is needed at run time
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "OMP_NUM_THREADS": str(len(os.sched_getaffinity(0))),
    }


def test_cpu_mode_leaves_what_the_user_chose(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path, "vllm")
    settings = parse_args(["--cpu", "--kv-cache-dtype", "fp8"])[0]
    chosen = [
        "--no-enforce-eager",
        "--kv-cache-memory-bytes=1",
        "--distributed-executor-backend",
        "mp",
    ]
    command = launch.build(settings, 1, chosen, {"OMP_NUM_THREADS": "3"})
    assert _flag(command.argv, "--kv-cache-dtype") == "fp8"
    told = launch.build(settings, 1, [], {"TORCH_COMPILE_DISABLE": "0"})
    assert "TORCH_COMPILE_DISABLE" not in told.env  # the user's own value stands
    assert "--enforce-eager" not in command.argv
    assert command.argv.count("--distributed-executor-backend") == 1
    assert command.argv[-4:] == chosen
    assert command.env == {}
    for compiled in (["-O3"], ["-cc", "{}"], ["--compilation-config={}"]):
        assert "--enforce-eager" not in launch.build(settings, 1, compiled, {}).argv
    by_env = launch.build(settings, 1, [], {"VLLM_CPU_KVCACHE_SPACE": "2"})
    assert "--kv-cache-memory-bytes" not in by_env.argv
    by_flag = launch.build(parse_args(["--cpu", "--gpu-memory-utilization", "0.3"])[0], 1, [], {})
    assert "--kv-cache-memory-bytes" not in by_flag.argv


def test_gpu_mode_adds_no_cpu_defaults(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path, "vllm")
    command = launch.build(parse_args([])[0], 1, [], {})
    assert _flag(command.argv, "--kv-cache-dtype") == "fp8"
    assert "--kv-cache-memory-bytes" not in command.argv
    assert "--enforce-eager" not in command.argv
    assert command.env == {}


@pytest.mark.parametrize(
    ("available", "expected"),
    [
        (20 * launch.GiB, 4 * launch.GiB),
        (6 * launch.GiB + 12345, 1536 << 20),
        (512 << 20, 256 << 20),
    ],
)
def test_cpu_kv_cache_is_a_quarter_of_free_memory_within_bounds(available, expected) -> None:
    assert launch.cpu_kv_cache_bytes(available) == expected


def test_available_memory_is_read_from_the_kernel() -> None:
    assert 0 < launch.available_memory() < os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def test_no_vllm_anywhere_says_what_to_install(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path)
    with pytest.raises(launch.LaunchError, match=r"pip install '\.\[gpu\]'"):
        launch.build(parse_args([])[0], 1, [])
    with pytest.raises(launch.LaunchError, match=r"bash scripts/install-cpu-engine\.sh"):
        launch.build(parse_args(["--cpu"])[0], 1, [])


def test_no_vllm_is_installed_in_the_test_environment() -> None:
    # The supervisor tests rely on PATH to choose the stand-in; a real vLLM here would win.
    assert not launch._native_vllm_in_this_environment(cpu=False)
    assert os.environ.get("PATH")


def test_free_port_is_bindable_and_none_an_outgoing_connection_takes() -> None:
    port = launch.free_port()
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", port))
    floor = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert launch.PORTS_FROM <= port < floor


def test_vllm_realtime_starts_the_realtime_architecture(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path, "vllm")
    settings, extra = parse_args(["--model", "m", "--vllm-realtime"])
    argv = launch.build(settings, 4321, extra).argv
    assert argv[argv.index("--hf-overrides") + 1] == launch.REALTIME_ARCHITECTURE
    # the user's own overrides win (they must name the architecture themselves)
    settings, extra = parse_args(["--model", "m", "--vllm-realtime", "--hf-overrides", "{}"])
    argv = launch.build(settings, 4321, extra).argv
    assert argv.count("--hf-overrides") == 1
    assert argv[argv.index("--hf-overrides") + 1] == "{}"


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_aligner_is_served_as_a_pooling_model_on_a_gpu_share(monkeypatch, tmp_path) -> None:
    bin_dir = _on_path(monkeypatch, tmp_path, "vllm")
    settings = parse_args(["--aligner", "Qwen/Qwen3-ForcedAligner-0.6B"])[0]
    command = launch.build_aligner(settings, 4322)
    assert command.argv[:3] == [str(bin_dir / "vllm"), "serve", "Qwen/Qwen3-ForcedAligner-0.6B"]
    assert command.device == "cuda"
    argv = command.argv
    assert _flag(argv, "--port") == "4322"
    assert _flag(argv, "--runner") == "pooling"
    assert _flag(argv, "--pooler-config") == '{"tok_pooling_type": "STEP", "step_tag_id": 151705}'
    assert _flag(argv, "--max-model-len") == "8192"
    assert _flag(argv, "--gpu-memory-utilization") == "0.15"
    # the ASR engine leaves it that room, unless told its own share
    assert _flag(launch.build(settings, 1, []).argv, "--gpu-memory-utilization") == "0.75"
    mine = parse_args(["--aligner", "a", "--gpu-memory-utilization", "0.6"])[0]
    assert _flag(launch.build(mine, 1, []).argv, "--gpu-memory-utilization") == "0.6"
    assert "--gpu-memory-utilization" not in launch.build(parse_args([])[0], 1, []).argv


def test_aligner_flags_of_the_user_win(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path, "vllm")
    args = "--aligner-vllm-args=--max-model-len 4096 --gpu-memory-utilization 0.2 --dtype float32"
    argv = launch.build_aligner(parse_args(["--aligner", "a", args])[0], 1).argv
    assert argv.count("--max-model-len") == argv.count("--gpu-memory-utilization") == 1
    assert argv[-6:] == [
        "--max-model-len",
        "4096",
        "--gpu-memory-utilization",
        "0.2",
        "--dtype",
        "float32",
    ]
    share = parse_args(["--aligner", "a", "--aligner-gpu-memory-utilization", "0.3"])[0]
    assert _flag(launch.build_aligner(share, 1).argv, "--gpu-memory-utilization") == "0.3"


def test_aligner_on_cpu_gets_the_smallest_kv_cache(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path, "vllm")
    settings = parse_args(["--cpu", "--aligner", "a"])[0]
    command = launch.build_aligner(settings, 1, {})
    assert command.device == "cpu"
    assert _flag(command.argv, "--kv-cache-memory-bytes") == str(256 << 20)
    assert "--gpu-memory-utilization" not in command.argv
    assert "--enforce-eager" in command.argv
    assert command.env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    # no GPU to share on CPU: the ASR engine's memory is sized as without an aligner
    assert "--gpu-memory-utilization" not in launch.build(settings, 1, [], {}).argv


def test_aligner_config_comes_from_a_local_checkpoint(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path, "vllm")
    checkpoint = tmp_path / "aligner"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text(
        '{"timestamp_token_id": 286, "timestamp_segment_time": 40}'
    )
    assert launch.aligner_config(str(checkpoint)) == launch.AlignerConfig(286, 0.04)
    argv = launch.build_aligner(parse_args(["--aligner", str(checkpoint)])[0], 1).argv
    assert '"step_tag_id": 286' in _flag(argv, "--pooler-config")
    (checkpoint / "config.json").write_text('{"model_type": "qwen3_asr"}')
    with pytest.raises(launch.LaunchError, match="is not a Qwen3-ForcedAligner config"):
        launch.aligner_config(str(checkpoint))


def test_aligner_needs_native_vllm(monkeypatch, tmp_path) -> None:
    _on_path(monkeypatch, tmp_path, "qwen-asr-serve")
    with pytest.raises(launch.LaunchError, match=r"--aligner needs vLLM >= 0\.3x"):
        launch.build_aligner(parse_args(["--aligner", "a"])[0], 1)
