"""Hostile and slow clients against the real server process: huge heads, slowloris, slow POST,
early answers to bodies still on their way.

Each test starts `server.py --read-timeout 1` (or more) and talks to it over raw sockets. The
waits are generous (WAIT seconds); what is asserted is that the server answered and closed, not
how fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from pathlib import Path

import httpx
import pytest

from tests.fixtures.audio import wav
from tests.fixtures.process import ServerProcess, install_launcher, memory

MIB = 1 << 20
WAIT = 10.0
BOUNDARY = "----qwen3asrslowclient"
PART = (
    f"--{BOUNDARY}\r\n"
    'Content-Disposition: form-data; name="file"; filename="a.wav"\r\n'
    "Content-Type: audio/wav\r\n\r\n"
).encode()
TAIL = f"\r\n--{BOUNDARY}--\r\n".encode()
UPLOAD = (
    "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: asr\r\n"
    f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
)


def _start(
    tmp_path: Path, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> ServerProcess:
    install_launcher(tmp_path / "bin", "vllm")
    server = ServerProcess(tmp_path, ["--model", "m", "--read-timeout", "1", *args], env)
    try:
        server.wait_for_health(200)
    except BaseException:
        server.stop()
        raise
    return server


def _connect(server: ServerProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=WAIT)


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes; fails if it has not closed within WAIT."""
    answer = b""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return answer
        except TimeoutError:
            break
        if not chunk:
            return answer
        answer += chunk
    raise AssertionError(f"the server did not close the connection; it sent {answer[:200]!r}")


def _trickle(sock: socket.socket, every: float = 0.3) -> tuple[bytes, float]:
    """Send a byte every `every` seconds until the server closes: what it sent, and after how
    many seconds it closed; fails if it has not closed within WAIT."""
    sock.settimeout(every)
    answer = b""
    start = time.monotonic()
    while time.monotonic() < start + WAIT:
        with contextlib.suppress(OSError):
            sock.sendall(b"X")
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            break
        if not chunk:
            break
        answer += chunk
    else:
        raise AssertionError(f"the server did not close; it sent {answer[:200]!r}")
    return answer, time.monotonic() - start


