"""A worker's view of the backends: what the main process's supervisors last published.

Every worker answers `/health`, `/metrics` and each request from the same facts: readiness
and restarts read from the shared table, never probed or counted by the worker itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..backend.roles import Backend
from ..metrics import BACKEND_INFO, BACKEND_RESTARTS, MODEL_READY, WORKER_RESTARTS
from .table import Table


class BackendView:
    """A `BackendState` read from the table; the info strings are parsed again only when
    their version moves, so a request costs two reads of shared memory."""

    def __init__(self, table: Table, backend: Backend) -> None:
        self.backend = backend
        self._table = table
        self._record = table.backend(backend.role)
        self._version = -1
        self._info: dict[str, Any] = {}

    @property
    def ready(self) -> bool:
        return bool(self._record.ready)

    @property
    def ever_ready(self) -> bool:
        return bool(self._record.ever_ready)

    @property
    def restarts(self) -> int:
        return int(self._record.restarts)

    @property
    def url(self) -> str:
        return str(self._published()["url"])

    @property
    def flavour(self) -> str:
        return str(self._published()["flavour"])

    @property
    def device(self) -> str:
        return str(self._published()["device"])

    @property
    def upstream_model(self) -> str | None:
        model = self._published()["upstream_model"]
        return None if model is None else str(model)

    def _published(self) -> dict[str, Any]:
        if self._record.version != self._version:
            self._version, self._info = self._table.info(self.backend.role)
        return self._info


class BackendCollector(Collector):
    """The backend series of `/metrics` (`qwen3_asr_model_ready`, `_backend_info`,
    `_backend_restarts`), from the views: the main process's figures, counted once."""

    def __init__(self, views: Iterable[BackendView]) -> None:
        self.views = list(views)

    def collect(self) -> Iterator[Metric]:
        ready = GaugeMetricFamily(*MODEL_READY, labels=["backend"])
        info = GaugeMetricFamily(*BACKEND_INFO, labels=["backend", "device", "model_id"])
        restarts = CounterMetricFamily(*BACKEND_RESTARTS, labels=["backend"])
        for view in self.views:
            role = view.backend.role
            ready.add_metric([role], 1 if view.ready else 0)
            info.add_metric([role, view.device, view.backend.model], 1)
            restarts.add_metric([role], view.restarts)
        yield from (ready, info, restarts)


class WorkerCollector(Collector):
    """`qwen3_asr_worker_restarts` by worker index, as the main process counts them."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def collect(self) -> Iterator[Metric]:
        restarts = CounterMetricFamily(*WORKER_RESTARTS, labels=["worker"])
        for index, count in enumerate(self.table.restarts()):
            restarts.add_metric([str(index)], count)
        yield restarts
