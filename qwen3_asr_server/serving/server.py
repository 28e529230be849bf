"""Serving an app with uvicorn: the one way both `main` and each worker process do it."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import ipaddress
import logging
import signal
import socket
import sys
import threading
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI
from pydantic import SecretStr

from ..capacity.drain import ANSWER_GRACE, Drain
from ..errors import MIB
from ..observability import log_format, log_redaction
from ..settings.composite import Settings
from .protocols import DenialAwareWebSocketsProtocol, guarded_protocol

logger = logging.getLogger(__name__)
# mallopt's parameter numbers, from glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


class Server(uvicorn.Server):
    """uvicorn that drains the app (see `capacity.drain`) before its own shutdown begins."""

    def __init__(self, config: uvicorn.Config, drain: Drain) -> None:
        super().__init__(config)
        self.drain = drain

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's SIGINT and SIGTERM, and SIGHUP like SIGTERM: a closed terminal or
        `systemctl reload` drains the server instead of killing it (and leaving vLLM to
        Linux's SIGTERM). Raised again once the server stopped, as uvicorn does the others."""
        with super().capture_signals():
            if threading.current_thread() is not threading.main_thread() or not hangup():
                yield
                return
            previous = signal.signal(signal.SIGHUP, self.handle_exit)
            try:
                yield
            finally:
                signal.signal(signal.SIGHUP, previous)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        settled()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self.drain.run(forced=lambda: self.force_exit)
        await super().shutdown(sockets)


def settled() -> None:
    """What the process built to start (modules, the app, its models: most of its objects,
    and they live as long as it does) left out of the garbage collector's full passes.

    Requests make short-lived objects, and now and then some outlive two young passes, which
    starts a full one: it walked the whole heap, 110-120 ms each time, about once a second at
    capacity, 0.13 ms of CPU a request for a 5 s clip (an eighth of it), more with tracing on,
    whose spans make more garbage. Frozen, a full pass walks what came after the start only
    (1-2 ms each). Startup's own garbage is collected first, so that none is kept."""
    gc.collect()
    gc.freeze()


def hangup() -> tuple[signal.Signals, ...]:
    """SIGHUP, to be handled as SIGTERM; none when the server was started with SIGHUP ignored
    (`nohup`, a supervisor's choice): that choice is kept, as uvicorn alone keeps it."""
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        return ()
    return (signal.SIGHUP,)


def configure_logging(settings: Settings) -> None:
    process = " [%(process)d]" if settings.workers > 1 else ""  # which worker said it
    logging.basicConfig(
        level=settings.log_level.upper(),
        format=f"%(asctime)s %(levelname)s{process} %(name)s: %(message)s",
    )
    # its lines at each open say what `jobs.migrate`'s one line says (or nothing worth one)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    _shaped(settings)


def _shaped(settings: Settings) -> None:
    """The handlers' redaction and, with `--log-format json`, their JSON lines."""
    if settings.log_format == "json":
        log_format.install()
    log_redaction.install(secrets(settings))


def secrets(settings: Settings) -> list[str]:
    """The values of the server's secret settings, which no log line may show."""
    values = (getattr(settings, name) for name in type(settings).model_fields)
    return [each.get_secret_value() for each in values if isinstance(each, SecretStr)]


def return_freed_memory() -> None:
    """Make glibc give big freed buffers back to the OS, and keep the small ones.

    A request holds its decoded audio (about 2 MB per minute) and request bodies of a few
    MB. glibc raises its mmap threshold each time such a block is freed, after which they come
    from the heap, and the heap kept a flood's peak as idle memory (500 MB after 32 uploads
    of 25 MB). A fixed threshold keeps big blocks mapped and unmapped on free. It is 4 MiB,
    not glibc's starting 128 KiB: every buffer of a short clip's request (the WAV, its base64,
    the JSON, which orjson sizes at several times its input) is then reused from the heap,
    not mapped, touched page by page and unmapped again, which cost 0.5 ms of CPU per 5 s
    clip. Fixing the one threshold fixes the other too (glibc stops adapting both), so the
    heap's top is trimmed only past 32 MiB free, or it would shrink and grow every request.
    """
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)  # glibc only
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, 4 * MIB)
        mallopt(_M_TRIM_THRESHOLD, 32 * MIB)


