"""The context of every Wyoming command: `--wyoming-prompt`, `--wyoming-keywords`, then Home
Assistant's names (`home`), as many as fit the budget (`--hass-max-tokens`).

The context is built by `prompt.context`, as the HTTP API's `prompt` and `keywords` are: the
prompt, then the keywords and the names as one comma-separated list, cleaned of control
tokens. The names are taken tier by tier, each group (a name and its aliases) whole, and each
name once: a name already taken, a keyword's or a higher tier's, is not paid for twice (case
and spacing aside). They stop at the first group that would pass the budget, so a lower tier
never takes the place of a higher one.

The budget is in tokens of the served model, estimated: the server does not hold the model's
tokenizer (vLLM does), so a token is counted as 3 bytes of UTF-8. That is an assumption, not a
measurement against Qwen's tokenizer: whole words of Latin script usually take more bytes a
token in a vocabulary of Qwen's size (151k), so it should err high, fitting fewer names than
the budget could hold. What bounds the context for certain is its size in bytes: it stays
within what fits beside the audio (`prompt.context_limit`, one token at most per byte), as
the HTTP API's does.

Prefix caching: the context is the system turn, the start of every command's prompt, and
vLLM keeps a prompt's computed start for the next prompt that begins the same way
(`--enable-prefix-caching`, on by default). So the context is made stable: built once per
change of Home Assistant's names (not per command), in a fixed order (tiers, then sorted
groups, see `home`), so that every command begins with the same tokens and the biasing costs
its computation only on the first command after a change.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from ...model import prompt
from ...settings.wyoming import WyomingSettings
from .home import Tier

logger = logging.getLogger(__name__)

BYTES_PER_TOKEN = 3  # the estimate: see the module's docstring
SEPARATOR = ", "  # between keywords (`prompt.context`), and so between names


def estimate_tokens(text: str) -> int:
    """Tokens `text` is counted as against the budget."""
    return -(-len(text.encode()) // BYTES_PER_TOKEN)


def key(name: str) -> str:
    """What two spellings of one name share: the same name to the model."""
    return " ".join(name.casefold().split())


def distinct(tiers: Iterable[Tier], taken: Iterable[str]) -> list[list[str]]:
    """Each group's names, in order, cleaned of control tokens, without those taken before it
    (`taken`, or an earlier group's); groups left with no name are dropped."""
    seen = {key(word) for word in taken}
    groups: list[list[str]] = []
    for tier in tiers:
        for group in tier:
            names = []
            for name in map(prompt.sanitize_context, group):
                if name and key(name) not in seen:
                    seen.add(key(name))
                    names.append(name)
            if names:
                groups.append(names)
    return groups


def cut(groups: Sequence[Sequence[str]], budget: int) -> list[str]:
    """The names of the first groups whose UTF-8 bytes, each name with its separator, stay
    within `budget`."""
    chosen: list[str] = []
    size = 0
    for group in groups:
        size += sum(len(name.encode()) + len(SEPARATOR) for name in group)
        if size > budget:
            break
        chosen.extend(group)
    return chosen


class Vocabulary:
    """The context Wyoming commands are transcribed with, as of Home Assistant's last names.

    `context` is read by every command; `update` replaces it when the names change, so a
    command never waits for Home Assistant."""

    def __init__(self, settings: WyomingSettings, limit: int) -> None:
        self.prompt = settings.wyoming_prompt
        self.keywords = tuple(settings.wyoming_keywords)
        self.max_tokens = settings.hass_max_tokens
        self.context = prompt.context(self.prompt, self.keywords)
        fixed = len((self.context or "").encode()) + len(SEPARATOR)
        # UTF-8 bytes the names may take: the budget, and the room `limit` leaves
        self.budget = max(0, min(self.max_tokens * BYTES_PER_TOKEN, limit - fixed))

    def update(self, tiers: Iterable[Tier]) -> None:
        """The context with these names, logged when it changes."""
        groups = distinct(tiers, self.keywords)
        chosen = cut(groups, self.budget)
        context = prompt.context(self.prompt, [*self.keywords, *chosen])
        if context == self.context:
            return
        self.context = context
        left_out = sum(map(len, groups)) - len(chosen)
        logger.info(
            "Home Assistant: %d names in the context of Wyoming commands (about %d tokens)%s",
            len(chosen),
            estimate_tokens(SEPARATOR.join(chosen)),
            f", {left_out} more left out past --hass-max-tokens {self.max_tokens}"
            if left_out
            else "",
        )
