"""A WebRTC call (`POST /v1/realtime/calls`): a Realtime session whose audio is the caller's
audio track and whose events travel on the data channel it opens, `oai-events`.

aiortc answers the offer and decodes the track (Opus, 48 kHz) into frames the session hears
at 16 kHz (`speech.audio.FrameResampler`); the channel carries the JSON events a WebSocket
would, both ways, but audio never comes as `input_audio_buffer.append`. The call outlives the
POST that answered its offer: it ends, and gives back the lease the POST took for it
(`capacity.lease`: its seat of `--max-sessions`, its place in the drain), when it has
not connected (its channel open, its track come) within CONNECT_SECONDS of the answer, the
peer connection fails or closes, the channel closes, no audio comes for NO_AUDIO_SECONDS, the
channel is flooded, or the server drains (once the utterance being spoken is transcribed, as a
WebSocket session).

The channel is bounded as a WebSocket is: a message over MAX_MESSAGE_BYTES is refused, and
client events beyond RATE a second (BURST at once) are dropped, each run of them told with an
`error` event; a client that goes on until MAX_DROPPED were dropped loses the call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

import av
import orjson
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCDataChannel,
    RTCPeerConnection,
    RTCSessionDescription,
)
from aiortc.mediastreams import MediaStreamError

from ...capacity.lease import Lease
from ...errors import EventError, invalid
from ...speech.audio import FrameResampler
from . import ice
from . import server_events as events
from .protocol import SessionConfig
from .server_events import ClientGone, Event
from .services import RealtimeServices
from .session import Session

logger = logging.getLogger(__name__)

CHANNEL = "oai-events"  # the data channel's label, as OpenAI's calls name it
CONNECT_SECONDS = 10.0  # ICE, DTLS and SCTP take a browser well under a second
NO_AUDIO_SECONDS = 30.0
MAX_MESSAGE_BYTES = 64 << 10  # a session.update is a few hundred bytes
MAX_UNSENT_BYTES = 4 << 20  # events the client leaves unread before the call is dropped
RATE = 50  # client events a second, on average...
BURST = 100  # ...and at once
MAX_DROPPED = 500


@dataclass
class Bucket:
    """A token bucket: whether one more event, at time `now`, fits `rate` a second with
    bursts of `burst`."""

    rate: float
    burst: float
    tokens: float = field(init=False)
    at: float | None = None

    def __post_init__(self) -> None:
        self.tokens = self.burst

    def admit(self, now: float) -> bool:
        if self.at is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class Call:
    """One call's peer connection and session; `answer` the offer, then `serve` it."""

    def __init__(self, services: RealtimeServices, request_id: str, config: SessionConfig) -> None:
        self.id = events.new_id("rtc")
        self.services = services
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))  # host candidates only
        self.session = Session(services, self.send, request_id, False, config=config, track=True)
        self._channel: RTCDataChannel | None = None
        self._track: MediaStreamTrack | None = None
        self._opened = asyncio.Event()  # the channel is open and the audio track came
        self._ended = asyncio.Event()
        self._inbox: asyncio.Queue[str | bytes | None] = asyncio.Queue()  # None: some dropped
        self._bucket = Bucket(RATE, BURST)
        self._dropped = 0
        self._warned = False  # the run of dropped events going on was told
        self.pc.on("datachannel", self._on_channel)
        self.pc.on("track", self._on_track)
        self.pc.on("connectionstatechange", self._on_state)

    async def answer(self, sdp: str) -> str:
        """The SDP answer to the caller's offer; a 400 if aiortc cannot take the offer."""
        try:
            try:
                await self.pc.setRemoteDescription(RTCSessionDescription(sdp, "offer"))
            # aiortc's parser asserts, indexes and converts: whatever it raises, the SDP is bad
            except Exception as exc:
                said = f": {exc}" if str(exc) else ""
                raise invalid(
                    f"The SDP offer could not be used{said}.", "sdp", "invalid_offer"
                ) from None
            address = ice.bound_address(self.services.settings.host)
            if address is not None:
                await ice.gather_on(self.pc, address)
            await self.pc.setLocalDescription(await self.pc.createAnswer())
        except BaseException:
            await self.pc.close()
            raise
        return self.pc.localDescription.sdp

    async def send(self, event: Event) -> None:
        channel = self._channel
        if channel is None or channel.readyState != "open":
            raise ClientGone
        if channel.bufferedAmount > MAX_UNSENT_BYTES:
            self._ended.set()
            raise ClientGone
        channel.send(orjson.dumps(event).decode())

    async def serve(self) -> None:
        """The call, from its answer to its end."""
        parts: list[asyncio.Task[object]] = []
        try:
            if not await self._open():
                return
            await self.session.start()
            assert self._track is not None
            parts = [
                asyncio.create_task(self._listen(self._track)),
                asyncio.create_task(self._read()),
                asyncio.create_task(self.session.drained()),
                asyncio.create_task(self._ended.wait()),
            ]
            done, _ = await asyncio.wait(parts, return_when=asyncio.FIRST_COMPLETED)
            for part in done:
                part.result()
        except ClientGone:
            pass
        finally:
            for part in parts:
                part.cancel()
            if parts:
                await asyncio.wait(parts)
            await self.session.close()
            await self.pc.close()

    async def _open(self) -> bool:
        """Whether the channel opened and the track came, before the call ended or timed out."""
        waits = [asyncio.create_task(self._ended.wait()), asyncio.create_task(self._opened.wait())]
        await asyncio.wait(waits, timeout=CONNECT_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        for wait in waits:
            wait.cancel()
        await asyncio.wait(waits)
        if not (self._opened.is_set() or self._ended.is_set()):
            logger.info("WebRTC call %s did not connect in %g s: ended", self.id, CONNECT_SECONDS)
        return self._opened.is_set() and not self._ended.is_set()

    async def _listen(self, track: MediaStreamTrack) -> None:
        """The track's audio into the session, until it ends or is silent for too long."""
        resample = FrameResampler()
        told = False  # a full buffer (manual commits) is told once, not at every frame
        while True:
            try:
                # not wait_for: on 3.11 it loses a cancel that comes as a frame does (bpo-42130)
                async with asyncio.timeout(NO_AUDIO_SECONDS):
                    frame = await track.recv()
            except (TimeoutError, MediaStreamError):
                return
            assert isinstance(frame, av.AudioFrame)  # an audio track's frames, decoded
            try:
                await self.session.hear(resample(frame))
                told = False
            except EventError as exc:
                if not told:
                    await self.send(events.error(exc))
                told = True

    async def _read(self) -> None:
        """The client's events, one at a time, as a WebSocket's frames are read."""
        while True:
            message = await self._inbox.get()
            if message is not None:
                await self.session.receive(message, MAX_MESSAGE_BYTES)
                continue
            refusal = EventError(
                f"Too many events: the data channel takes {RATE} a second ({BURST} at once); "
                f"{self._dropped} were dropped so far, and the call ends at {MAX_DROPPED}.",
                "rate_limit_exceeded",
            )
            await self.send(events.error(refusal))

    def _on_channel(self, channel: RTCDataChannel) -> None:
        if channel.label != CHANNEL or self._channel is not None:
            channel.close()  # events go on one channel: any other is refused
            return
        self._channel = channel
        channel.on("message", self._on_message)
        channel.on("close", self._ended.set)
        self._check_opened()

    def _on_track(self, track: MediaStreamTrack) -> None:
        if track.kind == "audio" and self._track is None:
            self._track = track
            self._check_opened()

    def _check_opened(self) -> None:
        if self._channel is not None and self._track is not None:
            self._opened.set()

    def _on_state(self) -> None:
        if self.pc.connectionState in ("failed", "closed"):
            self._ended.set()

    def _on_message(self, message: str | bytes) -> None:
        if self._bucket.admit(time.monotonic()) and self._inbox.qsize() < BURST:
            self._inbox.put_nowait(message)
            self._warned = False
            return
        self._dropped += 1
        if self._dropped >= MAX_DROPPED:
            self._ended.set()
        elif not self._warned:
            self._warned = True
            self._inbox.put_nowait(None)


def start(services: RealtimeServices, call: Call, lease: Lease) -> None:
    """Serve `call` past the POST that made it, holding `lease` (taken by the POST: its seat,
    its use of the engine, its place in the drain, which waits for it as for a WebSocket
    session) until it ends."""
    task = asyncio.create_task(_run(call, lease))
    services.calls.add(task)
    task.add_done_callback(services.calls.discard)


async def _run(call: Call, lease: Lease) -> None:
    with lease:
        try:
            await call.serve()
        except Exception:
            logger.exception("WebRTC call %s failed", call.id)


async def end_all(calls: set[asyncio.Task[None]]) -> None:
    """At shutdown, after the drain: the calls still running are ended."""
    running = list(calls)
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)
