"""No secret in any log line: query parameters that look like keys, and the server's own secrets.

Clients put keys where they do not belong: `/v1/realtime?intent=transcription&api_key=...` is a
common mistake (a browser cannot set headers on a WebSocket), and uvicorn prints the query
string in its WebSocket handshake lines ("... [accepted]", "... 403"). The redaction is one
pure function, `redact`, applied by a filter on the handlers every line goes through (the
root's and uvicorn's), so lines logged by uvicorn, by the app and by libraries are covered
alike, whatever their logger. It masks the value of any query parameter whose name looks like
a credential, any of the server's secrets (`--api-key`, the backend's key, the Home
Assistant token) and any ephemeral key a client holds (`ek_...`,
`entrypoints.middleware.ephemeral_keys`) wherever it appears, a request's path included.

The websockets library logs, at debug level, every header of a client handshake and every
frame: an `Authorization` header (`--backend-api-key`, to vLLM's realtime endpoint) or an
`auth` message (the Home Assistant token) would reach the log whole. The server's own
websocket clients log through `websocket_logger`, which drops those debug lines and keeps the
warnings and errors.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus, unquote_plus

MASK = "***"
# A parameter named with any of these (case-insensitive) holds a credential: api_key, apikey,
# x-api-key, key, token, access_token, id_token, client_secret, auth, authorization,
# password, passwd, pwd, credentials, sig and signature (signed URLs), session, cookie.
CREDENTIAL = re.compile(r"key|token|secret|auth|pass|pwd|credential|sig|session|cookie", re.I)
# `name=value` after `?`, `&` or `;`, the value up to the next separator, space or quote
_PARAMETER = re.compile(r"(?P<lead>[?&;])(?P<name>[^=&;?#\s\"']+)=(?P<value>[^&;#\s\"']*)")
# an ephemeral key (`entrypoints.middleware.ephemeral_keys.PREFIX`, then URL-safe base64): one of
# many, not known here
_EPHEMERAL = re.compile(r"(?<![A-Za-z0-9])ek_[A-Za-z0-9_-]{16,}")
# the loggers whose handlers every line reaches: the root's (the app's, libraries'), uvicorn's
LOGGERS = ("", "uvicorn", "uvicorn.access", "uvicorn.error")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with each of `secrets` (as it is, and percent-encoded), every ephemeral key and
    the value of each credential-like query parameter replaced by `MASK`."""
    for secret in secrets:
        if secret:
            for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
                text = text.replace(form, MASK)
    return _PARAMETER.sub(_masked, _EPHEMERAL.sub("ek_" + MASK, text))


def _masked(match: re.Match[str]) -> str:
    if match["value"] == MASK or not CREDENTIAL.search(unquote_plus(match["name"])):
        return match[0]
    return f"{match['lead']}{match['name']}={MASK}"


class Redacting(logging.Filter):
    """A handler's filter that rewrites a record's message with `redact` before it is written.

    The arguments are redacted in place, so a formatter that reads them as a tuple (uvicorn's
    access formatter does) still gets one; a record that still shows a secret once formatted
    (one hidden in an argument that is not a string) is flattened to its redacted message.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = tuple(each for each in secrets if each)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg, self.secrets)
        if isinstance(record.args, tuple):
            record.args = tuple(self._arg(each) for each in record.args)
        elif isinstance(record.args, Mapping):
            record.args = {name: self._arg(each) for name, each in record.args.items()}
        message = record.getMessage()
        clean = redact(message, self.secrets)
        if clean != message:
            record.msg, record.args = clean, None
        return True

    def _arg(self, value: object) -> object:
        return redact(value, self.secrets) if isinstance(value, str) else value


def install(secrets: Iterable[str]) -> None:
    """A `Redacting` filter on every handler of the root's and uvicorn's loggers that lacks one:
    called once logging is configured, and again once uvicorn has configured its own."""
    found = tuple(secrets)
    for name in LOGGERS:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(each, Redacting) for each in handler.filters):
                handler.addFilter(Redacting(found))


class QuietLogger(logging.LoggerAdapter[logging.Logger]):
    """websockets' client logger, without its debug lines."""

    def isEnabledFor(self, level: int) -> bool:
        return level > logging.DEBUG and super().isEnabledFor(level)


def websocket_logger() -> QuietLogger:
    return QuietLogger(logging.getLogger("websockets.client"))
