"""The batches' webhooks, sent over real HTTP to a receiver on a loopback port and verified
there as a user would, with the openai SDK's `client.webhooks.unwrap`."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.webhooks import (
    BatchCancelledWebhookEvent,
    BatchCompletedWebhookEvent,
    BatchExpiredWebhookEvent,
    BatchFailedWebhookEvent,
)
from sqlalchemy import insert, select, update
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from qwen3_asr_server.backend.launch import free_port
from qwen3_asr_server.entrypoints.jobs.database import Row, engine_for
from qwen3_asr_server.entrypoints.jobs.schema import events
from qwen3_asr_server.entrypoints.jobs.store import Store
from qwen3_asr_server.entrypoints.jobs.webhooks import Outbox, Webhooks, event
from qwen3_asr_server.observability.metrics import Metrics
from tests.fixtures.servers import ThreadedServer

SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
FAST = {"first_retry": 0.05, "last_retry": 0.2, "poll": 0.05}


class Receiver:
    """A webhook endpoint: keeps each request's body and headers, and answers with the
    statuses it was given, in turn, then 200; the first `hangs` requests it never answers
    (until `released`)."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.requests: list[tuple[bytes, dict[str, str]]] = []
        self.hangs = 0
        self.released = threading.Event()
        app = Starlette(routes=[Route("/hook", self.hook, methods=["POST"])])
        self.server = ThreadedServer(app)
        self.url = f"{self.server.url}/hook"

    async def hook(self, request: Request) -> Response:
        self.requests.append((await request.body(), dict(request.headers)))
        if len(self.requests) <= self.hangs:
            await asyncio.to_thread(self.released.wait)
        return Response(status_code=self.statuses.pop(0) if self.statuses else 200)

    def ids(self) -> list[str]:
        return [headers["webhook-id"] for _, headers in self.requests]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(engine_for(None, tmp_path))
    yield store
    store.close()


@pytest.fixture
def receiver() -> Iterator[Callable[..., Receiver]]:
    started: list[Receiver] = []

    def start(*statuses: int) -> Receiver:
        started.append(Receiver(list(statuses)))
        started[-1].server.start()
        return started[-1]

    yield start
    for one in started:
        one.released.set()
        one.server.stop()


@contextlib.asynccontextmanager
async def sending(
    store: Store, url: str, owner: str = "a", **delays: Any
) -> AsyncIterator[Webhooks]:
    """A sender's `run()` as its own task, as the server runs it, until the block ends; what
    it raised, if it ever stopped, raises here."""
    sender = Webhooks(
        store, lambda _: (url, SECRET), delays.pop("metrics", None), owner, **(FAST | delays)
    )
    task = asyncio.create_task(sender.run())
    try:
        yield sender
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await sender.aclose()


def add(store: Store, *rows: Row) -> None:
    """Events as the runner adds them: rows of the `events` table."""
    with store.engine.begin() as db:
        db.execute(insert(events), list(rows))


def rows(store: Store) -> dict[str, Row]:
    with store.engine.begin() as db:
        return {row["id"]: dict(row) for row in db.execute(select(events)).mappings()}


async def until(condition: Callable[[], bool]) -> None:
    """Wait for what the sender does in its own task (at most 20 s)."""
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, "the sender did not get there"
        await asyncio.sleep(0.02)


def delivered(store: Store, count: int) -> Callable[[], bool]:
    return lambda: sum(row["delivered_at"] is not None for row in rows(store).values()) == count


def unwrap(body: bytes, headers: dict[str, str], secret: str = SECRET) -> Any:
    return openai.OpenAI(api_key="x", webhook_secret=secret).webhooks.unwrap(body, headers)


def nothing_left(store: Store) -> bool:
    return Outbox(store.engine).claim("anyone", 60) is None


async def test_each_kind_of_event_reaches_the_receiver_once_and_verifies_with_the_sdk(
    store: Store, receiver: Callable[..., Receiver]
) -> None:
    kinds = {
        "batch.completed": BatchCompletedWebhookEvent,
        "batch.failed": BatchFailedWebhookEvent,
        "batch.cancelled": BatchCancelledWebhookEvent,
        "batch.expired": BatchExpiredWebhookEvent,
    }
    now = int(time.time())
    added = [event(kind, f"batch_{n}", now) for n, kind in enumerate(kinds)]
    add(store, *added)
    hook = receiver()
    async with sending(store, hook.url):
        await until(delivered(store, 4))
    assert sorted(hook.ids()) == sorted(row["id"] for row in added)
    for body, headers in hook.requests:
        assert headers["content-type"] == "application/json"
        unwrapped = unwrap(body, headers)
        assert isinstance(unwrapped, kinds[unwrapped.type])
        assert unwrapped.id == headers["webhook-id"]
        assert unwrapped.data.id == f"batch_{list(kinds).index(unwrapped.type)}"
        assert unwrapped.object == "event"
        assert unwrapped.created_at == now
        with pytest.raises(openai.InvalidWebhookSignatureError):
            unwrap(body, headers, "whsec_" + base64.b64encode(os.urandom(32)).decode())
    assert nothing_left(store)
    assert all(row["attempts"] == 1 for row in rows(store).values())


