"""The fields more than one request family takes, each described and checked once.

The request models (`form`, `realtime`, `chat`) are pydantic models built from these types.
Each check says what is wrong as a `Problem` whose message may name the field as `{param}`:
only the front door knows where the field sits (`temperature` in a form,
`session.audio.input.turn_detection.threshold` in a Realtime update), and `refusal` puts the
path there when it turns the first problem into the error the client gets.

A multipart form carries every value as text: validated with `TEXT` in the context, numbers
and flags are read from their text. JSON must bring them as numbers and booleans.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationError, ValidationInfo
from pydantic_core import CoreSchema, PydanticCustomError, core_schema
from starlette.datastructures import UploadFile

from ...errors import APIError
from ...model import languages, prompt
from ...model.catalog import Catalog
from ...model.languages import Language
from ...model.prompt import MAX_KEYWORD_CHARS, MAX_KEYWORDS
from ...speech.segmentation import MAX_PREFIX_PADDING_MS, SILENCE_DURATION_MS

TEXT = "text"  # in the validation context: the values arrive as text (a multipart form)
POLICY = "policy"  # in the validation context: this server's `Policy`
INVALID_TYPE = "Invalid type for '{param}': expected {expected}, but got {got} instead."
Problem = PydanticCustomError  # a field's problem: its code, and a message that may say {param}
_TRUE, _FALSE = ("true", "1"), ("false", "0")


@dataclass(frozen=True)
class Policy:
    """What this server accepts, which requests are checked against: its model ids, the bytes
    of context that fit beside the audio (`prompt.context_limit`), the largest upload, and
    whether chat audio may come by http(s) URL."""

    catalog: Catalog
    context_limit: int
    upload_limit: int
    allow_remote_audio_urls: bool = False


def problem(code: str, message: str, **context: Any) -> Problem:
    """A field's problem: `code` is OpenAI's error code, `message` may say `{param}`."""
    return PydanticCustomError(code, message, context)


def kind(value: Any) -> str:
    """What a value is, as a message says it."""
    if isinstance(value, UploadFile):
        return "a file"
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return "null" if value is None else names.get(type(value), "a number")


def wrong_type(expected: str, value: Any) -> Problem:
    return problem("invalid_type", INVALID_TYPE, expected=expected, got=kind(value))


def policy(info: ValidationInfo) -> Policy:
    found = (info.context or {}).get(POLICY)
    if not isinstance(found, Policy):
        raise RuntimeError("validate requests with the server's Policy in the context")
    return found


def _as_text(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get(TEXT))


def _not_a(expected: str, value: str) -> Problem:
    return problem(
        "invalid_value",
        "Invalid value for '{param}': {value} is not {expected}.",
        value=repr(value),
        expected=expected,
    )


class Checked:
    """A type whose values one function checks (and converts); `json_schema` says how the API
    describes it. Plain: pydantic adds no checks of its own."""

    def check(self, value: Any, info: ValidationInfo) -> Any:
        raise NotImplementedError

    def json_schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.with_info_plain_validator_function(self.check)

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return self.json_schema()


@dataclass(frozen=True, eq=False)  # hashed as itself: its schema is a dict
class Plain(Checked):
    """`function` checks the value (and may convert it); `schema` describes it."""

    function: Callable[[Any], Any]
    schema: dict[str, Any]

    def check(self, value: Any, info: ValidationInfo) -> Any:
        return self.function(value)

    def json_schema(self) -> dict[str, Any]:
        return self.schema


def read_number(value: Any, info: ValidationInfo, *, whole: bool = False) -> float:
    """A number, from JSON or (with `TEXT`) from its text; with `whole`, an integer."""
    expected = "an integer" if whole else "a number"
    if isinstance(value, str) and _as_text(info):
        try:
            number = float(value)
        except ValueError:
            raise _not_a(expected, value) from None
        if whole and not number.is_integer():
            raise _not_a(expected, value)
        return number
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise wrong_type(expected, value)
    if whole and not float(value).is_integer():
        raise wrong_type(expected, value)
    return float(value)


@dataclass(frozen=True)
class Between(Checked):
    """A number from `low` to `high`; with `whole`, an integer (700.0 is 700)."""

    low: float
    high: float
    whole: bool = False

    def check(self, value: Any, info: ValidationInfo) -> float | int:
        number = read_number(value, info, whole=self.whole)
        if not self.low <= number <= self.high:  # NaN is never between
            raise problem(
                "invalid_value",
                "Invalid value for '{param}': {value}. It must be between {low} and {high}.",
                value=value,
                low=self.low,
                high=self.high,
            )
        return int(number) if self.whole else number

    def json_schema(self) -> dict[str, Any]:
        kind_ = "integer" if self.whole else "number"
        return {"type": kind_, "minimum": self.low, "maximum": self.high}


@dataclass(frozen=True)
class OneOf(Checked):
    """One of `values`."""

    values: tuple[str, ...]

    def check(self, value: Any, info: ValidationInfo) -> str:
        if not isinstance(value, str) or value not in self.values:
            raise problem(
                "invalid_value",
                "Invalid value for '{param}': {value}. Supported values are: {supported}.",
                value=repr(value),
                supported=", ".join(repr(each) for each in self.values),
            )
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.values)}


class _Flag(Checked):
    def check(self, value: Any, info: ValidationInfo) -> bool:
        if isinstance(value, bool):
            return value
        if not (isinstance(value, str) and _as_text(info)):
            raise wrong_type("a boolean", value)
        if value.lower() not in _TRUE + _FALSE:
            raise problem(
                "invalid_value",
                "Invalid value for '{param}': {value}. Send true or false.",
                value=repr(value),
            )
        return value.lower() in _TRUE

    def json_schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise wrong_type("a string", value)
    return value


def _texts(value: Any) -> list[str]:
    """An array of strings (a null entry is an empty one), stripped, the empty ones left out."""
    if not isinstance(value, list | tuple):
        raise wrong_type("an array", value)
    found = []
    for index, entry in enumerate(value):
        if entry is not None and not isinstance(entry, str):
            raise problem(
                "invalid_type", INVALID_TYPE, expected="a string", got=kind(entry), index=index
            )
        if entry and entry.strip():
            found.append(entry.strip())
    return found


def _resolve(value: str) -> Language:
    try:
        return languages.resolve(value)
    except ValueError as exc:
        raise problem("unsupported_language", str(exc)) from None


def _language(value: Any) -> Language | None:
    """A code or an English name; blank or null is none."""
    text = "" if value is None else _text(value).strip()
    return _resolve(text) if text else None


def _keywords(value: Any) -> tuple[str, ...]:
    found = _texts(value)
    if len(found) > MAX_KEYWORDS:
        raise problem(
            "invalid_value",
            "Invalid value for '{param}': {count} keywords, at most {most}.",
            count=len(found),
            most=MAX_KEYWORDS,
        )
    if any(len(keyword) > MAX_KEYWORD_CHARS for keyword in found):
        raise problem(
            "invalid_value",
            "Invalid value for '{param}': a keyword is longer than {most} characters; keywords "
            "are words or short phrases: put longer context in the prompt.",
            most=MAX_KEYWORD_CHARS,
        )
    return tuple(found)


def _languages(value: Any) -> tuple[Language, ...]:
    return tuple(dict.fromkeys(_resolve(each) for each in _texts(value)))


_STRING = {"type": "string"}
_WORDS = {"type": "array", "items": {**_STRING, "maxLength": MAX_KEYWORD_CHARS}}
Flag = Annotated[bool, _Flag()]
Text = Annotated[str, Plain(_text, _STRING)]
LanguageName = Annotated[
    Language | None,
    Plain(_language, {**_STRING, "description": "ISO-639-1 code or English name."}),
]
Keywords = Annotated[tuple[str, ...], Plain(_keywords, {**_WORDS, "maxItems": MAX_KEYWORDS})]
Languages = Annotated[
    tuple[Language, ...],
    Plain(
        _languages,
        {
            "type": "array",
            "items": _STRING,
            "description": "The languages the audio may be in; one entry forces it.",
        },
    ),
]
# OpenAI's server VAD, as Realtime turn detection and `chunking_strategy` take it
Threshold = Annotated[float, Between(0.0, 1.0)]
PrefixPaddingMs = Annotated[int, Between(0, MAX_PREFIX_PADDING_MS, whole=True)]
SilenceDurationMs = Annotated[int, Between(*SILENCE_DURATION_MS, whole=True)]


def forced_language(
    language: Language | None, listed: Iterable[Language]
) -> tuple[Language | None, tuple[Language, ...]]:
    """The language to transcribe in and the candidates the model may choose among:
    `language`, or the only one listed, is forced; several listed are the candidates."""
    listed = tuple(listed)
    if language is not None and listed and language not in listed:
        raise problem(
            "invalid_value",
            "Invalid value for '{param}': {given} is not among the languages listed "
            "({codes}): send one or the other.",
            given=repr(language.code),
            codes=", ".join(each.code for each in listed),
        )
    if language is None and len(listed) == 1:
        language = listed[0]
    return language, () if language is not None else listed


def context(prompt_text: str | None, keywords: Iterable[str], limit: int) -> str | None:
    """The model's context from a prompt and keywords; a problem if it could not fit."""
    found = prompt.context(prompt_text, tuple(keywords))
    size = len(found.encode()) if found else 0
    if size > limit:
        raise problem("context_too_long", prompt.context_too_long(size, limit))
    return found


