"""How long a dead worker's replacement waits, and how its end is told."""

from __future__ import annotations

import signal

from qwen3_asr_server.serving.manager import RESPAWN_MAX, ended, respawn_pause


def test_each_death_in_a_row_doubles_the_pause_up_to_a_cap() -> None:
    assert [respawn_pause(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    assert respawn_pause(40) == RESPAWN_MAX == 30.0


def test_a_workers_end_is_said_in_words() -> None:
    assert ended(-signal.SIGKILL) == "was killed by SIGKILL"
    assert ended(3) == "exited with code 3"