def config(app: FastAPI, settings: Settings) -> uvicorn.Config:
    """uvicorn's configuration; making it configures uvicorn's loggers, whose handlers then get
    the redaction (and the shape) the root's has."""
    configured = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=guarded_protocol(
            settings.read_timeout,
            settings.min_body_rate,
            max(settings.upload_bytes, settings.json_bytes),
        ),
        ws=DenialAwareWebSocketsProtocol,
        log_level=settings.log_level,
        # Only what the drain did not cover: a request still being uploaded, an idle connection.
        timeout_graceful_shutdown=ANSWER_GRACE,
        backlog=settings.backlog,
        access_log=False,  # middleware.access_log writes one line per request, with its id
    )
    _shaped(settings)
    return configured


def bind(settings: Settings) -> socket.socket | None:
    """The listening socket, bound before any vLLM is launched: a busy port should cost
    nothing but a message (printed here; None then). Not inherited by vLLM: uvicorn makes it
    inheritable and uvloop's spawn passes on what is, so a dead server's port would go on
    accepting connections, unanswered, until vLLM stopped too."""
    configured = uvicorn.Config(FastAPI(), host=settings.host, port=settings.port)
    _shaped(settings)  # making it configured uvicorn's loggers: their line on binding too
    try:
        sock = configured.bind_socket()
    except SystemExit:
        print(
            f"qwen3-asr-server: error: cannot listen on {settings.host}:{settings.port}",
            file=sys.stderr,
        )
        return None
    sock.set_inheritable(False)
    if settings.keyless and beyond_loopback(settings.host):
        logger.warning(
            "Listening on %s:%d with no --api-key nor --keys-file: anyone who can reach this "
            "port can use the model. Set --api-key (QWEN3_ASR_API_KEY) or --keys-file, or "
            "--host 127.0.0.1 to serve this machine only.",
            settings.host,
            settings.port,
        )
    return sock


def wyoming_socket(settings: Settings) -> socket.socket | None:
    """`--wyoming-port`'s socket (None when not asked for), bound before any vLLM is launched
    as `bind`'s is; the app listens on it (`entrypoints.wyoming.listener`). Bound without
    SO_REUSEPORT, it proves the port free; with `--workers N` it gives way to the workers'
    `port_socket`s. An OSError when the port cannot be had."""
    host, port = settings.wyoming_host, settings.wyoming_port
    if port is None:
        return None
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    if beyond_loopback(host):
        logger.warning(
            "Wyoming on %s:%d: the protocol has no authentication, so anyone who can reach "
            "this port can use the model. Use --wyoming-host 127.0.0.1, or a firewall.",
            host,
            port,
        )
    return sock


def beyond_loopback(host: str) -> bool:
    """Whether a server listening on `host` can be reached from other machines: a host name
    other than localhost may resolve to anything, so it counts as reachable."""
    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


def port_socket(host: str, port: int, backlog: int | None) -> socket.socket:
    """A socket on `host:port` with SO_REUSEPORT, for `--workers N`.

    Each worker listens on one of its own, and the kernel spreads new connections over them
    evenly. On one shared socket, whichever worker woke first took a whole burst of new
    connections, and kept-alive clients stayed on it: two workers served 0.9-2.3x what one
    did, by luck. The main process holds one that is bound but not listening, which gets no
    connections but keeps the port for the workers while one of them is replaced: its
    `backlog` is None; a worker's listens with `--backlog` from the start.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    if backlog is not None:
        sock.listen(backlog)  # as `config` tells uvicorn, which listens again with it
    return sock
