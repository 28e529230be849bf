"""Prometheus metrics: one registry per app (requests are counted in
`entrypoints.middleware.metrics`).

With `--workers N` each worker counts in prometheus-client's multiprocess mode and `/metrics`
shows the sum over the workers (gauges of what is in progress: the sum over the live ones);
the backend series come from the main process's supervisors (`serving.backend_view`).
"""

from __future__ import annotations

from typing import Literal

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from .usage import CALLER, Tally

Protocol = Literal["http", "realtime", "wyoming"]  # which API a transcription came by

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
# The backend series: (name, help), declared here for the supervisors' and the workers' views.
MODEL_READY = ("qwen3_asr_model_ready", "1 when the backend's vLLM answers, else 0.")
BACKEND_INFO = ("qwen3_asr_backend_info", "The backends in use (always 1).")
BACKEND_RESTARTS = (
    "qwen3_asr_backend_restarts",
    "Times the supervisor restarted a backend's vLLM after it exited.",
)
BACKEND_SLEEPING = ("qwen3_asr_backend_sleeping", "1 while --idle-sleep has the backend asleep.")
BACKEND_SLEEPS = ("qwen3_asr_backend_sleeps", "Times --idle-sleep put a backend to sleep.")
BACKEND_WAKES = ("qwen3_asr_backend_wakes", "Times a request woke a sleeping backend.")
BACKEND_WAKE_SECONDS = (
    "qwen3_asr_backend_wake_seconds",
    "Time the wakes took, together (over _wakes_total: the mean wake).",
)

WORKER_RESTARTS = (
    "qwen3_asr_worker_restarts",
    "Times a worker process (--workers N) died and another was started in its place.",
)


