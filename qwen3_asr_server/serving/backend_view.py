"""A worker's view of the backends: what the main process's supervisors last published.

Every worker answers `/health`, `/metrics` and each request from the same facts: readiness
and restarts read from the shared table, never probed or counted by the worker itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..backend.activity import Activity
from ..backend.roles import Backend
from ..capacity.table import Table
from ..observability.metrics import (
    BACKEND_INFO,
    BACKEND_RESTARTS,
    BACKEND_SLEEPING,
    BACKEND_SLEEPS,
    BACKEND_WAKE_SECONDS,
    BACKEND_WAKES,
    MODEL_READY,
    WORKER_RESTARTS,
)
from .shared_activity import SharedActivity


class BackendView:
    """A `BackendState` read from the table; the info strings are parsed again only when
    their version moves, so a request costs two reads of shared memory."""

    def __init__(self, table: Table, backend: Backend, index: int) -> None:
        self.backend = backend
        self._table = table
        self._record = table.backend(backend.role)
        self.activity: Activity = SharedActivity(table, backend.role, index)
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
    def sleeps(self) -> int:
        return int(self._record.sleeps)

    @property
    def wakes(self) -> int:
        return int(self._record.wakes)

    @property
    def wake_seconds(self) -> float:
        return int(self._record.wake_ns) / 1e9

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
    `_backend_restarts`, the sleeps'), from the views: the main process's figures, counted
    once."""

    def __init__(self, views: Iterable[BackendView]) -> None:
        self.views = list(views)

    def collect(self) -> Iterator[Metric]:
        ready = GaugeMetricFamily(*MODEL_READY, labels=["backend"])
        info = GaugeMetricFamily(*BACKEND_INFO, labels=["backend", "device", "model_id"])
        restarts = CounterMetricFamily(*BACKEND_RESTARTS, labels=["backend"])
        sleeping = GaugeMetricFamily(*BACKEND_SLEEPING, labels=["backend"])
        sleeps = CounterMetricFamily(*BACKEND_SLEEPS, labels=["backend"])
        wakes = CounterMetricFamily(*BACKEND_WAKES, labels=["backend"])
        waking = CounterMetricFamily(*BACKEND_WAKE_SECONDS, labels=["backend"])
        for view in self.views:
            role = view.backend.role
            ready.add_metric([role], 1 if view.ready else 0)
            info.add_metric([role, view.device, view.backend.model], 1)
            restarts.add_metric([role], view.restarts)
            sleeping.add_metric([role], 1 if view.sleeps > view.wakes else 0)
            sleeps.add_metric([role], view.sleeps)
            wakes.add_metric([role], view.wakes)
            waking.add_metric([role], view.wake_seconds)
        yield from (ready, info, restarts, sleeping, sleeps, wakes, waking)


class WorkerCollector(Collector):
    """`qwen3_asr_worker_restarts` by worker index, as the main process counts them."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def collect(self) -> Iterator[Metric]:
        restarts = CounterMetricFamily(*WORKER_RESTARTS, labels=["worker"])
        for index, count in enumerate(self.table.restarts()):
            restarts.add_metric([str(index)], count)
        yield restarts
