"""Home Assistant's registries, as its websocket API answers them, into tiers of names."""

from __future__ import annotations

from qwen3_asr_server.entrypoints.wyoming.home import Home, exposed_to_assist
from tests.fixtures.home_assistant import PLACES, HomeAssistantStandIn


def _home(standin: HomeAssistantStandIn, exposed: bool = True) -> Home:
    ids = exposed_to_assist(standin.exposed)
    return Home(
        exposed=standin.exposed if exposed else None,
        states=standin.states,
        entries={entity_id: standin.entries.get(entity_id) for entity_id in ids},
        devices=standin.devices,
        areas=standin.areas,
        floors=standin.floors,
    )


def test_exposed_entities_then_their_places_then_the_other_places() -> None:
    spoken, used, others = _home(HomeAssistantStandIn()).tiers()
    # a name with its aliases (a null one stands for the name: left out), groups sorted
    assert spoken == (("Coffee Maker", "Espresso Machine"), ("Kitchen Ceiling",), ("Reading Lamp",))
    # the lamp is in the living room through its device; both areas are on the ground floor
    assert used == (("Ground Floor",), ("Kitchen",), ("Living Room", "Lounge"))
    assert others == (("Bedroom",), ("First Floor",), ("Garage",))


def test_only_entities_exposed_to_assist_count() -> None:
    assert exposed_to_assist({"a.x": {"conversation": True}, "b.y": {"cloud.alexa": True}}) == [
        "a.x"
    ]
    assert exposed_to_assist(None) == []


def test_without_the_exposed_list_only_places_are_named() -> None:
    spoken, used, others = _home(HomeAssistantStandIn(), exposed=False).tiers()
    assert spoken == used == ()
    assert [name for group in others for name in group] == PLACES


def test_disabled_entities_and_their_areas_are_left_out() -> None:
    standin = HomeAssistantStandIn()
    standin.entries["light.lamp"]["disabled_by"] = "user"
    spoken, used, _ = _home(standin).tiers()
    assert ("Reading Lamp",) not in spoken
    assert ("Living Room", "Lounge") not in used


def test_the_registry_names_an_entity_without_a_state() -> None:
    standin = HomeAssistantStandIn()
    standin.states = [s for s in standin.states if s["entity_id"] != "light.lamp"]
    standin.entries["light.lamp"]["original_name"] = "  Floor   lamp "
    spoken, _, _ = _home(standin).tiers()
    assert ("Floor lamp",) in spoken


def test_the_order_home_assistant_lists_things_in_does_not_matter() -> None:
    standin = HomeAssistantStandIn()
    before = _home(standin).tiers()
    standin.states.reverse()
    standin.areas.reverse()
    standin.floors.reverse()
    standin.exposed = dict(reversed(standin.exposed.items()))
    assert _home(standin).tiers() == before


def test_what_is_not_what_home_assistant_sends_is_skipped() -> None:
    home = Home(
        exposed={"light.x": {"conversation": True}, "light.y": "yes"},
        states=[None, {"entity_id": "light.x", "attributes": {"friendly_name": 7}}],
        entries={"light.x": {"aliases": ["Lamp", 3, None, " "], "name": None}},
        devices=[None],
        areas=[{"area_id": "a", "name": None, "aliases": None}, "area"],
        floors=[],
    )
    assert home.tiers() == ((("Lamp",),), (), ())
