"""`known_speaker_names[]` and `known_speaker_references[]`: the speakers a client can name,
each with a clip of their voice as a data URL (`data:audio/wav;base64,...`), in any format the
server decodes; `min_speakers` / `max_speakers`: how many spoke, when the client knows.
Checked, and the clips decoded, before any work is done: a 400 names the field that is
wrong."""

from __future__ import annotations

import binascii
import io
from collections.abc import Sequence

import pybase64

from ...errors import APIError, invalid
from ...speakers.count import MOST_SPEAKERS, SpeakerCount
from ...speech import audio
from ...speech.audio import Audio
from ...transcription.channels import MAX_CHANNELS
from ...transcription.request import Reference

MAX_KNOWN = 4  # OpenAI's limit
SHORTEST, LONGEST = 2.0, 10.0  # seconds a reference may last
NAMES, REFERENCES = "known_speaker_names", "known_speaker_references"
LEAST, MOST = "min_speakers", "max_speakers"


def count(least: int | None, most: int | None) -> SpeakerCount | None:
    """The speaker count the client gave, if any (each already 1 to MOST_SPEAKERS)."""
    if least is None and most is None:
        return None
    found = SpeakerCount(least or 1, MOST_SPEAKERS if most is None else most)
    if found.least > found.most:
        raise invalid(
            f"min_speakers ({found.least}) is over max_speakers ({found.most}): send "
            "min_speakers <= max_speakers, or both equal when you know how many spoke.",
            LEAST,
        )
    return found


def references(names: Sequence[str], urls: Sequence[str]) -> tuple[Reference, ...]:
    """The known speakers, in the order given."""
    if len(names) > MAX_KNOWN:
        raise invalid(f"At most {MAX_KNOWN} known speakers, not {len(names)}.", NAMES)
    if len(names) != len(urls):
        raise invalid(
            f"Each of the {len(names)} known_speaker_names[] needs one reference in "
            f"known_speaker_references[], in the same order; {len(urls)} were sent.",
            REFERENCES,
        )
    if any(not name for name in names) or len(set(names)) != len(names):
        raise invalid("known_speaker_names[] must be different and not empty.", NAMES)
    return tuple(
        Reference(name, _clip(url, index))
        for index, (name, url) in enumerate(zip(names, urls, strict=True))
    )


def channel_names(names: Sequence[str], urls: Sequence[str]) -> tuple[str, ...]:
    """multichannel's speakers: a name for each channel, in channel order; no voices, for
    the channels say who is who."""
    if urls:
        raise invalid(
            "known_speaker_references[] are not used with multichannel: each channel is one "
            "speaker, named by known_speaker_names[] in channel order.",
            REFERENCES,
        )
    if len(names) > MAX_CHANNELS:
        raise invalid(f"At most {MAX_CHANNELS} channel names, not {len(names)}.", NAMES)
    if any(not name for name in names) or len(set(names)) != len(names):
        raise invalid("known_speaker_names[] must be different and not empty.", NAMES)
    return tuple(names)


def _clip(url: str, index: int) -> Audio:
    where = f"known_speaker_references[{index}]"
    scheme, comma, payload = url.partition(",")
    if not (scheme.startswith("data:") and scheme.endswith(";base64") and comma):
        raise invalid(
            f"{where} must be a data URL of audio, like data:audio/wav;base64,<the file>.",
            REFERENCES,
        )
    try:
        data = pybase64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise invalid(f"{where} is not valid base64.", REFERENCES) from None
    try:
        clip = audio.decode(io.BytesIO(data), LONGEST)
    except APIError as exc:
        reason = f"lasts over {LONGEST:g} s" if exc.code == "audio_too_long" else exc.message
        raise invalid(
            f"{where} {reason}: a reference is {SHORTEST:g} to {LONGEST:g} s "
            "of the speaker's voice, as a file the server decodes.",
            REFERENCES,
        ) from None
    if not SHORTEST <= clip.duration <= LONGEST:
        raise invalid(
            f"{where} lasts {clip.duration:.1f} s: a reference is {SHORTEST:g} to "
            f"{LONGEST:g} s of the speaker's voice.",
            REFERENCES,
        )
    return clip
