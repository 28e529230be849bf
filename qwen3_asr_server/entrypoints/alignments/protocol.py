"""The form of POST /v1/audio/alignments: a recording, the text said in it, and the format of
the answer; read by `form.read` like the transcription forms, published by `openapi`."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from ...errors import APIError
from ...model import alignment
from ...model.languages import Language
from ...transcription.formats import FORMATS
from ...transcription.request import Encoded, Format, Request
from ..audio.protocol import Uploaded
from ..protocol.fields import LanguageName, Plain, Text, problem
from .answers import FORMATS_ALIGNED
from .sharing import MIN_UNITS, UNITS_PER_SECOND

# The longest `text`: a 3-hour English audiobook is ~230,000 characters; 300,000 CJK ones are
# 900 KB of UTF-8, within the 1 MiB the form parser takes in a field.
MAX_TEXT_CHARACTERS = 300_000
_NAMES = ", ".join(FORMATS_ALIGNED)
_KNOWN = ", ".join(sorted(each.name for each in alignment.LANGUAGES))


def _format(value: Any) -> Format:
    if not isinstance(value, str) or value not in FORMATS_ALIGNED:
        raise problem("invalid_value", f"Invalid '{{param}}' {value!r}: use one of {_NAMES}.")
    return FORMATS_ALIGNED[value]


AlignmentFormat = Annotated[
    Format, Plain(_format, {"type": "string", "enum": list(FORMATS_ALIGNED)})
]


class AlignmentRequest(Uploaded):
    text: Text = Field(
        description="What is said in the recording, to be timed word by word: at most "
        f"{MAX_TEXT_CHARACTERS} characters, and {UNITS_PER_SECOND} words a second of audio "
        f"(at least {MIN_UNITS}).",
        json_schema_extra={"maxLength": MAX_TEXT_CHARACTERS},
    )
    language: LanguageName = Field(
        None,
        description=f"The text's language, one of {_KNOWN}. Needed for Japanese (each kana "
        "is a unit); Chinese characters are units of their own without it.",
    )
    response_format: AlignmentFormat = Field("json", validate_default=True)

    @model_validator(mode="after")
    def _alignable(self) -> AlignmentRequest:
        language = self.language
        if language is not None and language not in alignment.LANGUAGES:
            raise APIError(
                400,
                f"Alignments are not available for {language.name}: Qwen3-ForcedAligner "
                f"knows {_KNOWN}.",
                param="language",
                code="unsupported_language",
            )
        if len(self.text) > MAX_TEXT_CHARACTERS:
            raise APIError(
                400,
                f"The 'text' is {len(self.text)} characters long, more than the "
                f"{MAX_TEXT_CHARACTERS} this server aligns in one request.",
                param="text",
                code="text_too_long",
            )
        longest = alignment.longest(alignment.units(self.text, language))
        if longest is None:
            raise APIError(
                400, "The 'text' has no word to align.", param="text", code="invalid_value"
            )
        if len(longest.text) > alignment.MAX_WORD_CHARACTERS:
            raise APIError(
                400,
                f"The 'text' has a word of {len(longest.text)} letters at character "
                f"{longest.first}, more than the {alignment.MAX_WORD_CHARACTERS} a word may "
                "have: separate the words with spaces.",
                param="text",
                code="word_too_long",
            )
        return self

    @property
    def forced(self) -> Language | None:
        return self.language

    def transcription(self) -> Request:
        """The recording as the transcription service takes it (to decode it, and for a long
        one to transcribe its pieces), and what the renderers read."""
        return Request(
            audio=Encoded(self.file.file, self.file.size or 0),
            response_format=FORMATS["json"],
            forced=self.language,
        )
