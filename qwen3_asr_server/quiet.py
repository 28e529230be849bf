"""The logger of a websocket client connection that carries a secret.

websockets logs, at debug level, every header of the handshake and every frame: with
`--log-level debug` an `Authorization` header (`--backend-api-key`, to vLLM's realtime
endpoint) or an `auth` message (the Home Assistant token) would reach the log. Its warnings
and errors still do.
"""

from __future__ import annotations

import logging


class QuietLogger(logging.LoggerAdapter[logging.Logger]):
    """websockets' client logger, without its debug lines."""

    def isEnabledFor(self, level: int) -> bool:
        return level > logging.DEBUG and super().isEnabledFor(level)


def websocket_logger() -> QuietLogger:
    return QuietLogger(logging.getLogger("websockets.client"))
