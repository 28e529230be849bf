from __future__ import annotations

import pytest

from qwen3_asr_server.model import languages

CODES = (
    "zh en yue ar de fr es pt id it ko ru th vi ja tr hi ms nl sv da fi pl cs fil fa el hu mk ro"
)


def test_the_thirty_qwen3_asr_languages() -> None:
    assert [lang.code for lang in languages.SUPPORTED] == CODES.split()
    assert len({lang.name for lang in languages.SUPPORTED}) == 30


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("fr", "French"),
        ("FR", "French"),
        ("French", "French"),
        ("french", "French"),
        (" en ", "English"),
        ("yue", "Cantonese"),
        ("Filipino", "Filipino"),
        ("ZH", "Chinese"),
    ],
)
def test_resolve_codes_and_names_in_any_case(value: str, name: str) -> None:
    assert languages.resolve(value).name == name


@pytest.mark.parametrize("value", ["klingon", "", "eng", "english!", "tl", "he"])
def test_unsupported_languages_are_refused(value: str) -> None:
    with pytest.raises(ValueError, match="Unsupported language"):
        languages.resolve(value)