def said(error: Problem, param: str) -> tuple[str, str]:
    """A problem's message about `param`, and its code."""
    return error.message().replace("{param}", param), error.type


def told(error: Problem, param: str) -> APIError:
    """The 400 a problem with `param` is."""
    message, code = said(error, param)
    return APIError(400, message, param=param, code=code)


def refusal(
    error: ValidationError,
    root: str = "",
    *,
    indices: bool = True,
    codes: Mapping[str, str] | None = None,
) -> tuple[str, str, str | None]:
    """The first problem of `error` as (message, code, param): `param` is the field's path
    under `root`, with list positions (`include[0]`) unless `indices` is off (a form names
    the field alone); `codes` renames codes for a front door that speaks others."""
    first = error.errors()[0]
    path = root
    at = (first.get("ctx") or {}).get("index")  # an entry of a list checked whole
    for part in (*first["loc"], *([] if at is None else [at])):
        if isinstance(part, int):
            path += f"[{part}]" if indices else ""
        else:
            path += f".{part}" if path else str(part)
    code, message = _described(first)
    code = (codes or {}).get(code, code)
    return message.replace("{param}", path), code, path or None


def api_error(error: ValidationError) -> APIError:
    """The 400 a form gets for its first problem."""
    message, code, param = refusal(error, indices=False)
    return APIError(400, message, param=param, code=code)


_SHAPES = {
    "model_type": "an object", "dict_type": "an object", "model_attributes_type": "an object",
    "list_type": "an array", "tuple_type": "an array", "set_type": "an array",
    "frozen_set_type": "an array", "string_type": "a string", "bool_type": "a boolean",
}  # fmt: skip


def _described(error: Any) -> tuple[str, str]:
    """(code, message) of one of pydantic's errors: ours, or pydantic's own about a shape."""
    code = error["type"]
    if code in _SHAPES:
        got = kind(error.get("input"))
        return "invalid_type", INVALID_TYPE.format(param="{param}", expected=_SHAPES[code], got=got)
    if code == "missing":
        return "missing_required_parameter", "Missing required parameter: '{param}'."
    if code == "extra_forbidden":
        return "unknown_parameter", "Unknown parameter: '{param}'."
    return code, str(error["msg"])
