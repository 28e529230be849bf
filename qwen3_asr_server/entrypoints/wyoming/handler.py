"""One Wyoming connection: `describe` and `ping` answered, `transcribe` commands carried out.

A command is `transcribe` (optional), `audio-start`, `audio-chunk`s, `audio-stop`; it is
transcribed after `audio-stop`, or as soon as its end is heard in its audio (`endpoint`),
through the transcription core's one entry for a live door's utterance
(`transcription.utterance`, as a Realtime utterance is: the same readiness, admission,
metrics and log), answered with `transcript-start`, a `transcript-chunk` per piece of text
as vLLM writes it, `transcript-stop`, then `transcript`. A command answered at its end
heard is still streamed by the satellite until it reads the transcript: those chunks and the
`audio-stop` after them are read and dropped, and a `transcribe` or `audio-start` begins the
next command.
A command holds a lease (`capacity.lease`) from its first event to its answer: the engine
kept awake while its audio comes, and its place in the drain, so SIGTERM lets it finish.
Anything that ends a command without a transcript (a bad event, a busy or loading model, the
drain) is an `error` event; the rest of that command (up to its `audio-stop`) is read and
dropped, and the connection serves the next. Closing at once instead would drop what the
client is still sending unread, and the kernel would answer it with a reset, which can reach
the client before it has read the error.

An event that cannot be read at all (`events.BadEvent`: not a Wyoming event, over its size,
not whole within --wyoming-event-timeout, or a `transcribe` whose fields are not strings) is
one line in the log and an `error` event, and the connection is closed: what follows it
cannot be trusted to be events. A connection that sends no event for --wyoming-idle-timeout
is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time

from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler

from ...capacity.lease import Lease
from ...errors import APIError
from ...observability.usage import CALLER, WYOMING, Caller
from ...speech.audio import Audio
from ...transcription.utterance import transcribing, utterance
from .command import Command, Refusal
from .events import BadEvent, Idle, read_event
from .info import info
from .services import WyomingServices
from .vocabulary import Vocabulary

logger = logging.getLogger(__name__)


class Handler(AsyncEventHandler):
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        services: WyomingServices,
        vocabulary: Vocabulary,
    ) -> None:
        super().__init__(reader, writer)
        self.services = services
        self.vocabulary = vocabulary  # the context every command is transcribed with
        self.command: Command | None = None
        # what a command holds from its first event to its answer: the engine awake while
        # its audio comes, and its place in the drain (its readiness is the utterance's)
        self.lease = Lease(activity=services.activity, drain=services.drain)
        self.request_id = "-"
        self.started = 0.0  # when the command's first event came (time.monotonic)
        self.dropping = False  # a command refused: its events are dropped until audio-stop
        self.answered = False  # a command answered at its end heard: its chunks are dropped

    async def run(self) -> None:
        """Serve events until the client leaves, is idle too long or sends one that cannot
        be read (the library's `run`, with the port's bounds and its own reader)."""
        settings = self.services.settings
        self._is_running = True
        CALLER.set(Caller(None, WYOMING))  # its usage: Wyoming has no keys
        try:
            while self._is_running:
                event = await read_event(
                    self.reader, settings.wyoming_idle_timeout, settings.wyoming_event_timeout
                )
                if event is None or not await self.handle_event(event):
                    break
        except Idle:
            logger.info(
                "wyoming connection from %s closed: no event in %g s",
                self._peer(),
                settings.wyoming_idle_timeout,
            )
        except BadEvent as exc:
            await self._refuse(exc)
        finally:
            await self.disconnect()
            self.writer.close()

    async def _refuse(self, bad: BadEvent) -> None:
        """One line for an event that cannot be read, and the `error` event if the client
        still reads."""
        logger.log(bad.level, "wyoming event refused from %s: %s", self._peer(), bad.text)
        self._end("invalid")
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(self.services.settings.wyoming_event_timeout):
                await self.write_event(Error(text=bad.text, code=bad.code).event())

    def _peer(self) -> str:
        peer = self.writer.get_extra_info("peername")
        return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)

    async def handle_event(self, event: Event) -> bool:
        if Describe.is_type(event.type):
            await self.write_event(info(self.services.settings).event())
            return True
        if Ping.is_type(event.type):  # a client checking the connection is alive
            await self.write_event(Pong(text=Ping.from_event(event).text).event())
            return True
        if self.answered and (AudioChunk.is_type(event.type) or AudioStop.is_type(event.type)):
            self.answered = not AudioStop.is_type(event.type)
            return True
        self.answered = False
        if self.dropping and not Transcribe.is_type(event.type):
            self.dropping = not AudioStop.is_type(event.type)
            return True
        self.dropping = False
        try:
            if Transcribe.is_type(event.type):
                transcribe = _transcribe(event)
                self._end("replaced")  # a new transcribe starts the command afresh
                self._begin(transcribe)
            elif AudioStart.is_type(event.type) and self.command is None:
                self._begin(None)
            elif AudioChunk.is_type(event.type):
                command = self._command()
                if await command.hear(_chunk(event)):
                    self.answered = True  # what the satellite still sends of it is dropped
                    return await self._answer(command)
            elif AudioStop.is_type(event.type):
                return await self._answer(self._command())
        except Refusal as exc:
            await self._fail(exc.outcome, exc.code, exc.text)
            self.dropping = not AudioStop.is_type(event.type)
        return True

    async def disconnect(self) -> None:
        """The connection ended (the client left, or the server closed it): a command still
        open is over."""
        self._end("gone")

    def _command(self) -> Command:
        """The command the audio belongs to: without `transcribe`, one with the defaults."""
        if self.command is None:
            self._begin(None)
        assert self.command is not None
        return self.command

    def _begin(self, transcribe: Transcribe | None) -> None:
        if self.services.drain.draining:
            raise Refusal(
                "server-shutting-down",
                "The server is shutting down; retry shortly (another instance may answer).",
                outcome="busy",
            )
        settings = self.services.settings
        command = Command(
            self.services.catalog,
            self.services.speech_model,
            transcribe,
            settings.wyoming_endpointing,
            max_seconds=settings.wyoming_max_audio_seconds,
        )
        self.lease.take()
        self.command = command
        self.request_id = secrets.token_hex(16)
        self.started = time.monotonic()

    def _end(self, outcome: str, audio: Audio | None = None) -> None:
        """The command is over: its lease given back, counted and logged."""
        if self.command is None:
            return
        self.command = None
        self.lease.give_back()
        if outcome == "replaced":
            return
        self.services.metrics.wyoming_commands.labels(outcome=outcome).inc()
        logger.info(
            "wyoming command request_id=%s outcome=%s audio_seconds=%.2f duration=%.3f",
            self.request_id,
            outcome,
            audio.duration if audio is not None else 0.0,
            time.monotonic() - self.started,
        )

    async def _fail(self, outcome: str, code: str, text: str) -> None:
        if self.command is None:  # refused before it began (the drain, a bad transcribe)
            self.services.metrics.wyoming_commands.labels(outcome=outcome).inc()
        self._end(outcome)
        try:
            await self.write_event(Error(text=text, code=code).event())
        except OSError:
            logger.debug("wyoming client gone before its error: %s", text)

    async def _answer(self, command: Command) -> bool:
        """Transcribe the command and send the transcript (or an error); False: the client
        is gone, close the connection."""
        spoken = command.audio()
        try:
            await self._transcribe(command, spoken)
        except APIError as exc:
            outcome = "busy" if exc.status in (429, 503) else "failed"
            await self._fail(outcome, exc.code or "transcription-failed", exc.message)
            return True
        except OSError:  # the client left while its transcript was being written
            self._end("gone", spoken)
            return False
        self._end("ok", spoken)
        return True

    async def _transcribe(self, command: Command, spoken: Audio) -> None:
        forced = command.language.code if command.language else None
        if not len(spoken.samples):  # nothing was said: no need to ask the model
            await self.write_event(Transcript(text="", language=forced).event())
            return
        request = utterance(spoken, language=command.language, context=self.vocabulary.context)
        service = self.services.transcription
        async with transcribing(service, request, "wyoming", self.request_id) as stream:
            await self.write_event(TranscriptStart(language=forced).event())
            async for text, _ in stream.texts():
                if text:
                    await self.write_event(TranscriptChunk(text=text).event())
            await self.write_event(TranscriptStop().event())
            heard = stream.spoken[0].code if stream.spoken else forced
            await self.write_event(Transcript(text=stream.text or "", language=heard).event())


def _transcribe(event: Event) -> Transcribe:
    """The `transcribe` an event carries; a BadEvent when a field it reads is not a string."""
    data = event.data or {}
    for key in ("name", "language", "vad_sensitivity"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise BadEvent("bad-event", f"A transcribe's `{key}` must be a string.")
    return Transcribe.from_event(event)


def _chunk(event: Event) -> AudioChunk:
    """The chunk an `audio-chunk` carries; a Refusal when its format is missing or not
    numbers."""
    data = event.data or {}
    if not all(type(data.get(key)) is int for key in ("rate", "width", "channels")):
        raise Refusal(
            "bad-event", "An audio-chunk needs its rate, width and channels, as integers."
        )
    return AudioChunk.from_event(event)
