"""Silero's windows of every live stream in the process, scored together.

Realtime sessions, WebRTC calls and Wyoming commands each hand Silero a few 32 ms windows per
append, and ONNX Runtime costs about 143 us a window run one at a time against about 70 us a
window in a batch of dozens (`silero`). So a stream's windows are not scored where they arrive:
it hands them, with its recurrent state, to the process's `Batches` and waits. One batch runs
at a time, in a thread of its own (ONNX Runtime releases the GIL: the event loop goes on);
the windows handed in while it runs are the next batch. Batches grow with the load by
themselves, and a stream alone waits for nothing but its own windows. A stream with several
windows takes a row of the batch at each step, its state carried from step to step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Windows = npt.NDArray[np.float32]  # rows of CONTEXT + WINDOW samples, scaled to -1..1
State = npt.NDArray[np.float32]  # Silero's recurrent state: (2, streams, 128)
Probabilities = npt.NDArray[np.float32]
Step = Callable[[Windows, State], tuple[Probabilities, State]]
Scored = tuple[list[float], State]


@dataclass(frozen=True)
class _Job:
    windows: Windows
    state: State
    done: asyncio.Future[Scored]


def scored(step: Step, windows: list[Windows], states: list[State]) -> list[Scored]:
    """Streams' windows (each stream's in order) and states run through `step` side by side:
    per stream, each window's speech probability and the state after its last. The streams
    with more windows go first, so that those still running at each step are a prefix."""
    order = sorted(range(len(windows)), key=lambda index: -len(windows[index]))
    ranked = [windows[index] for index in order]
    state = np.concatenate([states[index] for index in order], axis=1)
    found: list[list[float]] = [[] for _ in order]
    for at in range(len(ranked[0]) if ranked else 0):
        running = sum(1 for each in ranked if len(each) > at)
        rows = np.stack([each[at] for each in ranked[:running]])
        output, after = step(rows, np.ascontiguousarray(state[:, :running]))
        state[:, :running] = after
        for column in range(running):
            found[column].append(float(output[column]))
    results: list[Scored] = [([], states[index]) for index in range(len(windows))]
    for column, index in enumerate(order):
        results[index] = (found[column], state[:, column : column + 1].copy())
    return results


class Batches:
    """Where a process's streams hand in their windows (`score`); see the module."""

    def __init__(self, step: Step) -> None:
        self._step = step
        self._waiting: list[_Job] = []
        self._running = False
        self._loop: asyncio.AbstractEventLoop | None = None  # whose streams wait
        # a thread of its own: a batch never waits behind the loop's other work in threads
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vad-batches")

    async def score(self, windows: Windows, state: State) -> Scored:
        """The speech probability of each of a stream's `windows`, and its state after them,
        once a batch has run them."""
        if not len(windows):
            return [], state
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a loop before this one ended: its batches with it
            self._loop, self._waiting, self._running = loop, [], False
        job = _Job(windows, state, loop.create_future())
        self._waiting.append(job)
        if not self._running:
            self._run(loop)
        return await job.done

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        jobs, self._waiting = self._waiting, []
        self._running = True
        ran = loop.run_in_executor(
            self._thread,
            scored,
            self._step,
            [job.windows for job in jobs],
            [job.state for job in jobs],
        )
        ran.add_done_callback(lambda done: self._ran(loop, jobs, done))

    def _ran(
        self,
        loop: asyncio.AbstractEventLoop,
        jobs: list[_Job],
        ran: asyncio.Future[list[Scored]],
    ) -> None:
        if loop is not self._loop:  # the batches started afresh on another loop since
            return
        self._running = False
        error = asyncio.CancelledError() if ran.cancelled() else ran.exception()
        results = ran.result() if error is None else []
        for index, job in enumerate(jobs):
            if job.done.done():  # its stream stopped waiting (a session closed)
                continue
            if error is not None:
                job.done.set_exception(error)
            else:
                job.done.set_result(results[index])
        if self._waiting:
            self._run(loop)