async def test_an_event_added_while_the_sender_is_idle_goes_out_when_it_is_poked(
    store: Store, receiver: Callable[..., Receiver]
) -> None:
    hook = receiver()
    first = event("batch.completed", "batch_1", int(time.time()))
    add(store, first)
    async with sending(store, hook.url, poll=3600) as sender:
        await until(delivered(store, 1))
        second = event("batch.failed", "batch_2", int(time.time()))
        add(store, second)
        sender.poke()
        await until(delivered(store, 2))
    assert hook.ids() == [first["id"], second["id"]]


async def test_a_failed_attempt_is_retried_with_the_same_webhook_id_until_a_2xx(
    store: Store, receiver: Callable[..., Receiver]
) -> None:
    hook, metrics = receiver(500), Metrics()
    row = event("batch.completed", "batch_1", int(time.time()))
    add(store, row)
    async with sending(store, hook.url, metrics=metrics):
        await until(delivered(store, 1))
    assert hook.ids() == [row["id"], row["id"]]
    for body, headers in hook.requests:
        assert unwrap(body, headers).data.id == "batch_1"
    assert rows(store)[row["id"]]["attempts"] == 2
    assert nothing_left(store)
    sent = metrics.registry.get_sample_value
    assert sent("qwen3_asr_webhooks_sent_total", {"outcome": "failed"}) == 1
    assert sent("qwen3_asr_webhooks_sent_total", {"outcome": "delivered"}) == 1


async def test_an_unreachable_receiver_is_retried_later_and_logged_without_secrets(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "qwen3_asr_server.entrypoints.jobs.webhooks")
    row = event("batch.completed", "batch_private", int(time.time()))
    add(store, row)
    url = f"http://127.0.0.1:{free_port()}/hook"
    async with sending(store, url, first_retry=0.05, last_retry=0.05):
        await until(lambda: rows(store)[row["id"]]["attempts"] >= 3)
    after = rows(store)[row["id"]]
    assert after["next_at"] > row["next_at"]
    assert after["delivered_at"] is None
    assert after["gave_up_at"] is None
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert row["id"] in logged
    assert SECRET not in logged
    assert SECRET.removeprefix("whsec_") not in logged
    assert "batch_private" not in logged


async def test_an_event_is_given_up_after_its_time_and_never_sent_again(
    store: Store, receiver: Callable[..., Receiver]
) -> None:
    hook = receiver(500, 500, 500)
    row = event("batch.expired", "batch_1", int(time.time()))
    add(store, row)
    async with sending(store, hook.url, give_up=0):
        await until(lambda: rows(store)[row["id"]]["gave_up_at"] is not None)
    assert hook.ids() == [row["id"]]
    assert nothing_left(store)


async def test_two_servers_send_each_event_once(
    store: Store, receiver: Callable[..., Receiver]
) -> None:
    hook = receiver()
    added = [event("batch.completed", f"batch_{n}", int(time.time())) for n in range(20)]
    add(store, *added)
    async with sending(store, hook.url, "a"), sending(store, hook.url, "b"):
        await until(delivered(store, 20))
    assert sorted(hook.ids()) == sorted(row["id"] for row in added)
    assert nothing_left(store)


async def test_a_dead_servers_claim_lapses_and_another_sends_the_event(
    store: Store, receiver: Callable[..., Receiver]
) -> None:
    hook = receiver()
    row = event("batch.completed", "batch_1", int(time.time()))
    add(store, row)
    claimed = Outbox(store.engine).claim("dead", 3600)
    assert claimed is not None
    assert claimed["id"] == row["id"]
    assert Outbox(store.engine).claim("alive", 60) is None  # held while its lease lasts
    with store.engine.begin() as db:  # an hour later: the dead server never renewed it
        db.execute(update(events).values(lease_until=time.time() - 1))
    async with sending(store, hook.url, "alive"):
        await until(delivered(store, 1))
    assert hook.ids() == [row["id"]]
    assert unwrap(*hook.requests[0]).data.id == "batch_1"


async def test_an_attempt_that_hangs_holds_up_only_its_own_event(
    store: Store, receiver: Callable[..., Receiver]
) -> None:
    hook = receiver()
    hook.hangs = 1
    added = [event("batch.completed", f"batch_{n}", int(time.time())) for n in range(3)]
    add(store, *added)
    async with sending(store, hook.url, timeout=3.0):
        start = time.monotonic()
        await until(lambda: len(set(hook.ids())) == 3)
        assert time.monotonic() - start < 2.0  # the other two sent while the first hangs
        await until(delivered(store, 3))
    hung = hook.ids()[0]
    assert hook.ids().count(hung) == 2  # timed out, then sent again under the same id
    assert rows(store)[hung]["attempts"] == 2
    for body, headers in hook.requests:
        assert unwrap(body, headers).id == headers["webhook-id"]
    assert nothing_left(store)


async def test_at_most_senders_events_are_in_flight_at_once(
    store: Store, receiver: Callable[..., Receiver]
) -> None:
    hook = receiver()
    hook.hangs = 3
    add(store, *(event("batch.completed", f"batch_{n}", int(time.time())) for n in range(3)))
    async with sending(store, hook.url, senders=2, timeout=1.0):
        await until(lambda: len(hook.requests) == 2)
        await asyncio.sleep(0.5)
        assert len(hook.requests) == 2  # the third waits for room
        await until(delivered(store, 3))
