"""Multichannel: the transcripts of a recording's channels, each made apart, as one.

A call recording puts each voice on a channel of its own; transcribed apart, the channels
need no diarizer (each is one speaker) and do not talk over each other. The merge is pure:
every segment keeps its channel and is labelled with the channel's speaker, all are ordered by
time, and the text is the turns (a channel's consecutive segments) in that order, a line each.
"""

from __future__ import annotations

import dataclasses
import itertools
import string
from collections.abc import Sequence

from .pieces import joiner
from .transcript import Segment, Transcript

MAX_CHANNELS = 8  # the most channels one recording may have (Deepgram's calls have 2)
TURNS = "\n"  # between the turns of the text


def speaker(channel: int, names: Sequence[str]) -> str:
    """A channel's speaker: the name given for it, else diarized_json's letters (A, B, ...)."""
    return names[channel] if channel < len(names) else string.ascii_uppercase[channel]


def _labelled(segment: Segment, channel: int, name: str) -> Segment:
    words = None
    if segment.words is not None:
        words = [dataclasses.replace(word, speaker=name) for word in segment.words]
    return dataclasses.replace(segment, channel=channel, speaker=name, words=words)


def merge(transcripts: Sequence[Transcript], names: Sequence[str] = ()) -> Transcript:
    """One transcript of the channels' (`transcripts`, in channel order), by time."""
    segments = sorted(
        (
            _labelled(segment, channel, speaker(channel, names))
            for channel, transcript in enumerate(transcripts)
            for segment in transcript.segments
        ),
        key=lambda segment: (segment.start, segment.channel),
    )
    turns = [
        joiner(transcripts[channel].language).join(segment.text for segment in turn)
        for channel, turn in itertools.groupby(segments, key=lambda segment: segment.channel or 0)
    ]
    spoken = tuple(dict.fromkeys(each for transcript in transcripts for each in transcript.spoken))
    aligned = any(transcript.words is not None for transcript in transcripts)
    return Transcript(
        text=TURNS.join(turns),
        language=spoken[0] if spoken else transcripts[0].language,
        duration=max(transcript.duration for transcript in transcripts),
        segments=segments,
        logprobs=[entry for segment in segments for entry in segment.logprobs],
        tokens=sum((transcript.tokens for transcript in transcripts[1:]), transcripts[0].tokens),
        words=sorted(
            (word for segment in segments for word in segment.words or ()),
            key=lambda word: word.start,
        )
        if aligned
        else None,
        spoken=spoken,
    )
