"""The 30 languages Qwen3-ASR recognises: ISO codes <-> the names the model speaks.

The model names a language in English ("language French<asr_text>..."), so the English name
is what goes into a forced-language prompt; clients may send either the code or the name.
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


def detected(names: Iterable[str]) -> list[dict[str, str]]:
    """OpenAI's `languages` of a transcript: the ISO code of each language the model named,
    once, first named first (`[]`: none, as for silence). A name this table does not know
    has no code to give and is left out."""
    found = (_LOOKUP.get(name.strip().lower()) for name in names)
    codes = dict.fromkeys(language.code for language in found if language is not None)
    return [{"code": code} for code in codes]
