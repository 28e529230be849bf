"""The shared field types, checked once for every request family: what each takes, what it
refuses, and how the front door names the field in the error."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ValidationError

from qwen3_asr_server.entrypoints.protocol import fields
from qwen3_asr_server.entrypoints.protocol.fields import (
    Between,
    Flag,
    Keywords,
    LanguageName,
    Languages,
    OneOf,
    SilenceDurationMs,
    Threshold,
)
from qwen3_asr_server.model import languages


class Inner(BaseModel):
    threshold: Threshold | None = None
    silence: SilenceDurationMs | None = None
    kinds: tuple[Annotated[str, OneOf(("a", "b"))], ...] = ()


class Outer(BaseModel):
    inner: Inner | None = None
    flag: Flag = False
    keywords: Keywords = ()
    languages: Languages = ()
    language: LanguageName = None
    ratio: Annotated[float, Between(0.0, 2.0)] = 1.0


def problem_of(values: dict[str, Any], *, text: bool = False, **refusal: Any) -> tuple:
    with pytest.raises(ValidationError) as caught:
        Outer.model_validate(values, context={fields.TEXT: True} if text else None)
    return fields.refusal(caught.value, **refusal)


def test_json_numbers_must_be_numbers_and_form_text_may_spell_them() -> None:
    assert Outer.model_validate({"inner": {"threshold": 0.25}}).inner == Inner(threshold=0.25)
    message, code, param = problem_of({"inner": {"threshold": "0.25"}}, root="session")
    assert (code, param) == ("invalid_type", "session.inner.threshold")
    assert message == (
        "Invalid type for 'session.inner.threshold': expected a number, but got a string instead."
    )
    parsed = Outer.model_validate({"ratio": "1.5", "flag": "True"}, context={fields.TEXT: True})
    assert (parsed.ratio, parsed.flag) == (1.5, True)
    message, code, param = problem_of({"ratio": "lots"}, text=True)
    assert (code, param) == ("invalid_value", "ratio")
    assert "'lots' is not a number" in message


@pytest.mark.parametrize(
    ("value", "code"),
    [(True, "invalid_type"), (2.5, "invalid_value"), (-0.1, "invalid_value"), ([], "invalid_type")],
)
def test_bounds_and_types_of_a_number(value: Any, code: str) -> None:
    assert problem_of({"ratio": value})[1:] == (code, "ratio")


def test_whole_numbers_take_integral_floats_and_refuse_the_rest() -> None:
    assert Outer.model_validate({"inner": {"silence": 700.0}}).inner == Inner(silence=700)
    assert problem_of({"inner": {"silence": 700.5}})[1:] == ("invalid_type", "inner.silence")
    assert problem_of({"inner": {"silence": 50}})[1:] == ("invalid_value", "inner.silence")
    message = problem_of({"inner": {"silence": 50}})[0]
    assert message == "Invalid value for 'inner.silence': 50. It must be between 100 and 10000."


def test_list_positions_are_named_unless_the_front_door_names_the_field_alone() -> None:
    values = {"inner": {"kinds": ["a", "c"]}}
    assert problem_of(values)[1:] == ("invalid_value", "inner.kinds[1]")
    assert problem_of(values, indices=False)[1:] == ("invalid_value", "inner.kinds")
    entries = {"keywords": ["fine", 7]}  # checked as one list: the entry is named all the same
    assert problem_of(entries)[1:] == ("invalid_type", "keywords[1]")
    assert problem_of(entries, indices=False)[1:] == ("invalid_type", "keywords")


def test_shapes_pydantic_checks_itself_are_said_as_openai_says_them() -> None:
    message, code, param = problem_of({"inner": []}, root="session")
    assert (code, param) == ("invalid_type", "session.inner")
    assert message.endswith("expected an object, but got an array instead.")


def test_keywords_are_stripped_and_bounded() -> None:
    parsed = Outer.model_validate({"keywords": [" Qwen ", "", None, "vLLM"]})
    assert parsed.keywords == ("Qwen", "vLLM")
    assert problem_of({"keywords": ["k"] * 101})[1:] == ("invalid_value", "keywords")
    assert problem_of({"keywords": ["x" * 101]})[1:] == ("invalid_value", "keywords")
    assert problem_of({"keywords": "Qwen"})[1:] == ("invalid_type", "keywords")


def test_languages_are_typed_deduplicated_and_refused_by_name() -> None:
    parsed = Outer.model_validate({"languages": ["fr", "French", "de"], "language": "EN"})
    assert parsed.languages == (languages.resolve("fr"), languages.resolve("de"))
    assert parsed.language == languages.resolve("en")
    assert Outer.model_validate({"language": "  "}).language is None
    message, code, param = problem_of({"languages": ["fr", "xx"]})
    assert (code, param) == ("unsupported_language", "languages")
    assert "'xx'" in message
    renamed = problem_of({"language": "xx"}, codes={"unsupported_language": "invalid_value"})
    assert renamed[1:] == ("invalid_value", "language")


def test_the_forced_language_and_the_candidates() -> None:
    fr, de = languages.resolve("fr"), languages.resolve("de")
    assert fields.forced_language(None, [fr]) == (fr, ())
    assert fields.forced_language(None, [fr, de]) == (None, (fr, de))
    assert fields.forced_language(de, [fr, de]) == (de, ())
    with pytest.raises(fields.Problem) as caught:
        fields.forced_language(languages.resolve("en"), [fr, de])
    message, code = fields.said(caught.value, "language")
    assert code == "invalid_value"
    assert message.startswith("Invalid value for 'language': 'en' is not among")


def test_context_that_cannot_fit_is_a_problem() -> None:
    assert fields.context("A talk.", ["Qwen", "vLLM"], 100) == "A talk.\nQwen, vLLM"
    assert fields.context(None, [], 0) is None
    with pytest.raises(fields.Problem) as caught:
        fields.context("é" * 60, [], 100)
    assert caught.value.type == "context_too_long"
    error = fields.told(caught.value, "prompt")
    assert (error.status, error.param, error.code) == (400, "prompt", "context_too_long")
