"""One worker process of `--workers N`: the app, listening on the port beside the others.

It launches no vLLM and counts no restarts: its backends are views of the main process's
supervisors, its admission slots are shared with the other workers, its metrics are written
for prometheus-client's multiprocess collector (`PROMETHEUS_MULTIPROC_DIR`, set by the main
process for each worker).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from ..app import Backends, create_app
from ..backend import roles
from ..capacity.admission import limit_of
from ..capacity.budget import AudioBudget, budget_seconds
from ..capacity.key_seats import FILE_NAME as KEY_SEATS_FILE
from ..capacity.key_seats import SharedKeySeats
from ..capacity.rates import FILE_NAME as RATES_FILE
from ..capacity.rates import SharedRates
from ..capacity.seats import WYOMING
from ..capacity.shared import SharedAdmission, SharedLedger, SharedSeats
from ..capacity.table import FILE_NAME, Table
from ..errors import LaunchError
from ..observability import tracing
from ..observability.metrics import Metrics
from ..settings.composite import Settings
from ..speech import onnx_models
from . import server as serving
from .backend_view import BackendCollector, BackendView, WorkerCollector
from .cli import parse_args


def backends(
    settings: Settings, vllm_args: Sequence[str], table: Table, index: int, directory: Path
) -> Backends:
    """Worker `index`'s backends: the main process's, read from `table`."""
    views = [BackendView(table, each, index) for each in roles.every(settings, vllm_args)]
    exposed = CollectorRegistry()
    MultiProcessCollector(exposed, path=str(directory))  # type: ignore[no-untyped-call]
    exposed.register(BackendCollector(views))
    exposed.register(WorkerCollector(table))
    metrics = Metrics(exposed)
    admission = SharedAdmission(
        table, index, limit_of(settings), settings.max_queue, settings.queue_timeout, metrics
    )
    return Backends(
        metrics=metrics,
        asr=views[0],
        aligner=views[1] if len(views) > 1 else None,
        admission=admission,
        seats=SharedSeats(table, index, settings.max_sessions, metrics),
        connections=SharedSeats(table, index, settings.wyoming_max_connections, metrics, WYOMING),
        budget=AudioBudget(
            SharedLedger(table, index), budget_seconds(settings), settings.queue_timeout, metrics
        ),
        tracing=tracing.start(settings.otlp_traces_endpoint, metrics),
        started=table.started,
        rates=SharedRates(directory / RATES_FILE),
        key_seats=SharedKeySeats(directory / KEY_SEATS_FILE, index),
    )


class _WorkerServer(serving.Server):
    """Tells the main process, through the table, once it serves."""

    def __init__(self, app: FastAPI, settings: Settings, table: Table, index: int) -> None:
        super().__init__(serving.config(app, settings), app.state.asr.drain)
        self.table = table
        self.index = index

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.table.worker(self.index).pid = os.getpid()


def main(argv: Sequence[str]) -> None:
    """`python -m qwen3_asr_server.serving.worker INDEX DIRECTORY <the server's arguments>`,
    as the main process starts it (see `manager`)."""
    onnx_models.disable_telemetry()
    index, directory = int(argv[0]), Path(argv[1])
    settings, vllm_args = parse_args(argv[2:])
    serving.configure_logging(settings)
    try:
        sock = serving.port_socket(settings.host, settings.port, settings.backlog)
        wyoming = (
            None
            if settings.wyoming_port is None
            else serving.port_socket(settings.wyoming_host, settings.wyoming_port, backlog=None)
        )
    except OSError as exc:
        logging.getLogger(__name__).error("Cannot listen on its ports: %s", exc)
        sys.exit(1)
    serving.return_freed_memory()
    table = Table(directory / FILE_NAME, settings.workers)
    try:
        app = create_app(
            settings,
            vllm_args,
            backends=backends(settings, vllm_args, table, index, directory),
            wyoming=wyoming,
        )
    except LaunchError as exc:  # the diarizer --diarizer names cannot load
        logging.getLogger(__name__).error("%s", exc)
        sys.exit(1)
    _WorkerServer(app, settings, table, index).run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])
