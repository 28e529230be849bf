"""A web app of another origin makes a WebRTC call as OpenAI's WebRTC guide writes it, in
headless Chromium: its backend (the test) mints an ephemeral key with the API key through the
openai SDK; the page (tests/browser/pages/webrtc.html) sends its offer with that key and the
microphone as its track, and reads the events on its `oai-events` channel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.realtime import (
    ConversationItemInputAudioTranscriptionCompletedEvent,
    SessionCreatedEvent,
)
from starlette.staticfiles import StaticFiles

from tests.fixtures.browser import Browser
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.standin import SENTENCES, StandIn

pytestmark = pytest.mark.browser

KEY = "sk-browser-webrtc"
SESSION: dict[str, Any] = {
    "type": "transcription",
    "audio": {
        "input": {
            "transcription": {"language": "en", "prompt": "Two sentences."},
            "turn_detection": {"type": "server_vad", "silence_duration_ms": 700},
        }
    },
}
TRANSCRIPTION = "conversation.item.input_audio_transcription."


@pytest.fixture
def app_site() -> Iterator[ThreadedServer]:
    """The web app's own origin, another port than the server's: its page, a static file."""
    site = ThreadedServer(StaticFiles(directory=Path(__file__).parent / "pages")).start()
    yield site
    site.stop()


def events_until_completed(browser: Browser) -> list[dict[str, Any]]:
    def completed() -> list[dict[str, Any]] | None:
        failure = browser.driver.execute_script("return window.failure")
        assert failure == "", failure
        events: list[dict[str, Any]] = browser.driver.execute_script("return window.events")
        return events if any(e["type"] == TRANSCRIPTION + "completed" for e in events) else None

    return browser.wait(completed, 30, "no transcript came on the data channel")


def test_a_page_of_another_origin_calls_with_an_ephemeral_key_and_gets_captions(
    browser: Browser, app_site: ThreadedServer
) -> None:
    server = LiveServer(StandIn(MODEL, describe=True), api_key=KEY, allowed_origins=[app_site.url])
    try:
        backend = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
        minted = backend.realtime.client_secrets.create(session=SESSION)
        browser.open(f"{app_site.url}/webrtc.html")
        browser.driver.execute_script(
            "startCall(arguments[0], arguments[1])", server.url, minted.value
        )
        events = events_until_completed(browser)
        call = browser.driver.execute_script("return window.location_of_call")
        assert call.startswith("/v1/realtime/calls/rtc_")  # a header CORS let the page read
        browser.driver.execute_script("window.hangUp()")
    finally:
        server.stop()
    assert SessionCreatedEvent.model_validate(events[0]).session.type == "transcription"
    minted = events[0]["session"]["audio"]["input"]  # the session the key was minted for
    assert minted["transcription"]["language"] == "en"
    assert minted["transcription"]["prompt"] == "Two sentences."
    assert minted["turn_detection"]["silence_duration_ms"] == 700
    kinds = [event["type"] for event in events]
    started = kinds.index("input_audio_buffer.speech_started")
    stopped = kinds.index("input_audio_buffer.speech_stopped")
    assert started < stopped < kinds.index("input_audio_buffer.committed")
    done = ConversationItemInputAudioTranscriptionCompletedEvent.model_validate(events[-1])
    assert done.item_id == events[started]["item_id"]
    assert done.transcript == SENTENCES["English"]  # the stand-in's, with English forced
    assert browser.problems() == []
