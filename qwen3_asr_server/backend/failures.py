"""What a failure to talk to a backend means for the client, said the same way for each.

A backend that did not answer in time is a 504; one that cannot be reached (refused, reset,
gone mid-answer) is a 503 with `Retry-After`, since the supervisor restarts it; one that
answered what it should not have is a 502.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import aiohttp

from ..errors import APIError, unavailable

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


def unreachable(backend: str) -> APIError:
    return unavailable(f"{backend} is not reachable; retry shortly.")


def failed(backend: str, reason: str) -> APIError:
    """`backend` answered, but not as it should: `reason` says how."""
    return APIError(502, f"{backend} failed: {reason}", code="backend_error")
