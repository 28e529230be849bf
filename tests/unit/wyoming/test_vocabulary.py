"""The context of Wyoming commands: the prompt, the keywords, then names under the budget."""

from __future__ import annotations

import logging

import pytest

from qwen3_asr_server.entrypoints.wyoming.home import Tier
from qwen3_asr_server.entrypoints.wyoming.vocabulary import (
    Vocabulary,
    cut,
    distinct,
    estimate_tokens,
)
from qwen3_asr_server.settings.composite import Settings

TIERS: tuple[Tier, ...] = (
    (("Coffee Maker", "Espresso Machine"), ("Reading Lamp",)),
    (("Kitchen",), ("Living Room", "Lounge")),
    (("Garage",),),
)


def _vocabulary(limit: int = 3000, **settings: object) -> Vocabulary:
    return Vocabulary(Settings(**settings), limit)  # type: ignore[arg-type]


def test_a_name_is_taken_once_whatever_its_case_and_spacing() -> None:
    tiers: tuple[Tier, ...] = (
        (("Kitchen Light", "kitchen  light"),),
        (("KITCHEN LIGHT", "Pantry"), ("Ecobee",)),
    )
    assert distinct(tiers, taken=["ecobee"]) == [["Kitchen Light"], ["Pantry"]]


def test_control_tokens_are_cleaned_from_names() -> None:
    tiers: tuple[Tier, ...] = ((("Lamp<|im_end|>", "<|im_start|>"),),)
    assert distinct(tiers, taken=[]) == [["Lamp"]]


def test_the_cut_keeps_whole_groups_and_stops_at_the_first_that_does_not_fit() -> None:
    groups = [["Coffee Maker", "Espresso Machine"], ["Reading Lamp"], ["Attic"]]
    # 14 + 18 bytes for the first group, 14 for the second, 7 for the third
    assert cut(groups, 46) == ["Coffee Maker", "Espresso Machine", "Reading Lamp"]
    assert cut(groups, 45) == ["Coffee Maker", "Espresso Machine"]  # not "Attic" past it
    assert cut(groups, 31) == []
    assert cut(groups, 1000) == ["Coffee Maker", "Espresso Machine", "Reading Lamp", "Attic"]


def test_tokens_are_estimated_at_three_bytes() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("Lamp") == 2
    assert estimate_tokens("客厅灯") == 3  # 9 bytes


def test_the_prompt_and_keywords_come_first_then_the_names_by_tier() -> None:
    vocabulary = _vocabulary(wyoming_prompt="A home.", wyoming_keywords=["Ecobee", "garage"])
    assert vocabulary.context == "A home.\nEcobee, garage"
    vocabulary.update(TIERS)
    assert vocabulary.context == (
        "A home.\nEcobee, garage, Coffee Maker, Espresso Machine, Reading Lamp, Kitchen, "
        "Living Room, Lounge"
    )


def test_names_alone_are_the_context() -> None:
    vocabulary = _vocabulary()
    assert vocabulary.context is None
    vocabulary.update(TIERS)
    assert vocabulary.context is not None
    assert vocabulary.context.startswith("Coffee Maker, Espresso Machine, Reading Lamp")


def test_the_budget_in_tokens_drops_the_last_tiers(caplog: pytest.LogCaptureFixture) -> None:
    vocabulary = _vocabulary(hass_max_tokens=16)  # 48 bytes: the first tier only
    with caplog.at_level(logging.INFO):
        vocabulary.update(TIERS)
    assert vocabulary.context == "Coffee Maker, Espresso Machine, Reading Lamp"
    assert "3 names in the context" in caplog.text
    assert "4 more left out past --hass-max-tokens 16" in caplog.text


def test_the_context_stays_within_what_fits_beside_the_audio() -> None:
    vocabulary = _vocabulary(limit=40, wyoming_prompt="A home.")  # 31 bytes left for names
    vocabulary.update(TIERS)
    assert vocabulary.context == "A home."
    assert len(vocabulary.context.encode()) <= 40


def test_the_same_names_make_the_same_context_and_are_not_logged_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    vocabulary = _vocabulary()
    vocabulary.update(TIERS)
    first = vocabulary.context
    with caplog.at_level(logging.INFO):
        vocabulary.update(TIERS)
    assert vocabulary.context == first
    assert caplog.text == ""
