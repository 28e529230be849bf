"""Oversized uploads against the real server process: refused early, memory flat, no temp files."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import httpx

from tests.fixtures.audio import wav
from tests.fixtures.process import ServerProcess, install_launcher, memory

MIB = 1 << 20
BOUNDARY = "----qwen3asrtestboundary"
HEAD = (
    f"--{BOUNDARY}\r\n"
    'Content-Disposition: form-data; name="file"; filename="big.wav"\r\n'
    "Content-Type: application/octet-stream\r\n\r\n"
).encode()
TAIL = f"\r\n--{BOUNDARY}--\r\n".encode()


def _send_raw(port: int, headers: str, chunks: int) -> bytes:
    """Send a multipart body of `chunks` MiB over a raw socket; return what the server said.

    The server may answer and close before the body is through, so sending can fail; what
    matters is the answer it managed to send.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(headers.encode() + b"\r\n")
        with contextlib.suppress(OSError):
            for _ in range(chunks):
                piece = HEAD if _ == 0 else b""
                piece += b"\0" * MIB
                sock.sendall(
                    b"%x\r\n%s\r\n" % (len(piece), piece) if "chunked" in headers else piece
                )
            sock.sendall(
                b"%x\r\n%s\r\n0\r\n\r\n" % (len(TAIL), TAIL) if "chunked" in headers else TAIL
            )
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                answer += chunk
        return answer


def test_oversized_uploads_are_refused_without_buffering_them(tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    spool = tmp_path / "spool"
    spool.mkdir()
    server = ServerProcess(tmp_path, ["--model", "m"], {"TMPDIR": str(spool)})
    try:
        server.wait_for_health(200)
        url = f"{server.url}/v1/audio/transcriptions"
        speech = {"file": ("a.wav", wav(1.0))}
        assert httpx.post(url, files=speech, timeout=30).status_code == 200
        baseline = memory(server.proc.pid, "VmHWM")
        size = 30 * MIB + len(HEAD) + len(TAIL)
        common = (
            "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: asr\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
        )
        declared = _send_raw(server.port, common + f"Content-Length: {size}\r\n", 30)
        chunked = _send_raw(server.port, common + "Transfer-Encoding: chunked\r\n", 30)
        for answer in (declared, chunked):
            assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
            assert b'"code":"file_too_large"' in answer
        assert memory(server.proc.pid, "VmHWM") - baseline < 8 * MIB
        assert list(spool.iterdir()) == []  # the spooled part of the chunked body is gone
        assert httpx.post(url, files=speech, timeout=30).status_code == 200
    finally:
        server.stop()
