"""A session's turns at pauses: where a transcription is started early, when it is dropped, and
how an end-of-turn judge ends a semantic_vad turn. Real speech through Silero; the worker and
the judge are fakes that record what they were given."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from qwen3_asr_server.entrypoints.realtime.protocol import SemanticVad, ServerVad, SessionConfig
from qwen3_asr_server.entrypoints.realtime.speculation import Basis, Speculation
from qwen3_asr_server.entrypoints.realtime.transcriber import Utterance
from qwen3_asr_server.entrypoints.realtime.turns import TAIL, Turns
from qwen3_asr_server.speech.audio import Audio
from qwen3_asr_server.speech.silero import SpeechModel
from tests.fixtures.speech import spoken

MODEL = SpeechModel()
# 1.5 s of speech, a 0.5 s pause, 0.8 s more, 1.5 s of silence: Silero hears the speech stop
# at these samples, and its utterance's audio start 300 ms before it
TURN = [(0.5, False), (1.5, True), (0.5, False), (0.8, True), (1.5, False)]
FIRST_STOP, LAST_STOP, START = 32256, 52736, 3904


class Worker:
    """Records what it is asked to transcribe early, and what it is told to drop."""

    def __init__(self) -> None:
        self.asked: list[Speculation] = []
        self.audio: list[int] = []
        self.dropped: list[Speculation] = []

    def speculate(self, item_id: str, spoken: Audio, start: int, end: int) -> Speculation:
        async def unsent(_: dict[str, Any]) -> None:
            raise AssertionError("a fake speculation sends nothing")

        speculation = Speculation(item_id, start, end, Basis(SessionConfig(), None), unsent)
        self.asked.append(speculation)
        self.audio.append(len(spoken.samples))
        return speculation

    def drop(self, speculation: Speculation) -> None:
        self.dropped.append(speculation)


class Judge:
    """Says the turn is done with the given probabilities, one per pause it is asked about."""

    def __init__(self, *answers: float) -> None:
        self.answers = list(answers)
        self.heard: list[int] = []

    def __call__(self, samples: npt.NDArray[np.int16], /) -> float:
        self.heard.append(len(samples))
        return self.answers.pop(0)


async def run(vad: ServerVad | SemanticVad, judge: Judge | None = None) -> tuple[Any, ...]:
    """TURN through a session's turns, in 100 ms appends: the events sent, the utterances
    handed on, and the worker."""
    sent: list[dict[str, Any]] = []
    ended: list[Utterance] = []
    worker = Worker()

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    async def end(utterance: Utterance) -> None:
        ended.append(utterance)

    turns = Turns(send, lambda: MODEL, 30_000, lambda *_: None, end, worker, judge)
    turns.configure(SessionConfig(sample_rate=16_000, turn_detection=vad))
    pcm = (spoken(TURN) * 32767).astype("<i2").tobytes()
    for at in range(0, len(pcm), 3200):
        await turns.append(pcm[at : at + 3200])
    return sent, ended, worker


async def test_each_pause_starts_a_transcription_and_the_one_the_turn_ends_at_is_handed_on() -> (
    None
):
    _, ended, worker = await run(ServerVad(silence_duration_ms=1000))
    first, last = worker.asked
    # the audio so far at each pause, as the commit would cut it: to the speech's end + TAIL
    assert (first.start, first.end) == (START, FIRST_STOP + TAIL)
    assert (last.start, last.end) == (START, LAST_STOP + TAIL)
    assert worker.audio == [FIRST_STOP + TAIL - START, LAST_STOP + TAIL - START]
    assert worker.dropped == [first]  # speech went on after the first pause
    [utterance] = ended
    assert utterance.speculation is last
    assert len(utterance.audio.samples) == LAST_STOP + TAIL - START
    assert {first.item_id, last.item_id} == {utterance.item_id}


async def test_a_judge_that_hears_the_end_ends_a_semantic_turn_at_its_pause() -> None:
    # eagerness low waits 2 s: longer than the silence after the speech
    _, ended, worker = await run(SemanticVad("low"))
    assert ended == []
    judge = Judge(0.2, 0.9)  # not done at the first pause; done at the second
    sent, ended, worker = await run(SemanticVad("low"), judge)
    [utterance] = ended
    assert len(utterance.audio.samples) == LAST_STOP + TAIL - START
    assert utterance.speculation is worker.asked[-1]  # started at that pause, used at once
    [stopped] = [e for e in sent if e["type"] == "input_audio_buffer.speech_stopped"]
    assert stopped["audio_end_ms"] == (LAST_STOP + TAIL) // 16
    # asked once per pause, with the utterance so far: its speech and the pause heard
    first, second = judge.heard
    assert FIRST_STOP + TAIL - START < first < LAST_STOP - START < second


async def test_server_vad_does_not_ask_the_judge() -> None:
    judge = Judge()  # it would fail if asked: it has no answers
    _, ended, _ = await run(ServerVad(silence_duration_ms=1000), judge)
    assert judge.heard == []
    assert len(ended) == 1
