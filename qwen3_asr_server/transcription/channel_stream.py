"""stream=true with multichannel: each channel streamed as a mono recording is
(`streaming.TranscriptStream`), the channels at once, their events sent as they come.

The channels talk at the same time, so their text cannot be one run of deltas: the stream is
shaped as the diarizing model's, whatever the response_format. Each delta names its segment
(`segment_id`) and its `channel`; each finished piece is a `transcript.text.segment` event
with the channel's speaker (`channels.speaker`) and its `channel`. A channel's pieces come in
its time order (its stream reads them so); the channels interleave. Segment ids are numbered in
the order the segments begin to be sent, so they are unique across the channels but need not
be the ids diarized_json gives the same segments (those follow the merged order). The last
event is one `transcript.text.done` with the merged text (`channels.merge`) and the usage of
every channel. A silent channel has no piece, so it asks nothing upstream and sends nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import APIError
from . import channels, pieces, progress
from .render import diarized_segment
from .responses import Logprob, TranscriptionTextDeltaEvent, TranscriptionTextDoneEvent, heard
from .streaming import TranscriptStream, sse
from .transcript import Segment, Transcript
from .usage import Tokens


@dataclass
class _Said:
    """What one channel's stream gave next: text, the end of a piece (`text` None, with its
    `segment` if it said something), its failure, or that the channel is through."""

    channel: int
    text: str | None = None
    logprobs: list[dict[str, Any]] = field(default_factory=list)
    segment: Segment | None = None
    error: Exception | None = None
    through: bool = False


@dataclass
class _Channel:
    """What one channel has sent so far."""

    stream: TranscriptStream
    segments: list[Segment] = field(default_factory=list)  # finished, with their logprobs
    sending: int | None = None  # the number of the segment its deltas are of
    logprobs: list[dict[str, Any]] = field(default_factory=list)  # of that segment

    def transcript(self) -> Transcript:
        """The channel's transcript once it is through, as `channels.merge` takes it."""
        stream = self.stream
        return Transcript(
            text=stream.text or "",
            language=stream.spoken[0] if stream.spoken else stream.options.language,
            duration=stream.audio.duration,
            segments=self.segments,
            logprobs=[entry for segment in self.segments for entry in segment.logprobs],
            tokens=stream.tokens,
            spoken=tuple(stream.spoken),
        )


class ChannelStreams:
    """The events of a multichannel transcription; `start()` before iterating `events()`."""

    def __init__(self, streams: Sequence[TranscriptStream], names: Sequence[str]) -> None:
        self.channels = [_Channel(stream) for stream in streams]
        self.names = tuple(names)  # the channels' speakers, in order (`channels.speaker`)
        self.said: asyncio.Queue[_Said] = asyncio.Queue()
        self.readers: list[asyncio.Task[None]] = []
        self.numbered = 0  # segments numbered so far, across the channels
        self.sent = 0  # pieces whose events are sent, across the channels
        self.closing = False
        self.tokens = Tokens()  # every channel's, once the events are through
        self.text: str | None = None  # the merged text, once it is through

    async def start(self) -> None:
        """Every channel's first answer (`TranscriptStream.start`): a backend that refuses
        the request at once is an HTTP error, before any event."""
        try:
            await pieces.all_or_nothing(each.stream.start() for each in self.channels)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Stop every channel's pieces still streaming; their upstream requests are
        cancelled."""
        if not self.closing:  # once, as `TranscriptStream.close`
            self.closing = True
            for reader in self.readers:
                reader.cancel()
        if self.readers:
            await asyncio.wait(self.readers)
        for each in self.channels:
            await each.stream.close()

    async def events(self) -> AsyncIterator[str]:
        """OpenAI's server-sent events: deltas and segments, then done (or an error event)."""
        self.readers = [
            asyncio.create_task(self._read(number, each.stream))
            for number, each in enumerate(self.channels)
        ]
        try:
            async for event in self._interleaved():
                yield event
        except APIError as exc:
            yield sse(exc.body())
            return
        finally:
            await self.close()
        yield sse(self._done().body())

    async def _read(self, channel: int, stream: TranscriptStream) -> None:
        """The channel's stream into `said`, read ahead of what is sent: a piece's segment
        is taken as the piece ends."""
        made = 0  # segments of the stream's that are in `said`
        try:
            async for text, logprobs in stream.pieces():
                segment = stream.segments[made] if len(stream.segments) > made else None
                made = len(stream.segments)
                self.said.put_nowait(_Said(channel, text, logprobs, segment))
        except Exception as exc:  # raised where the events are sent, as a mono stream's
            self.said.put_nowait(_Said(channel, error=exc))
        else:
            self.said.put_nowait(_Said(channel, through=True))

    async def _interleaved(self) -> AsyncIterator[str]:
        """Each channel's deltas and segments, as they come, until every channel is
        through; raises a channel's failure."""
        speaking = len(self.channels)
        while speaking:
            said = await self.said.get()
            if said.error is not None:
                raise said.error
            if said.through:
                speaking -= 1
            elif said.text is None:
                for event in self._piece_done(said.channel, said.segment):
                    yield event
            else:
                yield sse(self._delta(said))

    def _number(self, channel: _Channel) -> int:
        """The number of the segment the channel is sending, given when its first text
        comes."""
        if channel.sending is None:
            channel.sending, self.numbered = self.numbered, self.numbered + 1
        return channel.sending

    def _delta(self, said: _Said) -> dict[str, Any]:
        channel = self.channels[said.channel]
        channel.logprobs += said.logprobs
        logprobs = channel.stream.options.logprobs
        return TranscriptionTextDeltaEvent(
            delta=said.text or "",
            logprobs=[Logprob(**entry) for entry in said.logprobs] if logprobs else None,
            segment_id=f"seg_{self._number(channel)}",
            channel=said.channel,
        ).body()

    def _piece_done(self, number: int, said: Segment | None) -> list[str]:
        """A channel's piece is through: its segment event, if it said something, and the
        progress of every channel (counted here: the channels' streams read ahead of what
        is sent)."""
        channel = self.channels[number]
        events = []
        if said is not None:
            segment = dataclasses.replace(said, logprobs=channel.logprobs)
            channel.segments.append(segment)
            named = dataclasses.replace(
                segment, speaker=channels.speaker(number, self.names), channel=number
            )
            events.append(sse(diarized_segment(self._number(channel), named).body()))
        channel.sending, channel.logprobs = None, []
        self.sent += 1
        planned = sum(each.stream.progress.planned for each in self.channels)
        return [*events, progress.comment(self.sent, planned)]

    def _done(self) -> TranscriptionTextDoneEvent:
        merged = channels.merge([each.transcript() for each in self.channels], self.names)
        self.tokens, self.text = merged.tokens, merged.text
        logprobs = self.channels[0].stream.options.logprobs
        return TranscriptionTextDoneEvent(
            text=merged.text,
            languages=heard(merged.spoken),
            usage=merged.tokens.usage(),
            logprobs=[Logprob(**entry) for entry in merged.logprobs] if logprobs else None,
        )
