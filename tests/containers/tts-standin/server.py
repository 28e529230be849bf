"""A stand-in for qwen3-tts-server in the compose test: OpenAI's `POST /v1/audio/speech`,
spoken by espeak-ng (Debian's), and the `/health` its compose health check reads.

Standard library only. WAV only: the other response formats are a 400 in OpenAI's shape.
"""

from __future__ import annotations

import json
import os
import subprocess
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(os.environ.get("PORT", "8001"))  # the compose file's 8001, or the test's own


class Speech(BaseHTTPRequestHandler):
    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, param: str | None) -> None:
        error = {"message": message, "type": "invalid_request_error", "param": param, "code": None}
        self._answer(status, json.dumps({"error": error}).encode(), "application/json")

    def do_GET(self) -> None:
        if self.path == "/health":
            self._answer(200, b'{"status": "ok", "model_ready": true}', "application/json")
        else:
            self._error(404, f"No route {self.path}.", None)

    def do_POST(self) -> None:
        if self.path != "/v1/audio/speech":
            self._error(404, f"No route {self.path}.", None)
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        except ValueError:
            self._error(400, "The body is not JSON.", None)
            return
        text = body.get("input")
        if not isinstance(text, str) or not text.strip():
            self._error(400, "'input' must be text to speak.", "input")
            return
        if body.get("response_format", "wav") != "wav":
            self._error(400, "This stand-in speaks WAV only.", "response_format")
            return
        wav = subprocess.run(
            ["espeak-ng", "-v", "en-us", "-s", "160", "--stdout", text],
            capture_output=True,
            check=True,
        ).stdout
        self._answer(200, wav, "audio/wav")


if __name__ == "__main__":
    ThreadingHTTPServer(("0.0.0.0", PORT), Speech).serve_forever()
