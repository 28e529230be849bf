#!/usr/bin/env python3
"""A canned vLLM for capacity runs: every chat completion gets the same answer at once.

`scripts/overhead.py --capacity` puts the server in front of it to measure the proxy alone.
The stand-in of the tests (`tests/fixtures/standin.py`) reads every request as vLLM would,
base64 audio and all, which costs about as much CPU as the proxy's own work; on a machine
whose cores the proxy shares with its upstream that would cap what the proxy can show. This
one parses only the HTTP framing (httptools, as uvicorn does) and ignores the body.
`python scripts/canned_upstream.py --port 8101 [--model qwen3-asr]`
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import httptools
import uvloop


def _response(status: str, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
    return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body


def _answers(model: str) -> dict[bytes, bytes]:
    completion = {
        "id": "chatcmpl-canned",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "language English<asr_text>Hello."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 90, "completion_tokens": 5, "total_tokens": 95},
    }
    models = {"object": "list", "data": [{"id": model, "object": "model"}]}
    return {
        b"/v1/chat/completions": _response("200 OK", json.dumps(completion).encode()),
        b"/v1/models": _response("200 OK", json.dumps(models).encode()),
        b"/health": _response("200 OK", b"{}"),
    }


class _Canned(asyncio.Protocol):
    def __init__(self, answers: dict[bytes, bytes]) -> None:
        self.answers = answers
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.transport: Any = None  # uvloop's TCPTransport, not an asyncio.Transport

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_url(self, url: bytes) -> None:
        self.url = url

    def on_message_complete(self) -> None:
        path = self.url.split(b"?")[0]
        self.transport.write(self.answers.get(path) or _response("404 Not Found", b"{}"))


async def _serve(port: int, model: str) -> None:
    answers = _answers(model)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Canned(answers), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8101)
    parser.add_argument("--model", default="qwen3-asr")
    args = parser.parse_args()
    uvloop.run(_serve(args.port, args.model))
