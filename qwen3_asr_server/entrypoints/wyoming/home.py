"""The names a Home Assistant home has, in the tiers they go into the context by.

Home Assistant's voice assistant (Assist) acts only on the entities exposed to it, so their
names are what a speaker says most: "turn on the *reading lamp*". The tiers, first to last:
1. each entity exposed to Assist: its name as Home Assistant shows it (`friendly_name`) and
   its aliases;
2. the areas that hold an exposed entity (the entity's own area, else its device's), and
   their floors: "the lights in the *kitchen*", "*upstairs*";
3. the other areas and floors.
Unexposed entities are left out: nothing can command them, and their names (hundreds of
sensors in a large home) would push out the ones that can be. A name comes with its aliases
(a `Group`), so that the budget (`vocabulary`) keeps or drops them together: an alias is
often the very word spoken. Within a tier the groups are sorted, so that the same home
always makes the same context, whatever order Home Assistant lists it in.

The input is what Home Assistant's websocket API answers (`hass`): `homeassistant/
expose_entity/list` (None when the token's user is not an administrator, who alone may read
it: then no entity is known to be exposed, and only areas and floors are named),
`get_states`, `config/entity_registry/get_entries` for the exposed entities,
`config/device_registry/list`, `config/area_registry/list` and `config/floor_registry/list`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Group = tuple[str, ...]  # a name and its aliases, kept or dropped together
Tier = tuple[Group, ...]
ASSISTANT = "conversation"  # Assist, as Home Assistant names it among the assistants


@dataclass(frozen=True)
class Home:
    """One reading of Home Assistant's registries, as its websocket API answered."""

    exposed: Mapping[str, Any] | None  # expose_entity/list's `exposed_entities`
    states: list[Any]
    entries: Mapping[str, Any]  # entity_id: its extended registry entry (or None)
    devices: list[Any]
    areas: list[Any]
    floors: list[Any]

    def tiers(self) -> tuple[Tier, ...]:
        """The names, highest tier first (see the module's docstring)."""
        entries = {key: _record(entry) for key, entry in self.entries.items()}
        entities = [
            entity_id
            for entity_id in exposed_to_assist(self.exposed)
            if not entries.get(entity_id, {}).get("disabled_by")
        ]
        shown = _friendly_names(self.states)
        spoken = _sorted(
            _entity(shown.get(entity_id, ""), entries.get(entity_id, {})) for entity_id in entities
        )
        device_areas = {_id(device, "id"): _id(device, "area_id") for device in self.devices}
        used = {
            entries.get(entity_id, {}).get("area_id")
            or device_areas.get(entries.get(entity_id, {}).get("device_id"))
            for entity_id in entities
        } - {None}
        floors_used = {_id(area, "floor_id") for area in self.areas if _id(area, "area_id") in used}
        places_used = _places(self.areas, "area_id", used) + _places(
            self.floors, "floor_id", floors_used - {None}
        )
        every_place = _places(self.areas, "area_id", None) + _places(self.floors, "floor_id", None)
        return (
            spoken,
            _sorted(places_used),
            _sorted(place for place in every_place if place not in places_used),
        )


def _entity(shown: str, entry: Mapping[str, Any]) -> Group:
    """An entity's name as Home Assistant shows it (else its registry's), and its aliases."""
    name = shown or _text(entry.get("name")) or _text(entry.get("original_name"))
    return _group(name, entry.get("aliases"))


def _friendly_names(states: Iterable[Any]) -> dict[str, str]:
    """Each entity's `friendly_name`, from `get_states`."""
    names: dict[str, str] = {}
    for state in states:
        name = _text(_record(_record(state).get("attributes")).get("friendly_name"))
        if name:
            names[str(_id(state, "entity_id"))] = name
    return names


def exposed_to_assist(exposed: Mapping[str, Any] | None) -> list[str]:
    """The ids of the entities exposed to Assist, sorted."""
    return sorted(
        entity_id
        for entity_id, assistants in (exposed or {}).items()
        if _record(assistants).get(ASSISTANT)
    )


def _places(records: Iterable[Any], key: str, among: set[Any] | None) -> list[Group]:
    """The name and aliases of each area (or floor) whose id is `among` (None: every one)."""
    return [
        _group(_text(_record(record).get("name")), _record(record).get("aliases"))
        for record in records
        if among is None or _id(record, key) in among
    ]


def _group(name: str, aliases: Any) -> Group:
    """A name, then its aliases, sorted; blanks left out (an alias may stand for the name:
    Home Assistant writes null for it)."""
    others = sorted({_text(alias) for alias in aliases or () if isinstance(alias, str)} - {""})
    return tuple(dict.fromkeys(each for each in (name, *others) if each))


def _sorted(groups: Iterable[Group]) -> Tier:
    """Non-empty groups in a fixed order: by name, ignoring case, then as written."""
    return tuple(sorted((group for group in groups if group), key=lambda g: (g[0].casefold(), g)))


def _text(value: Any) -> str:
    """A name with its whitespace collapsed ("" for anything that is not text)."""
    return " ".join(value.split()) if isinstance(value, str) else ""


def _record(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _id(record: Any, key: str) -> Any:
    return _record(record).get(key)