class Metrics:
    """The server's metrics, in a registry of their own so that apps never share state."""

    def __init__(self, exposed: CollectorRegistry | None = None) -> None:
        self.registry = CollectorRegistry()
        self.exposed = exposed or self.registry  # what /metrics renders
        self.usage = Tally()  # seconds of audio per key, until the jobs' store keeps them
        self.requests = Counter(
            "qwen3_asr_requests",
            "HTTP requests answered, by route template and status.",
            ["method", "path", "status"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "qwen3_asr_request_duration_seconds",
            "Time from request to the last byte of the response.",
            ["method", "path"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "qwen3_asr_requests_in_flight",
            "Requests being handled now.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self._count_backends()

    def _count_backends(self) -> None:
        """The backends, the work done with them, and the capacity in use."""
        # backend: "asr", or "aligner" for Qwen3-ForcedAligner's vLLM (word timestamps)
        self.model_ready = Gauge(*MODEL_READY, ["backend"], registry=self.registry)
        self.backend_info = Gauge(
            *BACKEND_INFO, ["backend", "device", "model_id"], registry=self.registry
        )
        self.backend_restarts = Counter(*BACKEND_RESTARTS, ["backend"], registry=self.registry)
        self._count_sleep()
        self._count_work()
        self._count_alignments()
        self._count_turns()
        self._count_capacity()
        self._count_jobs()

    def _count_sleep(self) -> None:
        """--idle-sleep: the supervisors' sleeps and wakes, and what requests waited for them."""
        self.backend_sleeping = Gauge(*BACKEND_SLEEPING, ["backend"], registry=self.registry)
        self.backend_sleeps = Counter(*BACKEND_SLEEPS, ["backend"], registry=self.registry)
        self.backend_wakes = Counter(*BACKEND_WAKES, ["backend"], registry=self.registry)
        self.backend_wake_seconds = Counter(
            *BACKEND_WAKE_SECONDS, ["backend"], registry=self.registry
        )
        self.wake_waits = Histogram(
            "qwen3_asr_wake_wait_seconds",
            "Time a request waited for its sleeping backend to wake (part of its latency).",
            ["backend"],
            buckets=_BUCKETS,
            registry=self.registry,
        )

    def _count_jobs(self) -> None:
        """Batch lines: how this server's ended, and the queue all servers share."""
        # outcome: completed, failed (an error answer), retried (the engine was away or full)
        self.batch_lines = Counter(
            "qwen3_asr_batch_lines",
            "Batch lines this server ran, by outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self.batch_queue = Gauge(
            "qwen3_asr_batch_queue",
            "Lines of batches in progress, queued or running, on every server of the queue.",
            ["state"],
            registry=self.registry,
            multiprocess_mode="max",
        )

    def _count_work(self) -> None:
        """Pieces, transcriptions, their audio and tokens, by front door."""
        self.pieces_retried = Counter(
            "qwen3_asr_pieces_retried",
            "Pieces of a recording sent to vLLM again after it went away (a restart).",
            registry=self.registry,
        )
        self.pieces_planned = Counter(
            "qwen3_asr_pieces_planned",
            "Pieces the recordings were cut into, to go to vLLM.",
            registry=self.registry,
        )
        self.pieces_done = Counter(
            "qwen3_asr_pieces_done",
            "Pieces of a recording transcribed (those planned, less those failed or left).",
            registry=self.registry,
        )
        # protocol: "http" (uploads), "realtime" (utterances), "wyoming" (commands)
        self.transcriptions = Counter(
            "qwen3_asr_transcriptions",
            "Transcriptions finished: uploads, Realtime utterances and Wyoming commands.",
            ["protocol"],
            registry=self.registry,
        )
        self.audio_seconds = Counter(
            "qwen3_asr_audio_seconds",
            "Seconds of audio transcribed.",
            ["protocol"],
            registry=self.registry,
        )
        # by key: the names of --api-key ("default") and --keys-file only, a bounded set
        self.key_requests = Counter(
            "qwen3_asr_key_requests",
            "HTTP requests answered for a key, by its name.",
            ["key"],
            registry=self.registry,
        )
        self.key_audio_seconds = Counter(
            "qwen3_asr_key_audio_seconds",
            "Seconds of audio transcribed for a key (its batch lines and sessions included).",
            ["key"],
            registry=self.registry,
        )
        self.tokens = Counter(
            "qwen3_asr_tokens",
            "Tokens the model read (kind=prompt, audio included) and wrote (kind=completion).",
            ["kind", "protocol"],
            registry=self.registry,
        )
        self.webhooks_sent = Counter(
            "qwen3_asr_webhooks_sent",
            "Batch webhook attempts, by outcome: delivered (a 2xx answer) or failed (retried).",
            ["outcome"],
            registry=self.registry,
        )

    def _count_alignments(self) -> None:
        """POST /v1/audio/alignments: apart from the transcriptions, which they are not (a long
        recording's pieces are transcribed, but only to share the text among them)."""
        self.alignments = Counter(
            "qwen3_asr_alignments", "Alignments answered.", registry=self.registry
        )
        self.alignment_seconds = Counter(
            "qwen3_asr_alignment_audio_seconds",
            "Seconds of audio aligned with a given text.",
            registry=self.registry,
        )
        # how well texts matched their audio: a mass below 1 is texts the aligner disagreed with
        self.alignment_placed = Histogram(
            "qwen3_asr_alignment_placed",
            "Share of each alignment's words the aligner placed in order (its `placed`).",
            buckets=(0.5, 0.8, 0.9, 0.95, 0.99, 1.0),
            registry=self.registry,
        )

    def _count_turns(self) -> None:
        """How Realtime turns ended: transcribed early at a pause, judged by a model."""
        # started at a pause inside an utterance; kept as its transcription; dropped (the turn
        # went on, or the session changed): dropped / transcriptions is the share transcribed
        # twice
        self.realtime_speculations = Counter(
            "qwen3_asr_realtime_speculations",
            "Realtime utterances transcribed at a pause before their turn ended, by outcome: "
            "started, kept (the turn ended there) or dropped (it went on; cancelled).",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in ("started", "kept", "dropped"):
            self.realtime_speculations.labels(outcome=outcome)
        self.turn_judgements = Counter(
            "qwen3_asr_realtime_turn_judgements",
            "Pauses in semantic_vad turns judged by the end-of-turn model (--smart-turn), by "
            "verdict: complete (the turn ended there) or incomplete (it waited on).",
            ["verdict"],
            registry=self.registry,
        )
        for verdict in ("complete", "incomplete"):
            self.turn_judgements.labels(verdict=verdict)

    def _count_capacity(self) -> None:
        """What is open, in flight, waiting and held now; what was turned away."""
        self.realtime_sessions = Gauge(
            "qwen3_asr_realtime_sessions",
            "Realtime transcription sessions open now.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        # A Wyoming command's audio and tokens are counted with the others (`transcribed`);
        # this says how each ended: ok, invalid, busy, failed, gone (the client left)
        self.wyoming_commands = Counter(
            "qwen3_asr_wyoming_commands",
            "Wyoming transcribe commands (--wyoming-port), by how they ended.",
            ["outcome"],
            registry=self.registry,
        )
        self.wyoming_connections = Gauge(
            "qwen3_asr_wyoming_connections",
            "Wyoming connections open now (at most --wyoming-max-connections).",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.upstream_in_flight = Gauge(
            "qwen3_asr_upstream_in_flight",
            "Requests to vLLM in flight (at most --max-concurrent).",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.queue_depth = Gauge(
            "qwen3_asr_queue_depth",
            "Requests waiting for a free slot to vLLM.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.audio_reserved = Gauge(
            "qwen3_asr_audio_reserved_seconds",
            "Seconds of decoded audio held by requests now (at most --audio-budget-seconds).",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.rejected = Counter(
            "qwen3_asr_rejected",
            "Requests answered 429: the queue was full, no slot came free in time, their "
            "audio found no room in --audio-budget-seconds in time, (session_limit) a "
            "Realtime handshake found --max-sessions open, or (wyoming_connection_limit) a "
            "Wyoming connection found --wyoming-max-connections open and was closed; "
            "(rate_limit, key_session_limit) a key past its requests_per_minute or "
            "max_sessions.",
            ["reason"],
            registry=self.registry,
        )
        self.trace_spans_dropped = Counter(
            "qwen3_asr_trace_spans_dropped",
            "Spans of traces (--otlp-traces-endpoint) that could not be sent to the collector "
            "and were dropped.",
            registry=self.registry,
        )

    def transcribed(self, seconds: float, read: int, written: int, protocol: Protocol) -> None:
        """Count one finished transcription: an upload's, a Realtime utterance's or a Wyoming
        command's, its audio and the tokens the model read and wrote; its audio tallied for
        its caller's usage."""
        self.transcriptions.labels(protocol=protocol).inc()
        self.audio_seconds.labels(protocol=protocol).inc(seconds)
        caller = CALLER.get()
        if caller is not None and caller.key is not None:
            self.key_audio_seconds.labels(key=caller.key).inc(seconds)
        self.usage.add(seconds, caller)
        self.tokens.labels(kind="prompt", protocol=protocol).inc(read)
        self.tokens.labels(kind="completion", protocol=protocol).inc(written)

    def aligned(self, seconds: float, placed: float) -> None:
        """Count one answered alignment: its audio, and the share of its words placed."""
        self.alignments.inc()
        self.alignment_seconds.inc(seconds)
        self.alignment_placed.observe(placed)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.exposed), CONTENT_TYPE_LATEST
