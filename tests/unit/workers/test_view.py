"""What the main process publishes in the shared table, as a worker's `BackendView` reads it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from qwen3_asr_server.backend.roles import ALIGNER, ASR, Backend
from qwen3_asr_server.backend.supervisor import check_ready, status
from qwen3_asr_server.capacity import table
from qwen3_asr_server.capacity.table import FILE_NAME, Table
from qwen3_asr_server.errors import APIError
from qwen3_asr_server.serving.backend_view import BackendCollector, BackendView


@dataclass
class Known:
    """What a supervisor knows (the fields of `BackendState`)."""

    backend: Backend
    url: str = "http://127.0.0.1:1234"
    ready: bool = False
    ever_ready: bool = False
    restarts: int = 0
    flavour: str = "vllm"
    device: str = "cuda"
    upstream_model: str | None = None
    sleeps: int = 0
    wakes: int = 0
    wake_seconds: float = 0.0


def test_a_view_reads_what_was_published_last(tmp_path: Path) -> None:
    main = Table.create(tmp_path, workers=2)
    asr = Known(Backend(role=ASR, model="Qwen/Qwen3-ASR-1.7B", url=None, command=None))
    main.publish(asr)
    view = BackendView(Table(tmp_path / FILE_NAME, workers=2), asr.backend, 0)
    assert (status(view), view.url, view.flavour, view.upstream_model) == (
        "loading",
        "http://127.0.0.1:1234",
        "vllm",
        None,
    )
    with pytest.raises(APIError, match="still loading"):
        check_ready(view, "The speech model")
    asr.ready = asr.ever_ready = True
    asr.upstream_model = "served-id"
    main.publish(asr)
    assert (status(view), view.upstream_model) == ("ok", "served-id")
    check_ready(view, "The speech model")
    asr.ready, asr.restarts = False, 3
    main.publish(asr)
    assert (status(view), view.restarts) == ("down", 3)
    with pytest.raises(APIError, match="restarting"):
        check_ready(view, "The speech model")


def test_the_backend_series_come_from_the_views(tmp_path: Path) -> None:
    main = Table.create(tmp_path, workers=1)
    asr = Known(Backend(role=ASR, model="m", url=None, command=None), ready=True, restarts=2)
    aligner = Known(Backend(role=ALIGNER, model="a", url="http://x", command=None), device="remote")
    main.publish(asr)
    main.publish(aligner)
    registry = CollectorRegistry()
    registry.register(
        BackendCollector([BackendView(main, asr.backend, 0), BackendView(main, aligner.backend, 0)])
    )
    text = generate_latest(registry).decode()
    assert 'qwen3_asr_model_ready{backend="asr"} 1.0' in text
    assert 'qwen3_asr_model_ready{backend="aligner"} 0.0' in text
    assert 'qwen3_asr_backend_info{backend="aligner",device="remote",model_id="a"} 1.0' in text
    assert 'qwen3_asr_backend_restarts_total{backend="asr"} 2.0' in text


def test_the_table_has_a_record_for_each_backend_the_server_runs() -> None:
    """The table names the roles itself, to stay below the backend: the two lists agree."""
    assert table.ROLES == (ASR, ALIGNER)
