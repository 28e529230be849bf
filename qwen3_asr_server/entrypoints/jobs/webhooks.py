"""The batches' webhooks, as OpenAI sends them: `batch.completed`, `.failed`, `.cancelled`
and `.expired` events POSTed to the batch's project's `webhook_url` (`--keys-file`), else to
`--webhook-url`, signed as Standard Webhooks with the secret that goes with it, so that the
openai SDK's `client.webhooks.unwrap` verifies them. Where an event goes is looked up when it
is sent, so that a changed keys file holds for the events not yet delivered.

The `events` table is an outbox: a batch's event is written in the transaction that ends the
batch (`Store.end_batch`), and any server sends it later. Delivery is at least once: an event
is marked delivered only after a 2xx answer, and a server that dies mid-send leaves its claim
to lapse, so that another sends it again under the same `webhook-id` (receivers deduplicate
on it). Failures are retried with a doubling delay until 72 h after the event, as OpenAI does.

Each event is sent by a task of its own, at most `SENDERS` at once, so that a receiver that
hangs on one event's request holds up that event alone (for its `TIMEOUT`), not those behind
it; each event keeps its own schedule of attempts in its row.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import aiohttp
from sqlalchemy import Engine, update
from sqlalchemy.exc import SQLAlchemyError
from standardwebhooks.webhooks import Webhook

from .database import Row
from .schema import events
from .store import Store, claim

if TYPE_CHECKING:
    from ...observability.metrics import Metrics

logger = logging.getLogger(__name__)

FIRST_RETRY = 5.0  # seconds after a failed attempt, doubled after each failure
LAST_RETRY = 3600.0  # the longest wait between two attempts
GIVE_UP = 72 * 3600.0  # seconds after the event's creation: no attempt after it
POLL = 2.0  # how often an idle sender looks for events other servers added, or retries due
TIMEOUT = 10.0  # one attempt, from connecting to the receiver's answer
LEASE = 60.0  # a sender's claim on an event: well over TIMEOUT, so one attempt fits in it
SENDERS = 16  # events in flight at once, per server
# where a project's events go: its receiver's URL and the secret they are signed with; None
# when they go nowhere
Destination = Callable[[str | None], tuple[str, str] | None]


def event(kind: str, batch_id: str, now: int, project: str | None = None) -> dict[str, Any]:
    """The `events` row announcing that batch `batch_id` (of `project`) ended: `kind` is the
    event's type (batch.completed, .failed, .cancelled or .expired). It is due at once."""
    event_id = "evt_" + secrets.token_hex(16)
    body = {
        "id": event_id,
        "object": "event",
        "created_at": now,
        "type": kind,
        "data": {"id": batch_id},
    }
    return {
        "id": event_id,
        "body": body,
        "created_at": now,
        "attempts": 0,
        "next_at": now,
        "delivered_at": None,
        "project": project,
    }


def retry_delay(attempts: int, first: float, last: float) -> float:
    """Seconds to wait after the attempt that follows `attempts` earlier ones failed."""
    return min(first * 2.0 ** min(attempts, 64), last)


