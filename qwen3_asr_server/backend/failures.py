"""What a failure to talk to a backend means for the client, said the same way for each.

A backend that did not answer in time is a 504; one that cannot be reached (refused, reset,
gone mid-answer) is a 503 with `Retry-After`, since the supervisor restarts it; one that
answered what it should not have is a 502. The second kind is typed (`BackendGone`): the same
request may well succeed once the backend is back, so a piece of a long recording waits for
that rather than losing the whole file (`backend.upstream.Upstream.persist`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import aiohttp

from ..errors import RETRY_AFTER_SECONDS, APIError

SPEECH_BACKEND = "The speech backend"  # the ASR model's vLLM, as messages name it


@contextlib.contextmanager
def reaching(backend: str, timeout: float) -> Iterator[None]:
    """Around one request to `backend` ("The speech backend"): its transport failures raised
    as the APIError the client gets."""
    try:
        yield
    except TimeoutError as exc:  # aiohttp's ServerTimeoutError is one too
        raise APIError(
            504, f"{backend} did not answer within {timeout:.0f} s.", code="backend_timeout"
        ) from exc
    except aiohttp.ClientError as exc:
        raise unreachable(backend) from exc


class BackendGone(APIError):
    """The backend went away, or is not serving now (refused, reset, restarting): a 503 with
    `Retry-After`, as `errors.unavailable`, that says nothing against the request itself."""

    def __init__(self, message: str) -> None:
        super().__init__(
            503,
            message,
            code="backend_unavailable",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )


def unreachable(backend: str) -> BackendGone:
    return BackendGone(f"{backend} is not reachable; retry shortly.")


def failed(backend: str, reason: str) -> APIError:
    """`backend` answered, but not as it should: `reason` says how."""
    return APIError(502, f"{backend} failed: {reason}", code="backend_error")
