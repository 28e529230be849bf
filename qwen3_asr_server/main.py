"""Entry point: parse the command line, run the app under uvicorn, exit with a clear status."""

from __future__ import annotations

import ctypes
import logging
import socket
import sys
from collections.abc import Sequence

import uvicorn

from .app import create_app
from .middleware.drain import ANSWER_GRACE, Drain
from .middleware.uvicorn_protocols import DenialAwareWebSocketsProtocol, guarded_protocol
from .settings import parse_args

logger = logging.getLogger("qwen3_asr_server")
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number, from glibc's malloc.h


class Server(uvicorn.Server):
    """uvicorn that drains the app (see `middleware.drain`) before its own shutdown begins."""

    def __init__(self, config: uvicorn.Config, drain: Drain) -> None:
        super().__init__(config)
        self.drain = drain

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self.drain.run(forced=lambda: self.force_exit)
        await super().shutdown(sockets)


def _return_freed_memory() -> None:
    """Make glibc give big freed buffers back to the OS.

    A request holds its decoded audio (about 2 MB per minute) and request bodies of a few
    MB. glibc raises its mmap threshold each time such a block is freed, after which they come
    from the heap, and the heap kept a flood's peak as idle memory (500 MB after 32 uploads
    of 25 MB). A fixed threshold keeps big blocks mapped and unmapped on free.
    """
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)  # glibc only
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, 128 * 1024)  # glibc's default value, now fixed


def main(argv: Sequence[str] | None = None) -> int:
    settings, vllm_args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if settings.backend_url and vllm_args:
        print(
            f"server.py: error: unknown arguments {' '.join(vllm_args)} "
            "(with --backend-url no vLLM is launched to pass them to)",
            file=sys.stderr,
        )
        return 2
    failure: list[str] = []

    def on_fatal(message: str) -> None:
        failure.append(message)
        server.should_exit = True

    _return_freed_memory()
    app = create_app(settings, vllm_args, on_fatal=on_fatal)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=guarded_protocol(settings.read_timeout),
        ws=DenialAwareWebSocketsProtocol,
        log_level=settings.log_level,
        # Only what the drain did not cover: a request still being uploaded, an idle connection.
        timeout_graceful_shutdown=ANSWER_GRACE,
        access_log=False,  # middleware.access_log writes one line per request, with its id
    )
    server = Server(config, app.state.asr.drain)
    # Bind before the lifespan launches vLLM: a busy port should cost nothing but a message.
    try:
        sock = config.bind_socket()
    except SystemExit:
        print(
            f"qwen3-asr-server: error: cannot listen on {settings.host}:{settings.port}",
            file=sys.stderr,
        )
        return 1
    server.run(sockets=[sock])
    if failure:
        print(f"qwen3-asr-server: error: {failure[0]}", file=sys.stderr)
        return 1
    return 0 if server.started else 1
