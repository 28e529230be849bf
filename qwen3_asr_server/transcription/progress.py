"""How far one request's transcription has come: pieces done of pieces planned.

A long json upload answers only at its end, minutes later; its progress goes to the metrics
(`qwen3_asr_pieces_planned_total`, `qwen3_asr_pieces_done_total`) and, for a request of
many pieces, to the log at each tenth. A stream tells its client too, in SSE comments
(`: progress 3/40`), which OpenAI's SDKs and browsers' `EventSource` skip as the SSE
standard says they must.
"""

from __future__ import annotations

import logging

from ..observability.metrics import Metrics

logger = logging.getLogger("qwen3_asr_server.progress")

LOGGED = 10  # pieces a request needs for its progress to be logged


class Progress:
    """One request's pieces, counted as each is transcribed."""

    def __init__(self, metrics: Metrics, request_id: str, planned: int, seconds: float) -> None:
        self.metrics = metrics
        self.request_id = request_id
        self.planned = planned
        self.done = 0
        # Whether the backend has answered any of this request (a piece, or a stream's first
        # text): from then on a backend that goes away would cost work, so pieces wait for it
        # (`Upstream.persist`, bounded by --backend-wait); before, they fail at once.
        self.answered = False
        metrics.pieces_planned.inc(planned)
        if planned >= LOGGED:
            logger.info(
                "request_id=%s pieces planned=%d audio_seconds=%.1f", request_id, planned, seconds
            )

    def at_stake(self) -> bool:
        """Whether the backend going away now would cost this request work it has."""
        return self.answered

    def heard(self) -> None:
        """Some of a piece's answer has come (a stream's text, before its piece is done)."""
        self.answered = True

    def piece_done(self) -> None:
        self.answered = True
        self.done += 1
        self.metrics.pieces_done.inc()
        tenth = self.done * 10 // self.planned
        if self.planned >= LOGGED and tenth > (self.done - 1) * 10 // self.planned:
            logger.info(
                "request_id=%s pieces done=%d of %d", self.request_id, self.done, self.planned
            )

    def comment(self) -> str:
        """The SSE comment a stream sends after each piece."""
        return comment(self.done, self.planned)


def comment(done: int, planned: int) -> str:
    """A stream's progress as an SSE comment: pieces done of pieces planned."""
    return f": progress {done}/{planned}\n\n"