def _assert_error(answer: bytes, status: int, code: str, param: str | None = None) -> None:
    """An OpenAI-shaped error answer with `Connection: close`."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith(f"HTTP/1.1 {status} "), answer[:300]
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    assert headers["connection"] == "close"
    assert headers["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert error["code"] == code
    assert error["message"]


def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One response with a Content-Length, leaving the connection open."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection; it sent {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        int(v) for k, _, v in (x.partition(":") for x in lines) if k.lower() == "content-length"
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-response"
        body += chunk
    return int(lines[0].split()[1]), body


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _transcribes(server: ServerProcess) -> None:
    url = f"{server.url}/v1/audio/transcriptions"
    response = httpx.post(url, files={"file": ("a.wav", wav(1.0))}, timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["text"] == "Hello world."


def test_a_huge_request_head_is_refused_without_buffering_it(tmp_path: Path) -> None:
    server = _start(tmp_path)
    try:
        _transcribes(server)
        with _connect(server) as sock:  # a large head under the cap is fine
            sock.sendall(
                b"GET /health HTTP/1.1\r\nHost: asr\r\nX-Big: " + b"a" * 48_000 + b"\r\n\r\n"
            )
            assert _read_response(sock)[0] == 200
        baseline = memory(server.proc.pid, "VmHWM")
        with _connect(server) as sock:  # 50 MiB of one header line, sent as fast as it goes
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: asr\r\nX-Flood: ")
            with contextlib.suppress(OSError):  # the server closes while we are still sending
                for _ in range(50):
                    sock.sendall(b"a" * MIB)
            _until_closed(sock)
        assert memory(server.proc.pid, "VmHWM") - baseline < 8 * MIB
        with _connect(server) as sock:
            with contextlib.suppress(OSError):
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: asr\r\nX-Big: " + b"a" * MIB)
            _assert_error(_until_closed(sock), 431, "headers_too_large")
        _transcribes(server)
    finally:
        server.stop()


def test_slowloris_gets_408_and_is_closed(tmp_path: Path) -> None:
    server = _start(tmp_path)
    try:
        with _connect(server) as sock:
            sock.sendall(UPLOAD.encode())
            answer, _ = _trickle(sock)  # one byte of a header name every 0.3 s
        _assert_error(answer, 408, "request_timeout")
    finally:
        server.stop()


def test_a_connection_that_sends_nothing_is_closed(tmp_path: Path) -> None:
    server = _start(tmp_path)
    try:
        with _connect(server) as sock:
            assert _until_closed(sock) == b""
    finally:
        server.stop()


def test_a_stalled_body_gets_408_and_leaves_nothing_behind(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    server = _start(tmp_path, {"TMPDIR": str(spool)})
    pid = server.proc.pid
    try:
        _transcribes(server)
        before = _open_fds(pid)
        with _connect(server) as sock:
            # 2 MiB of the declared 4: past Starlette's 1 MiB in memory, so the upload is on disk
            sock.sendall(f"{UPLOAD}Content-Length: {4 * MIB}\r\n\r\n".encode() + PART)
            sock.sendall(b"\0" * (2 * MIB))
            _assert_error(_until_closed(sock), 408, "request_timeout")
        deadline = time.monotonic() + WAIT
        while _open_fds(pid) > before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _open_fds(pid) <= before
        assert list(spool.iterdir()) == []
        _transcribes(server)
        # the app saw the client go: logged as such (nginx's 499), not as a server error
        assert "status=499" in server.output()
        assert "Unhandled error" not in server.output()
    finally:
        server.stop()


def test_a_keep_alive_client_may_pause_between_requests(tmp_path: Path) -> None:
    # The answer takes longer than --read-timeout too: only the client's sending is timed.
    server = _start(tmp_path, {"FAKE_VLLM_RESPONSE_DELAY": "1.5"})
    try:
        audio = PART + wav(1.0) + TAIL
        upload = f"{UPLOAD}Content-Length: {len(audio)}\r\n\r\n".encode() + audio
        with _connect(server) as sock:
            sock.sendall(upload)
            status, body = _read_response(sock)
            assert status == 200, body
            assert json.loads(body)["text"] == "Hello world."
            time.sleep(2)  # longer than --read-timeout 1, shorter than uvicorn's keep-alive (5)
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: asr\r\n\r\n")
            status, body = _read_response(sock)
            assert status == 200, body
            time.sleep(2)
            sock.sendall(upload)
            status, body = _read_response(sock)
            assert status == 200, body
    finally:
        server.stop()


def test_a_body_trickled_below_the_pause_timeout_is_cut_at_the_minimum_rate(
    tmp_path: Path,
) -> None:
    # a byte every 0.3 s never pauses for --read-timeout 1, but is far below 1 KiB/s
    server = _start(tmp_path)
    try:
        with _connect(server) as sock:
            sock.sendall(f"{UPLOAD}Content-Length: {4 * MIB}\r\n\r\n".encode() + PART)
            answer, seconds = _trickle(sock)
        _assert_error(answer, 408, "request_timeout")
        assert b"KiB/s" in answer
        print(f"cut after {seconds:.1f} s")
        _transcribes(server)
    finally:
        server.stop()


def test_a_slow_link_above_the_minimum_rate_is_served_past_the_grace(tmp_path: Path) -> None:
    # 1 KiB every 0.25 s (4 KiB/s) for 4 s: longer than --read-timeout 1, faster than 1 KiB/s
    server = _start(tmp_path)
    try:
        audio = PART + wav(0.5) + TAIL
        with _connect(server) as sock:
            sock.sendall(f"{UPLOAD}Content-Length: {len(audio)}\r\n\r\n".encode())
            start = time.monotonic()
            for offset in range(0, len(audio), 1024):
                sock.sendall(audio[offset : offset + 1024])
                time.sleep(0.25)
            assert time.monotonic() - start > 2  # well past the grace
            status, body = _read_response(sock)
        assert status == 200, body
        assert json.loads(body)["text"] == "Hello world."
    finally:
        server.stop()


KEY = "sk-slow-client-key"
GIGABYTES = 2 << 30


@pytest.mark.parametrize(
    ("head", "status", "code"),
    [
        (f"{UPLOAD}Content-Length: {GIGABYTES}\r\n", 401, "missing_api_key"),
        (
            f"POST /health HTTP/1.1\r\nHost: asr\r\nContent-Length: {GIGABYTES}\r\n",
            405,
            "method_not_allowed",
        ),
        (
            f"PUT /nowhere HTTP/1.1\r\nHost: asr\r\nContent-Length: {GIGABYTES}\r\n",
            404,
            "not_found",
        ),
        (
            f"{UPLOAD}Authorization: Bearer {KEY}\r\nContent-Length: {GIGABYTES}\r\n",
            413,
            "file_too_large",
        ),
        (f"{UPLOAD}Transfer-Encoding: chunked\r\n", 401, "missing_api_key"),
    ],
    ids=["401", "405", "404", "413", "401-chunked"],
)
def test_an_answer_before_the_body_closes_the_connection(
    tmp_path: Path, head: str, status: int, code: str
) -> None:
    # --read-timeout 20: neither the pause timer nor the minimum rate cuts in within WAIT
    server = _start(tmp_path, args=("--api-key", KEY, "--read-timeout", "20"))
    try:
        with _connect(server) as sock:
            chunked = "chunked" in head  # then the bytes trickled are one huge chunk's
            sock.sendall(head.encode() + b"\r\n" + (b"7fffffff\r\n" if chunked else b""))
            answer, seconds = _trickle(sock)
        _assert_error(answer, status, code, "file" if status == 413 else None)
        print(f"closed after {seconds:.1f} s")
        with _connect(server) as sock:  # a request without a body keeps its connection
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: asr\r\n\r\n")
            assert _read_response(sock)[0] == 200
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: asr\r\n\r\n")
            assert _read_response(sock)[0] == 200
    finally:
        server.stop()
