"""`server.py` launching a stand-in vLLM: readiness, forwarding, restarts, shutdown, failures."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.fixtures.audio import wav
from tests.fixtures.process import ServerProcess, gone, install_launcher

SPEECH = wav(1.0)


@pytest.fixture
def run_server(tmp_path: Path) -> Iterator[type[ServerProcess]]:
    started: list[ServerProcess] = []

    def start(args: list[str], env: dict[str, str] | None = None) -> ServerProcess:
        server = ServerProcess(tmp_path, args, env)
        started.append(server)
        return server

    yield start  # type: ignore[misc]
    for server in started:
        server.stop()


def test_launches_vllm_and_serves_the_sdk(tmp_path: Path, run_server) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(
        [
            "--model",
            "org/tiny-asr",
            "--served-model-name",
            "tiny",
            "--max-num-seqs",
            "8",
            "--enforce-eager",
            "--tensor-parallel-size",
            "2",
        ],
        {"FAKE_VLLM_LOAD_SECONDS": "1.5"},
    )
    loading = server.wait_for_health(503)
    assert loading["status"] == "loading"
    ready = server.wait_for_health(200)
    assert ready == {
        "status": "ok",
        "model": "tiny",
        "backend": "vllm",
        "device": "cuda",
        "restarts": 0,
    }
    argv = server.starts()[0]["argv"]
    assert argv[1:3] == ["serve", "org/tiny-asr"]
    assert argv[argv.index("--served-model-name") + 1] == "tiny"
    assert argv[argv.index("--kv-cache-dtype") + 1] == "fp8"
    assert argv[argv.index("--max-model-len") + 1] == "4096"
    assert argv[argv.index("--max-num-seqs") + 1] == "8"
    assert "--enable-prefix-caching" in argv
    assert argv[-3:] == ["--enforce-eager", "--tensor-parallel-size", "2"]
    assert argv[argv.index("--host") + 1] == "127.0.0.1"

    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0)
    result = client.audio.transcriptions.create(model="tiny", file=("a.wav", SPEECH))
    assert result.text == "Hello world."
    french = client.audio.transcriptions.create(
        model="whisper-1", file=("a.wav", SPEECH), language="fr", response_format="text"
    )
    assert french.strip() == "Bonjour le monde."
    stream = client.chat.completions.create(
        model="tiny",
        stream=True,
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "input_audio",
                        "input_audio": {
                            "data": base64.b64encode(SPEECH).decode(),
                            "format": "wav",
                        },
                    }
                ],
            }
        ],
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Hello world."
    output = server.output()
    assert "vllm: INFO fake vLLM loading org/tiny-asr" in output
    assert "vLLM ready" in output


def test_older_stack_is_launched_through_qwen_asr_serve(tmp_path: Path, run_server) -> None:
    install_launcher(tmp_path / "bin", "qwen-asr-serve")
    server = run_server(["--model", "tiny"])
    assert server.wait_for_health(200)["backend"] == "qwen-asr-serve"
    assert server.starts()[0]["argv"][1] == "tiny"  # no `serve` subcommand
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", max_retries=0)
    assert client.audio.transcriptions.create(model="tiny", file=("a", SPEECH)).text == (
        "Hello world."
    )
    german = client.audio.transcriptions.create(model="tiny", file=("a", SPEECH), language="de")
    assert german.text == "Hallo Welt."


def test_crashed_vllm_is_restarted_and_serves_again(tmp_path: Path, run_server) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny"])
    server.wait_for_health(200)
    first = server.starts()[0]
    os.kill(first["pid"], signal.SIGKILL)
    down = server.wait_for_health(503, timeout=10)
    assert down["status"] == "down"
    response = httpx.post(f"{server.url}/v1/audio/transcriptions", files={"file": ("a", SPEECH)})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert server.wait_for_health(200)["restarts"] == 1
    assert gone([first["child"]]), "the crashed vLLM's engine child survived the restart"
    assert len(server.starts()) == 2
    response = httpx.post(f"{server.url}/v1/audio/transcriptions", files={"file": ("a", SPEECH)})
    assert response.json()["text"] == "Hello world."
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'qwen3_asr_backend_restarts_total{backend="asr"} 1.0' in metrics
    assert 'qwen3_asr_model_ready{backend="asr"} 1.0' in metrics
    assert "vLLM exited with code -9" in server.output()


def test_sigterm_stops_vllm_process_group_even_a_stubborn_child(tmp_path: Path, run_server) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny"], {"FAKE_VLLM_STUBBORN_CHILD": "1"})
    server.wait_for_health(200)
    start = server.starts()[0]
    server.proc.send_signal(signal.SIGTERM)
    # uvicorn re-raises the signal once it has shut down cleanly, as process managers expect
    assert server.wait_exit(timeout=40) == -signal.SIGTERM
    assert "Finished server process" in server.output()
    assert gone([start["pid"], start["child"]], timeout=2), "vLLM processes outlived the server"
    assert "killing it" in server.output()


def test_sigkilled_server_takes_vllm_with_it(tmp_path: Path, run_server) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny"])
    server.wait_for_health(200)
    start = server.starts()[0]
    server.proc.kill()
    server.wait_exit()
    assert gone([start["pid"], start["child"]]), "vLLM was orphaned by a SIGKILLed server"


def _sockets(pid: int) -> set[str]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(FileNotFoundError):  # closed since it was listed
            link = os.readlink(fd)
            if link.startswith("socket:"):
                found.add(link)
    return found


def test_a_killed_servers_port_refuses_at_once(tmp_path: Path, run_server) -> None:
    """vLLM does not hold the server's listening socket (uvicorn makes it inheritable, and
    uvloop's spawn passes on what is inheritable): else a load balancer's connections to a
    dead server are accepted by the kernel and hang until vLLM has stopped too."""
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny"])
    server.wait_for_health(200)
    start = server.starts()[0]
    assert _sockets(start["pid"]) & _sockets(server.proc.pid) == set()
    server.proc.kill()
    server.wait_exit()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", server.port), timeout=2).close()


@pytest.mark.parametrize(
    ("args", "env", "bin_name", "expected"),
    [
        (["--bogus-flag"], {}, "vllm", "unrecognized arguments: --bogus-flag"),
        ([], {"FAKE_VLLM_EXIT_AT_START": "1"}, "vllm", "CUDA out of memory"),
        ([], {}, None, "vLLM is not installed"),
        (["--startup-timeout", "1"], {"FAKE_VLLM_LOAD_SECONDS": "30"}, "vllm", "not ready after"),
    ],
)
def test_vllm_that_cannot_start_ends_the_server_with_one_clear_line(
    tmp_path: Path, run_server, args: list[str], env: dict, bin_name: str | None, expected: str
) -> None:
    if bin_name:
        install_launcher(tmp_path / "bin", bin_name)
    server = run_server(["--model", "tiny", *args], env)
    assert server.wait_exit(timeout=40) == 1
    last_line = server.output().strip().splitlines()[-1]
    assert last_line.startswith("qwen3-asr-server: error: ")
    assert expected in last_line
    for start in server.starts():
        assert gone([start["pid"], start["child"]])


def test_unknown_flags_with_backend_url_are_an_error(tmp_path: Path, run_server) -> None:
    server = run_server(["--backend-url", "http://127.0.0.1:9", "--enforce-eager"])
    assert server.wait_exit() == 2
    assert "--enforce-eager" in server.output()


def test_sigterm_lets_in_flight_requests_finish(tmp_path: Path, run_server) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = run_server(["--model", "tiny"], {"FAKE_VLLM_RESPONSE_DELAY": "2"})
    server.wait_for_health(200)
    answers: list[httpx.Response] = []
    request = threading.Thread(
        target=lambda: answers.append(
            httpx.post(f"{server.url}/v1/audio/transcriptions", files={"file": SPEECH}, timeout=30)
        )
    )
    request.start()
    time.sleep(0.7)  # the request is now waiting on vLLM
    server.proc.send_signal(signal.SIGTERM)
    request.join(30)
    assert answers[0].status_code == 200
    assert answers[0].json()["text"] == "Hello world."
    assert server.wait_exit() == -signal.SIGTERM
    start = server.starts()[0]
    assert gone([start["pid"], start["child"]], timeout=2)


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("qwen3-asr-server")
    result = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "--backend-url" in result.stdout


def test_busy_port_is_one_line_and_launches_nothing(tmp_path: Path, run_server) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = run_server(["--model", "tiny", "--host", "127.0.0.1", "--port", str(port)])
        assert server.wait_exit() == 1
    assert f"cannot listen on 127.0.0.1:{port}" in server.output().strip().splitlines()[-1]
    assert server.starts() == []


# Run in a process of its own that takes in orphans as PID 1 does in a container without an
# init (a child subreaper), and, like the server, never reaps them.
_ZOMBIE_GROUP = """
import ctypes, os, subprocess, sys, time
from qwen3_asr_server.backend.process_group import group_alive
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
orphan = "import time; time.sleep(0.5)"
spawn = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {orphan!r}])"
leader = subprocess.Popen([sys.executable, "-c", spawn], start_new_session=True)
leader.wait()  # the group's leader is gone; its child runs on as this process's orphan
running = group_alive(leader.pid)
time.sleep(1.5)  # the orphan has exited, and nobody reaped it
states = [
    open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[:3]
    for pid in os.listdir("/proc") if pid.isdigit() and os.path.exists(f"/proc/{pid}/stat")
]
zombies = [s for s in states if s[0] == "Z" and int(s[2]) == leader.pid]
print(running, len(zombies), group_alive(leader.pid))
"""


def test_a_group_left_with_only_zombies_has_stopped() -> None:
    """As PID 1 the server inherits the orphans vLLM leaves and they stay zombies; waiting for
    them to leave the group held every stop for the whole 10 s grace, then a SIGKILL."""
    result = subprocess.run(
        [sys.executable, "-c", _ZOMBIE_GROUP],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert result.stdout.split() == ["True", "1", "False"]
