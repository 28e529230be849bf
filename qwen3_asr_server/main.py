"""Entry point: parse the command line, serve (one process, or `--workers N`), exit clearly."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .app import create_app
from .entrypoints.jobs import database as jobs_database
from .entrypoints.middleware import keys
from .errors import LaunchError
from .serving import manager
from .serving import server as serving
from .serving.cli import parse_args
from .speech import onnx_models


def main(argv: Sequence[str] | None = None) -> int:
    onnx_models.disable_telemetry()
    args = sys.argv[1:] if argv is None else list(argv)
    settings, vllm_args = parse_args(args)
    serving.configure_logging(settings)
    if settings.backend_url and vllm_args:
        print(
            f"server.py: error: unknown arguments {' '.join(vllm_args)} "
            "(with --backend-url no vLLM is launched to pass them to)",
            file=sys.stderr,
        )
        return 2
    try:
        keys.load(settings.keys_file, settings.api_key)  # before any port or process is taken
        jobs_database.prepare(settings)
    except LaunchError as exc:
        print(f"qwen3-asr-server: error: {exc}", file=sys.stderr)
        return 1
    sock = serving.bind(settings)
    if sock is None:
        return 1
    try:
        wyoming = serving.wyoming_socket(settings)
    except OSError as exc:
        print(
            f"qwen3-asr-server: error: cannot listen on {settings.wyoming_host}:"
            f"{settings.wyoming_port} (--wyoming-port): {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 1
    if settings.workers > 1:
        return manager.run(settings, vllm_args, args, sock, wyoming)
    failure: list[str] = []

    def on_fatal(message: str) -> None:
        failure.append(message)
        server.should_exit = True

    serving.return_freed_memory()
    try:
        app = create_app(settings, vllm_args, on_fatal=on_fatal, wyoming=wyoming)
    except LaunchError as exc:
        print(f"qwen3-asr-server: error: {exc}", file=sys.stderr)
        return 1
    server = serving.Server(serving.config(app, settings), app.state.asr.drain)
    server.run(sockets=[sock])
    if failure:
        print(f"qwen3-asr-server: error: {failure[0]}", file=sys.stderr)
        return 1
    return 0 if server.started else 1