class Outbox:
    """The `events` table as a queue of attempts. Every method is one transaction; a claim is
    a compare-and-set on the event's lease (PostgreSQL also skips rows another server has
    locked), so two servers never make the same attempt at once."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def claim(self, owner: str, lease: float) -> Row | None:
        """The event most overdue that is neither delivered nor given up, and that no server
        holds; none when no event is due."""
        now = time.time()
        due = (
            events.c.delivered_at.is_(None)
            & events.c.gave_up_at.is_(None)
            & (events.c.next_at <= now)
        )
        with self.engine.begin() as db:
            return claim(db, events, due, (events.c.next_at,), owner, now + lease)

    def sent(
        self, event_id: str, owner: str, delivered: bool, next_at: float, gave_up: bool
    ) -> None:
        """An attempt made by the server holding the claim: counted, and the claim let go;
        the event delivered, given up, or due again at `next_at`."""
        now = int(time.time())
        values: Row = {
            "attempts": events.c.attempts + 1,
            "next_at": next_at,
            "owner": None,
            "lease_until": None,
        }
        if delivered:
            values["delivered_at"] = now
        elif gave_up:
            values["gave_up_at"] = now
        with self.engine.begin() as db:
            db.execute(
                update(events)
                .where(events.c.id == event_id, events.c.owner == owner)
                .values(**values)
            )


class Webhooks:
    """Sends the events of `store` where `destination` says each project's go (a URL and the
    `whsec_...` secret they are signed with), as the server `owner`: `run()` is its own task,
    so a slow receiver never holds up batch work.

    The delays are arguments so that tests need not wait minutes; the defaults are OpenAI's
    behaviour (retries for 72 h) and keep an attempt inside its claim (`lease` > `timeout`).
    """

    def __init__(
        self,
        store: Store,
        destination: Destination,
        metrics: Metrics | None,
        owner: str,
        *,
        first_retry: float = FIRST_RETRY,
        last_retry: float = LAST_RETRY,
        give_up: float = GIVE_UP,
        poll: float = POLL,
        timeout: float = TIMEOUT,
        lease: float = LEASE,
        senders: int = SENDERS,
    ) -> None:
        self.store = store
        self.outbox = Outbox(store.engine)
        self.destination = destination
        self.metrics = metrics
        self.owner = owner
        self.first_retry, self.last_retry, self.give_up = first_retry, last_retry, give_up
        self.poll = poll
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.lease = lease
        self._room = asyncio.Semaphore(senders)
        self._poked = asyncio.Event()
        self._session: aiohttp.ClientSession | None = None

    def poke(self) -> None:
        """Look for events now (call it from the event loop, after adding one), rather than
        at the next poll."""
        self._poked.set()

    async def run(self) -> None:
        """Send events as they come due, each in its own task while there is room for one,
        until cancelled (its sends with it); a failed attempt or an unreachable database is
        logged, never raised."""
        async with asyncio.TaskGroup() as sending:
            while True:
                await self._room.acquire()
                try:
                    row = await self.store.run(self.outbox.claim, self.owner, self.lease)
                except SQLAlchemyError as error:
                    logger.warning("webhooks: the jobs database failed: %s", type(error).__name__)
                    row = None
                if row is None:
                    self._room.release()
                    await self._idle()
                else:
                    sending.create_task(self._send(row))

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _idle(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._poked.wait(), self.poll)
        self._poked.clear()

    async def _send(self, row: Row) -> None:
        try:
            await self._attempt(row)
        finally:
            self._room.release()

    async def _attempt(self, row: Row) -> None:
        """One attempt at `row`'s event, and its outcome written back."""
        body = _encoded(row["body"])
        delivered = await self._post(row["id"], row["attempts"] + 1, body, row.get("project"))
        now = time.time()
        next_at = now + retry_delay(row["attempts"], self.first_retry, self.last_retry)
        gave_up = not delivered and next_at > row["created_at"] + self.give_up
        if gave_up:
            logger.warning("webhook %s: given up after %d attempts", row["id"], row["attempts"] + 1)
        if self.metrics is not None:
            self.metrics.webhooks_sent.labels(outcome="delivered" if delivered else "failed").inc()
        try:
            await self.store.run(
                self.outbox.sent, row["id"], self.owner, delivered, next_at, gave_up
            )
        except SQLAlchemyError as error:  # the claim lapses and the event is sent again
            logger.warning("webhooks: the jobs database failed: %s", type(error).__name__)

    async def _post(self, event_id: str, attempt: int, body: bytes, project: str | None) -> bool:
        """Whether the receiver answered this attempt with a 2xx. The signature's timestamp
        is this attempt's: a receiver rejects one older than 5 minutes."""
        found = self.destination(project)
        if found is None:  # its project's webhook left the keys file, and there is no other
            logger.warning("webhook %s: its project %s has no webhook_url", event_id, project)
            return False
        url, secret = found
        stamp = datetime.fromtimestamp(int(time.time()), tz=UTC)
        headers = {
            "webhook-id": event_id,
            "webhook-timestamp": str(int(stamp.timestamp())),
            "webhook-signature": Webhook(secret).sign(event_id, stamp, body),
            "content-type": "application/json",
        }
        try:
            async with self.session.post(
                url, data=body, headers=headers, allow_redirects=False
            ) as answer:
                if 200 <= answer.status < 300:
                    return True
                problem = f"answered {answer.status}"
        except (TimeoutError, aiohttp.ClientError) as error:
            problem = str(error) or type(error).__name__
        logger.warning("webhook %s: attempt %d failed: %s", event_id, attempt, problem)
        return False

    @property
    def session(self) -> aiohttp.ClientSession:
        """Made on first use: aiohttp wants it made in the event loop."""
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self.timeout)
        return self._session


def _encoded(body: Any) -> bytes:
    """The body as sent and signed: compact JSON, the same bytes on every attempt."""
    return json.dumps(body, separators=(",", ":")).encode()
