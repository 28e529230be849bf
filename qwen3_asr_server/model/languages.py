"""The 30 languages Qwen3-ASR recognises: ISO codes <-> the names the model speaks.

The model names a language in English ("language French<asr_text>..."), so the English name
is what goes into a forced-language prompt; clients may send either the code or the name. A
`Language` is what travels: from the request to the prompt, and from the model's answer
(`named`) to the response's `languages` (`detected`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    code: str
    name: str


SUPPORTED = (
    Language("zh", "Chinese"),
    Language("en", "English"),
    Language("yue", "Cantonese"),
    Language("ar", "Arabic"),
    Language("de", "German"),
    Language("fr", "French"),
    Language("es", "Spanish"),
    Language("pt", "Portuguese"),
    Language("id", "Indonesian"),
    Language("it", "Italian"),
    Language("ko", "Korean"),
    Language("ru", "Russian"),
    Language("th", "Thai"),
    Language("vi", "Vietnamese"),
    Language("ja", "Japanese"),
    Language("tr", "Turkish"),
    Language("hi", "Hindi"),
    Language("ms", "Malay"),
    Language("nl", "Dutch"),
    Language("sv", "Swedish"),
    Language("da", "Danish"),
    Language("fi", "Finnish"),
    Language("pl", "Polish"),
    Language("cs", "Czech"),
    Language("fil", "Filipino"),
    Language("fa", "Persian"),
    Language("el", "Greek"),
    Language("hu", "Hungarian"),
    Language("mk", "Macedonian"),
    Language("ro", "Romanian"),
)

_LOOKUP = {key: lang for lang in SUPPORTED for key in (lang.code, lang.name.lower())}


def resolve(value: str) -> Language:
    """Map a code or English name, any case, to a Language; ValueError if unsupported."""
    language = _LOOKUP.get(value.strip().lower())
    if language is None:
        raise ValueError(
            f"Unsupported language {value!r}. Use an ISO-639-1 code or English name of one of "
            f"Qwen3-ASR's languages: {', '.join(lang.code for lang in SUPPORTED)}."
        )
    return language


def named(name: str) -> Language | None:
    """The language the model named (`English`), or None for a name this table does not know
    (the model's own `None`, which means no speech, included)."""
    return _LOOKUP.get(name.strip().lower())


def detected(heard: Iterable[Language]) -> list[dict[str, str]]:
    """OpenAI's `languages` of a transcript: the ISO code of each language heard, once, first
    heard first (`[]`: none, as for silence)."""
    return [{"code": language.code} for language in dict.fromkeys(heard)]
