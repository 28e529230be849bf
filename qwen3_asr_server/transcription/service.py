"""The transcription service: a recording in, a transcript out, whichever the front door.

It does the work in one order: the stages a request needs are chosen (a 400 for one it cannot
have), the backends' readiness is checked (a 503 before any decoding), room for the audio is
reserved in the server's budget (`budget`: a wait, or a 429), the audio is decoded (a small
plain WAV in the event loop, anything else in a thread, among `--decode-workers`),
cut where it must be (`pieces.plan`), its pieces transcribed concurrently (whole, or streamed
as OpenAI's transcript events; with multichannel, each channel's at once,
`channel_stream`), the stages run, and the transcript rendered in the format
asked for. It takes a `request.Request`, which has no HTTP in it: the audio routes make one of
their form, anything else that has a recording (a stored file, decoded samples) makes its own;
a live front door (Realtime, Wyoming) has each utterance streamed through it by
`utterance.transcribing`. The reservation is the job's until its answer or its events end
(`Job.release`, `Events.aclose`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import typing
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from ..backend.upstream import Upstream
from ..capacity.budget import AudioBudget, Reservation, estimate
from ..model.languages import Language
from ..observability.metrics import Metrics, Protocol
from ..observability.tracing import OFF, Tracing
from ..speech import audio, stoppable
from ..speech.audio import Audio
from ..speech.segmentation import Chunking, Span
from ..speech.silero import SpeechModel
from . import channels, pieces, stage
from .channel_stream import ChannelStreams
from .pieces import Cuts, Options
from .progress import Progress
from .request import Body, Encoded, Request
from .stage import Stage
from .streaming import TranscriptStream
from .transcript import Transcript
from .usage import Tokens

# A plain 16 kHz mono PCM WAV up to this size (32 s) is read in the event loop: a copy of it
# costs less than the hop to a decoding thread and back.
INLINE_WAV_BYTES = 1 << 20
# --log-transcripts: each transcription's text, quoted so that it stays on one line
transcript_logger = logging.getLogger("qwen3_asr_server.transcripts")


class ServiceSettings(typing.Protocol):
    """What the service reads: the limits on pieces, decoding and length (`settings.limits`)
    and `--log-transcripts` (`settings.logs`)."""

    segment_seconds: float
    segment_concurrency: int
    decode_workers: int
    max_audio_seconds: float
    log_transcripts: bool


@dataclass(frozen=True)
class Job:
    """A request accepted: its audio decoded, the stages it needs, how it is transcribed."""

    request: Request
    audio: Audio  # the recording; its first channel, when multichannel
    stages: list[Stage]
    options: Options
    held: Reservation  # its audio's room in the budget, until `release`
    channels: tuple[Audio, ...] = ()  # multichannel: each channel, in order

    def release(self) -> None:
        self.held.release()


class TranscriptionService:
    def __init__(
        self,
        settings: ServiceSettings,
        upstream: Upstream,
        stages: Sequence[Stage],
        speech_model: Callable[[], SpeechModel],
        metrics: Metrics,
        budget: AudioBudget,
        tracing: Tracing = OFF,
    ) -> None:
        self.settings = settings
        self.tracing = tracing
        self.budget = budget
        self.upstream = upstream
        self.stages = tuple(stages)
        self.speech_model = speech_model
        self.metrics = metrics
        self.decoding = asyncio.Semaphore(settings.decode_workers)  # CPU-bound: decode, plan

    async def accept(self, request: Request, *, asr: bool = True) -> Job:
        """What can refuse the request before the model is asked, then its audio, decoded
        (or, given as samples, held). `asr=False`: the caller may not need the ASR model,
        and checks that it is ready once it knows it does (a short alignment never asks)."""
        needed = stage.needed(self.stages, request)
        if asr:
            self.upstream.check_ready()
        for each in needed:
            each.check_ready()
        options = self._options(request, needed)
        if isinstance(request.audio, Encoded):
            encoded = request.audio
            held, decoded = await self._decode(encoded.file, encoded.size, request.multichannel)
        else:
            decoded = [request.audio]
            held = await self._hold(request.audio)
        kept = tuple(decoded) if request.multichannel else ()
        return Job(request, decoded[0], needed, options, held, kept)

    async def transcribe(self, job: Job, request_id: str) -> Body:
        """The transcript, through every stage, rendered as the request asked: with
        multichannel, each channel's as a mono recording's, concurrently, then merged."""
        if job.channels:
            done = await pieces.all_or_nothing(
                self._transcript(job, each, request_id) for each in job.channels
            )
            transcript = channels.merge(done, job.request.channel_names)
        else:
            transcript = await self._transcript(job, job.audio, request_id)
        self.finished(transcript.duration, transcript.tokens, "http", transcript.text, request_id)
        kind = job.request.response_format
        if not kind.segments:  # json or text: nothing worth a span
            return kind.render(transcript, job.request)
        with self.tracing.span("render", attributes={"qwen3_asr.response_format": kind.name}):
            return kind.render(transcript, job.request)

    async def _transcript(self, job: Job, recording: Audio, request_id: str) -> Transcript:
        """One recording (or channel) cut at its own pauses, transcribed, through the stages:
        a silent one has no piece to send."""
        spans = await self.plan(recording, job.options)
        progress = Progress(self.metrics, request_id, len(spans), recording.duration)
        transcript = await pieces.transcribe(
            self.upstream, recording, spans, job.options, request_id, progress
        )
        return await stage.run(job.stages, transcript, recording, self.tracing)

    async def stream(self, job: Job, request_id: str) -> Events:
        """The transcript as OpenAI's events, started: a backend that refuses at once is an
        error here, before any answer is sent. The events hold the job's audio from here on."""
        try:
            stream = await self._streams(job, request_id)
            await stream.start()
        except BaseException:
            job.release()
            raise
        return Events(self, stream, job, request_id)

    async def _streams(self, job: Job, request_id: str) -> TranscriptStream | ChannelStreams:
        """The recording's stream; with multichannel, each channel's, planned at once."""
        if job.channels:
            planned = await pieces.all_or_nothing(
                self.planned(each, job.options, request_id) for each in job.channels
            )
            return ChannelStreams(planned, job.request.channel_names)
        labelled = job.request.response_format.speakers
        return await self.planned(job.audio, job.options, request_id, labelled=labelled)

    async def planned(
        self, recording: Audio, options: Options, request_id: str, *, labelled: bool = False
    ) -> TranscriptStream:
        """The recording's stream of pieces, planned and not started: an upload's events, or
        a live door's utterance (`utterance.transcribing`)."""
        spans = await self.plan(recording, options)
        progress = Progress(self.metrics, request_id, len(spans), recording.duration)
        return TranscriptStream(
            self.upstream, recording, spans, options, progress, labelled=labelled
        )

    def options(
        self,
        *,
        language: Language | None,
        context: str | None,
        logprobs: bool,
        candidates: tuple[Language, ...] = (),
        temperature: float = 0.0,
        timed: bool = False,
        chunking: Chunking | None = None,
        stages: Sequence[Stage] = (),
        cuts: Cuts | None = None,
    ) -> Options:
        """How a recording is transcribed, with this server's window and concurrency: pieces
        a stage takes in one pass fit its window too."""
        limits = [each.max_seconds for each in stages if each.max_seconds is not None]
        return Options(
            language=language,
            context=context,
            temperature=temperature,
            timed=timed,
            logprobs=logprobs,
            window=min([self.settings.segment_seconds, *limits]),
            concurrency=self.settings.segment_concurrency,
            candidates=candidates,
            chunking=chunking,
            cuts=cuts,
        )

    async def plan(self, recording: Audio, options: Options) -> list[Span]:
        """Where the recording is cut: at once when it goes whole, else in a thread among the
        CPU-bound jobs (Silero listens for pauses, ~2-5 ms of CPU per second of audio)."""
        if pieces.whole(recording, options):
            return pieces.plan(recording, options, self.speech_model)
        with self.tracing.span("plan the cut", attributes=_seconds(recording)) as span:
            spans = await stoppable.run(
                self.decoding,
                lambda stop: pieces.plan(recording, options, self.speech_model, stop),
            )
            span.set_attribute("qwen3_asr.pieces", len(spans))
            return spans

    def finished(
        self,
        seconds: float,
        tokens: Tokens,
        protocol: Protocol,
        text: str | None = None,
        request_id: str = "-",
    ) -> None:
        """A transcription finished: its audio and tokens in the metrics, and its text in the
        log with --log-transcripts."""
        self.metrics.transcribed(seconds, tokens.input, tokens.output, protocol)
        if self.settings.log_transcripts and text is not None:
            quoted = json.dumps(text, ensure_ascii=False)
            transcript_logger.info("request_id=%s transcript=%s", request_id, quoted)

    def _options(self, request: Request, needed: Sequence[Stage]) -> Options:
        kind = request.response_format
        chunking = request.chunking
        if chunking is None and not any("words" in each.provides for each in needed):
            chunking = kind.unaligned_chunking
        return self.options(
            language=request.forced,
            context=request.context,
            logprobs=request.logprobs,
            candidates=request.candidates,
            temperature=request.temperature,
            timed=kind.segments,
            chunking=chunking,
            stages=needed,
            cuts=next((cut for cut in (each.cuts(request) for each in needed) if cut), None),
        )

    def _limit(self) -> float:
        """The longest recording taken: longer than the whole budget it could never have room,
        and is refused like one longer than `--max-audio-seconds`."""
        return min(self.settings.max_audio_seconds, self.budget.limit)

    async def _hold(self, decoded: Audio) -> Reservation:
        """Room in the budget for samples decoded already."""
        limit = self._limit()
        if len(decoded.samples) > int(limit * audio.RATE):
            raise audio.too_long(limit)
        return await self.budget.reserve(decoded.duration)

    async def _decode(
        self, file: BinaryIO, size: int, separate: bool
    ) -> tuple[Reservation, list[Audio]]:
        """The audio, decoded in room reserved for it: as much as the file may hold, then
        what it did; mixed to mono, or (`separate`) each channel, all of them counted."""
        limit = self._limit()
        seconds, count = estimate(file, size, limit)
        if count and seconds > limit + 1:
            raise audio.too_long(limit)
        held = await self.budget.reserve(seconds * (max(count, 1) if separate else 1))
        try:
            plain = audio.plain_wav(file, limit) if size <= INLINE_WAV_BYTES else None
            decoded = [plain] if plain is not None else await self._decoded(file, limit, separate)
            held.resize(sum(len(each.samples) for each in decoded))
        except BaseException:
            held.release()
            raise
        return held, decoded

    async def _decoded(self, file: BinaryIO, limit: float, separate: bool) -> list[Audio]:
        """Decoded in a thread, among the CPU-bound jobs: a span of the trace (a small plain
        WAV, read in the event loop, costs next to nothing and gets none)."""
        with self.tracing.span("decode") as span:
            decoded = await self._decoding(file, limit, separate)
            span.set_attribute("qwen3_asr.audio_seconds", round(decoded[0].duration, 3))
            return decoded

    async def _decoding(self, file: BinaryIO, limit: float, separate: bool) -> list[Audio]:
        if separate:
            most = channels.MAX_CHANNELS
            return await stoppable.run(
                self.decoding, lambda stop: audio.channels(file, limit, most, stop)
            )
        return [await stoppable.run(self.decoding, lambda stop: audio.decode(file, limit, stop))]


def _seconds(recording: Audio) -> dict[str, float]:
    return {"qwen3_asr.audio_seconds": round(recording.duration, 3)}


class Events:
    """A started stream's server-sent events; counted (and logged) once they are through.
    `aclose` stops the pieces still streaming, also when the events are never read."""

    def __init__(
        self,
        service: TranscriptionService,
        stream: TranscriptStream | ChannelStreams,
        job: Job,
        request_id: str,
    ) -> None:
        self._service = service
        self._stream = stream
        self._job = job
        self._request_id = request_id

    def __aiter__(self) -> AsyncIterator[str]:
        return self._events()

    async def aclose(self) -> None:
        """Stop the pieces, and give the audio's room back."""
        try:
            await self._stream.close()
        finally:
            self._job.release()

    async def _events(self) -> AsyncIterator[str]:
        async for event in self._stream.events():
            yield event
        stream = self._stream
        seconds = self._job.audio.duration
        self._service.finished(seconds, stream.tokens, "http", stream.text, self._request_id)
