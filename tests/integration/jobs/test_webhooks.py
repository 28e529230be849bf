"""A server with --webhook-url tells a receiver when a batch ends, signed so that the openai
SDK's `client.webhooks.unwrap` verifies it: batch.completed, batch.failed, batch.cancelled."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from typing import Any

import openai
from openai.types.webhooks import (
    BatchCancelledWebhookEvent,
    BatchCompletedWebhookEvent,
    BatchFailedWebhookEvent,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.fixtures.audio import wav
from tests.fixtures.harness import MODEL, Harness, app_before
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import StandIn

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
ENDPOINT = "/v1/audio/transcriptions"


class Receiver:
    """A webhook receiver on a loopback port, keeping each request's body and headers."""

    def __init__(self) -> None:
        self.got: list[tuple[bytes, dict[str, str]]] = []
        self.server = ThreadedServer(
            Starlette(routes=[Route("/hook", self._hook, methods=["POST"])])
        )

    async def _hook(self, request: Request) -> Response:
        self.got.append((await request.body(), dict(request.headers)))
        return Response(status_code=204)

    async def events(self, count: int) -> list[Any]:
        deadline = time.monotonic() + 30
        while len(self.got) < count:
            assert time.monotonic() < deadline, self.got
            await asyncio.sleep(0.05)
        client = openai.OpenAI(api_key="unused", webhook_secret=SECRET)
        return [client.webhooks.unwrap(body, headers) for body, headers in self.got]


async def _batch(harness: Harness, lines: list[dict[str, Any]]) -> str:
    text = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    source = await harness.sdk.files.create(file=("in.jsonl", text), purpose="batch")
    batch = await harness.sdk.batches.create(
        input_file_id=source.id,
        endpoint=ENDPOINT,  # type: ignore[arg-type]
        completion_window="24h",
    )
    return batch.id


async def test_each_ending_of_a_batch_is_a_signed_webhook() -> None:
    receiver = Receiver()
    receiver.server.start()
    url = f"{receiver.server.url}/hook"
    try:
        async with app_before(
            StandIn(MODEL, delay=0.5), webhook_url=url, webhook_secret=SECRET
        ) as harness:
            clip = await harness.sdk.files.create(file=("a.wav", wav(1.0)), purpose="user_data")
            line = {"custom_id": "a", "method": "POST", "url": ENDPOINT, "body": {"file": clip.id}}
            completed = await _batch(harness, [line])
            [done] = await receiver.events(1)
            assert isinstance(done, BatchCompletedWebhookEvent)
            assert done.data.id == completed
            failed = await _batch(harness, [{**line, "url": "/v1/chat/completions"}])
            _, bad = await receiver.events(2)
            assert isinstance(bad, BatchFailedWebhookEvent)
            assert bad.data.id == failed
            lines = [{**line, "custom_id": str(i)} for i in range(20)]
            cancelled = await _batch(harness, lines)
            for _ in range(600):  # cancelled once its lines are queued
                if (await harness.sdk.batches.retrieve(cancelled)).status != "validating":
                    break
                await asyncio.sleep(0.05)
            await harness.sdk.batches.cancel(cancelled)
            *_, stopped = await receiver.events(3)
            assert isinstance(stopped, BatchCancelledWebhookEvent)
            assert stopped.data.id == cancelled
            batch = await harness.sdk.batches.retrieve(cancelled)
            assert batch.status == "cancelled"
            assert batch.request_counts is not None
            assert batch.request_counts.total == 20
            assert batch.request_counts.completed < 20
    finally:
        receiver.server.stop()
    headers = receiver.got[0][1]
    assert headers["webhook-id"].startswith("evt_")
    assert headers["webhook-signature"].startswith("v1,")


class HangingReceiver(Receiver):
    """A receiver that hangs on the first request it gets (until `released`), answering every
    other at once; `arrived`: when each request came (monotonic)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[float] = []
        self.released = threading.Event()

    async def _hook(self, request: Request) -> Response:
        self.arrived.append(time.monotonic())
        first = len(self.arrived) == 1
        answer = await super()._hook(request)
        if first:
            await asyncio.to_thread(self.released.wait)
        return answer


async def test_a_receiver_hanging_on_one_event_holds_up_no_other() -> None:
    """The sender's attempt at the first event waits for the receiver (up to its 10 s
    timeout): the events of two batches that end meanwhile arrive all the same."""
    receiver = HangingReceiver()
    receiver.server.start()
    try:
        async with app_before(
            StandIn(MODEL), webhook_url=f"{receiver.server.url}/hook", webhook_secret=SECRET
        ) as harness:
            failing = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions"}
            await _batch(harness, [failing])
            await receiver.events(1)
            hung = time.monotonic()
            later = [await _batch(harness, [failing]) for _ in range(2)]
            events = await receiver.events(3)
            delay = receiver.arrived[2] - hung
            print(f"the second and third events arrived {delay:.2f} s after the hang began")
            assert delay < 5, delay
            assert sorted(event.data.id for event in events[1:]) == sorted(later)
    finally:
        receiver.released.set()
        receiver.server.stop()
