"""The playground at / in headless Chromium, against the server in front of the stand-in vLLM:
what a person sees and gets, checked against what the API answers for the same input."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select

from qwen3_asr_server.model.catalog import DIARIZE
from tests.fixtures.browser import Browser
from tests.fixtures.containers import encode
from tests.fixtures.conversations import conversation
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import speech_wav, spoken
from tests.fixtures.standin import SENTENCES, StandIn
from tests.fixtures.standin_aligner import StandInAligner

pytestmark = pytest.mark.browser

# 48 s: three phrases, the last longer than the model's window
TALK = encode(
    spoken([(0.5, False), (6, True), (1, False), (5, True), (1, False), (35, True), (0.5, False)]),
    16000,
    "wav",
)
KEY = "sesame"


def clock(seconds: float) -> str:
    """The page's way of writing a time: minutes:seconds to a tenth."""
    minutes = int(seconds // 60)
    return f"{minutes}:{seconds - minutes * 60:04.1f}"


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("files") / "talk.wav"
    path.write_bytes(TALK)
    return path


@pytest.fixture
def server() -> Iterator[LiveServer]:
    live = LiveServer(StandIn(MODEL, describe=True))
    yield live
    live.stop()


def ready(browser: Browser) -> None:
    browser.wait(lambda: browser.text("#status").startswith("Ready"), message="never Ready")


def only_this_server(browser: Browser, server: LiveServer) -> list[str]:
    """Every URL the page asked for is the server's own, the file played from memory or data
    (the icons of Chromium's own audio controls), and nothing was logged as a warning or an
    error."""
    urls = browser.requested()
    own = (f"{server.url}/", f"ws{server.url.removeprefix('http')}/", f"blob:{server.url}/")
    own += ("data:",)
    assert [url for url in urls if not url.startswith(own)] == []
    assert browser.problems() == []
    return urls


def api(server: LiveServer, path: Path, **form: Any) -> httpx.Response:
    files = {"file": (path.name, path.read_bytes())}
    response = httpx.post(
        f"{server.url}/v1/audio/transcriptions", files=files, data=form, timeout=30
    )
    assert response.status_code == 200, response.text
    return response


def test_a_file_streams_in_then_its_segments_and_srt_match_the_api(
    browser: Browser, server: LiveServer, talk: Path
) -> None:
    browser.open(server.url)
    ready(browser)
    browser.find("#file").send_keys(str(talk))
    browser.find("#transcribe").click()
    items = browser.wait(lambda: browser.all("#segments li"), message="no segments appeared")
    assert any(request.get("stream") for request in server.standin.requests)  # streamed in
    assert browser.text("#transcript") == api(server, talk).json()["text"]
    verbose = api(server, talk, response_format="verbose_json").json()
    assert len(verbose["segments"]) == 3
    assert [item.text for item in items] == [
        f"{clock(s['start'])} \u2013 {clock(s['end'])} {s['text']}" for s in verbose["segments"]
    ]
    items[1].find_element("css selector", "button.seek").click()
    browser.wait(lambda: "playing" in (items[1].get_attribute("class") or ""))
    browser.screenshot("files")

    browser.find("#download").click()  # "Download as" is SRT to begin with
    saved = browser.downloads / "talk.srt"
    browser.wait(lambda: saved.exists() and browser.text("#download-note") == "Saved talk.srt.")
    assert saved.read_text() == api(server, talk, response_format="srt").text
    only_this_server(browser, server)


def test_words_are_highlighted_as_they_play_when_the_server_has_an_aligner(
    browser: Browser, talk: Path
) -> None:
    fake = StandInAligner("qwen3-forced-aligner")
    backend = ThreadedServer(fake.app).start()
    server = LiveServer(StandIn(MODEL, describe=True), aligner_url=backend.url)
    try:
        browser.open(server.url)
        browser.wait(lambda: "word timestamps on" in browser.text("#status"))
        browser.find("#file").send_keys(str(talk))
        browser.find("#transcribe").click()
        words = browser.wait(lambda: browser.all("#segments .word"), message="no words shown")
        verbose = api(
            server,
            talk,
            response_format="verbose_json",
            **{"timestamp_granularities[]": ["segment", "word"]},
        ).json()
        assert [word.text for word in words] == [word["word"] for word in verbose["words"]]
        browser.all("#segments button.seek")[0].click()
        current = browser.wait(lambda: browser.all("#segments .word.current"))
        assert current[0].get_attribute("aria-current") == "true"
        browser.screenshot("words")
        only_this_server(browser, server)
    finally:
        server.stop()
        backend.stop()


def live_captions(
    browser: Browser, server: LiveServer, transport: str, language: str = ""
) -> list[str]:
    """Start the microphone (in `language`, if given), see the status name `transport` while
    the speaker speaks, and return the captions' texts once both sentences are done, each
    after its start time."""
    browser.open(server.url)
    ready(browser)
    browser.find("#live-tab").click()
    assert browser.find("#live-panel").is_displayed()
    Select(browser.find("#live-language")).select_by_value(language)
    browser.find("#live-toggle").click()
    speaking = f"Listening ({transport}): speaking"
    browser.wait(lambda: browser.text("#vad") == speaking, 20, f"never {speaking!r}")
    assert browser.find("#vad").get_attribute("data-state") == "speaking"
    done = browser.wait(lambda: len(browser.all("#captions li.done")) >= 2 or None, 30)
    assert done
    times = [caption.text for caption in browser.all("#captions li.done .time")]
    assert all(time.count(":") == 1 for time in times)
    return [caption.text for caption in browser.all("#captions li.done .text")]


def test_the_microphone_gives_live_captions_of_each_utterance(
    browser: Browser, server: LiveServer
) -> None:
    captions = live_captions(browser, server, "WebRTC")
    assert all(text.startswith("Heard ") for text in captions)  # the utterance's length
    first = float(browser.all("#captions li.done .time")[0].text.split(":")[1])
    # sentence 1 starts 0.5 s into the microphone's sound (less the prefix padding), heard
    # from the call's first audio: at 0 if the call connected after the sentence began
    assert 0.0 <= first <= 0.6
    browser.screenshot("microphone")
    browser.find("#live-toggle").click()
    assert browser.text("#vad") == "Microphone off"
    urls = only_this_server(browser, server)
    assert f"{server.url}/v1/realtime/client_secrets" in urls  # a WebRTC call, as OpenAI's
    assert f"{server.url}/v1/realtime/calls" in urls
    assert not [url for url in urls if url.startswith("ws")]


def test_the_microphone_goes_over_the_websocket_where_the_call_cannot_connect(
    browser_without_udp: Browser, server: LiveServer
) -> None:
    """As behind a container's published port: the call is answered, its ICE never connects,
    and the same ephemeral key opens the Realtime WebSocket on the HTTP port instead, with
    the session it was minted for (French forced: the stand-in's French sentence)."""
    via = "WebSocket: WebRTC could not connect"
    captions = live_captions(browser_without_udp, server, via, language="fr")
    assert captions[:2] == [SENTENCES["French"]] * 2
    assert browser_without_udp.text("#live-error") == ""
    browser_without_udp.find("#live-toggle").click()
    assert browser_without_udp.text("#vad") == "Microphone off"
    urls = only_this_server(browser_without_udp, server)
    assert f"{server.url}/v1/realtime/calls" in urls  # tried first
    websocket = f"ws{server.url.removeprefix('http')}/v1/realtime?intent=transcription"
    assert websocket in urls


def test_a_server_with_a_key_asks_for_it_and_says_when_it_is_wrong(
    browser: Browser, talk: Path
) -> None:
    server = LiveServer(StandIn(MODEL), api_key=KEY)
    try:
        browser.open(server.url)
        browser.wait(lambda: browser.find("#key-panel").is_displayed(), message="no key asked")
        browser.find("#key").send_keys("wrong", Keys.ENTER)
        browser.wait(lambda: "(401)" in browser.text("#key-error"))
        assert "refused" in browser.text("#key-error")
        browser.screenshot("api-key")
        browser.find("#key").clear()
        browser.find("#key").send_keys(KEY, Keys.ENTER)
        browser.wait(lambda: not browser.find("#key-panel").is_displayed())
        browser.find("#file").send_keys(str(talk))
        browser.find("#transcribe").click()
        browser.wait(lambda: browser.all("#segments li"), message="no segments with the key")
        assert browser.text("#file-error") == ""
        urls = browser.requested()
        assert not [url for url in urls if KEY in url or "wrong" in url]
        problems = browser.problems()  # the refused key's 401s, and nothing else
        assert problems
        assert all("401" in entry["message"] for entry in problems)
    finally:
        server.stop()


def test_the_key_stays_in_the_tab_unless_the_user_asks_to_be_remembered(
    browser: Browser,
) -> None:
    """No page script can find the key of a closed tab: it is kept in sessionStorage, and in
    localStorage only when "Remember" is ticked."""
    server = LiveServer(StandIn(MODEL), api_key=KEY)
    storages = "return [sessionStorage.length, localStorage.length]"
    try:
        browser.open(server.url)
        browser.wait(lambda: browser.find("#key-panel").is_displayed(), message="no key asked")
        browser.find("#key").send_keys(KEY, Keys.ENTER)
        browser.wait(lambda: not browser.find("#key-panel").is_displayed())
        assert browser.driver.execute_script(storages) == [1, 0]
        browser.driver.refresh()  # the same tab keeps it
        browser.wait(lambda: browser.text("#status") != "Checking the server…")
        assert not browser.find("#key-panel").is_displayed()

        browser.driver.switch_to.new_window("tab")  # another tab has to be told again
        browser.driver.get(server.url)
        browser.wait(lambda: browser.find("#key-panel").is_displayed(), message="key kept")
        browser.find("#remember").click()
        browser.find("#key").send_keys(KEY, Keys.ENTER)
        browser.wait(lambda: not browser.find("#key-panel").is_displayed())
        assert browser.driver.execute_script(storages) == [0, 1]
        browser.driver.close()
        browser.driver.switch_to.window(browser.driver.window_handles[0])
    finally:
        server.stop()


def upload_error(browser: Browser, server: LiveServer, path: Path) -> str:
    browser.open(server.url)
    browser.wait(lambda: browser.text("#status") != "Checking the server…")
    browser.find("#file").send_keys(str(path))
    browser.find("#transcribe").click()
    return browser.wait(lambda: browser.text("#file-error"), message="no error shown")


def test_errors_are_said_in_plain_words(browser: Browser, talk: Path, tmp_path: Path) -> None:
    not_audio = tmp_path / "notes.wav"
    not_audio.write_bytes(b"this is not audio at all" * 100)
    plain = LiveServer(StandIn(MODEL))
    small = LiveServer(StandIn(MODEL), max_upload_mb=1)  # talk.wav is 1.5 MB
    busy = LiveServer(StandIn(MODEL, delay=5), max_concurrent=1, max_queue=0)
    gone = LiveServer(StandIn(MODEL))
    try:
        said = upload_error(browser, plain, not_audio)
        assert "(400)" in said
        assert "audio" in said.lower()
        said = upload_error(browser, small, talk)
        assert said.startswith("The file is too large for this server (413)")
        clip = tmp_path / "clip.wav"  # short: one piece, one slot
        clip.write_bytes(speech_wav(3.0))
        with ThreadPoolExecutor(1) as pool:  # one request holds the only slot for 5 s
            holding = pool.submit(api, busy, clip)
            browser.wait(lambda: busy.standin.in_flight == 1)
            said = upload_error(browser, busy, clip)
            assert said == "The server is busy (429). Try again in 1 s."
            holding.result()
        gone.stop_backend()
        said = upload_error(browser, gone, talk)
        assert said.startswith("The server cannot transcribe right now (503)")
        assert said.endswith("Try again in 5 s.")
        browser.problems()  # the failed requests, logged by Chromium as it should
    finally:
        for server in (plain, small, busy, gone):
            server.stop()


def test_the_page_fits_a_phone_and_works_from_the_keyboard(
    browser: Browser, server: LiveServer
) -> None:
    browser.open(server.url, width=390, height=844)
    ready(browser)
    fits = browser.driver.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth"
    )
    assert fits
    browser.screenshot("phone")
    tab = browser.find("#files-tab")
    tab.send_keys(Keys.ARROW_RIGHT)
    assert browser.find("#live-panel").is_displayed()
    assert not browser.find("#files-panel").is_displayed()
    focused = browser.driver.switch_to.active_element
    assert focused.get_attribute("id") == "live-tab"
    focused.send_keys(Keys.HOME)
    assert browser.find("#files-panel").is_displayed()
    only_this_server(browser, server)


def test_who_spoke_is_shown_with_a_label_and_a_colour_each(
    browser: Browser, server: LiveServer, tmp_path: Path
) -> None:
    path = tmp_path / "meeting.wav"
    path.write_bytes(conversation(3, 8, tmp_path, seed=2).wav())
    browser.open(server.url)
    ready(browser)
    choice = browser.wait(
        lambda: browser.find("#file-speakers").is_displayed() and browser.find("#file-speakers")
    )
    choice.click()
    browser.find("#file").send_keys(str(path))
    browser.find("#transcribe").click()
    # speakers are found on the CPU: ~5 s here alone, over 15 s in a loaded CI lane
    items = browser.wait(
        lambda: browser.all("#segments li"), seconds=90, message="no segments appeared"
    )
    verbose = api(server, path, model=DIARIZE, response_format="verbose_json").json()
    labels = [item.find_element("css selector", ".speaker") for item in items]
    assert [label.text for label in labels] == [s["speaker"] for s in verbose["segments"]]
    colours = {label.text: label.value_of_css_property("background-color") for label in labels}
    assert len(set(colours.values())) == len(colours) == 3
    assert "3 speakers" in browser.text("#segments-note")
    browser.screenshot("speakers")

    Select(browser.find("#file-format")).select_by_value("vtt")
    browser.find("#download").click()
    saved = browser.downloads / "meeting.vtt"
    browser.wait(lambda: saved.exists() and browser.text("#download-note") == "Saved meeting.vtt.")
    assert saved.read_text() == api(server, path, model=DIARIZE, response_format="vtt").text
    assert "<v A>" in saved.read_text()
    only_this_server(browser, server)


def test_the_speaker_choice_is_hidden_when_the_server_labels_no_speakers(
    browser: Browser,
) -> None:
    server = LiveServer(StandIn(MODEL, describe=True), diarizer="none")
    try:
        browser.open(server.url)
        ready(browser)
        browser.wait(
            lambda: browser.driver.execute_script(
                "return document.querySelector('#file-speakers').closest('label').hidden"
            )
        )
        assert not browser.find("#file-speakers").is_displayed()
    finally:
        server.stop()


def test_a_file_run_as_a_batch_job_is_followed_shown_by_segment_and_reopened(
    browser: Browser, server: LiveServer, talk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = threading.Event()  # the model answers only once the test has seen the job running
    think = server.standin._think

    async def when_let(*_: Any) -> None:
        await asyncio.to_thread(held.wait, 60)
        await think()

    monkeypatch.setattr(server.standin, "_think", when_let)
    browser.open(server.url)
    ready(browser)
    browser.find("#file").send_keys(str(talk))
    browser.find("#file-job").click()
    browser.find("#transcribe").click()
    browser.wait(lambda: browser.text("#job-status") == "talk.wav: in_progress, 0 of 1 done")
    assert browser.find("#job-progress").get_attribute("value") == "0"
    held.set()
    browser.wait(lambda: browser.text("#job-status") == "talk.wav: completed, 1 of 1 done", 60)
    assert browser.find("#job-progress").get_attribute("value") == "1"

    items = browser.wait(lambda: browser.all("#job-segments li"), message="no segments shown")
    verbose = api(server, talk, response_format="verbose_json").json()
    assert browser.text("#job-transcript") == verbose["text"]
    assert [item.text for item in items] == [
        f"{clock(s['start'])} \u2013 {clock(s['end'])} {s['text']}" for s in verbose["segments"]
    ]
    second = verbose["segments"][1]
    items[1].find_element("css selector", "button.seek").click()
    browser.wait(lambda: "playing" in (items[1].get_attribute("class") or ""))
    now = browser.driver.execute_script("return document.querySelector('#job-player').currentTime")
    assert second["start"] <= now < second["end"]
    browser.driver.execute_script("document.querySelector('#job').scrollIntoView()")
    browser.screenshot("batch-job")

    browser.find("#job-downloads a[download='talk.json']").click()
    saved = browser.downloads / "talk.json"
    browser.wait(lambda: saved.exists(), message="the JSON was not saved")
    assert json.loads(saved.read_text())["segments"] == verbose["segments"]
    only_this_server(browser, server)

    browser.open(server.url)  # a new visit: the job is listed, and its recording fetched back
    ready(browser)
    browser.find("#jobs-recent summary").click()
    entry = browser.wait(lambda: browser.all("#jobs-list li"), message="no jobs listed")[0]
    assert entry.find_element("css selector", ".job-state").text == "completed"
    entry.find_element("css selector", "button").click()
    items = browser.wait(lambda: browser.all("#job-segments li"), message="not reopened")
    assert len(items) == len(verbose["segments"])
    duration = "return document.querySelector('#job-player').duration || 0"
    browser.wait(lambda: abs(browser.driver.execute_script(duration) - verbose["duration"]) < 0.1)
    items[2].find_element("css selector", "button.seek").click()
    browser.wait(lambda: "playing" in (items[2].get_attribute("class") or ""))
    urls = only_this_server(browser, server)
    assert any(url.endswith("/content") for url in urls)


def test_a_batch_job_with_speakers_labels_each_segment(
    browser: Browser, server: LiveServer, tmp_path: Path
) -> None:
    path = tmp_path / "meeting.wav"
    path.write_bytes(conversation(3, 8, tmp_path, seed=2).wav())
    browser.open(server.url)
    ready(browser)
    browser.wait(lambda: browser.find("#file-speakers").is_displayed())
    browser.find("#file-speakers").click()
    browser.find("#file-job").click()
    browser.find("#file").send_keys(str(path))
    browser.find("#transcribe").click()
    browser.wait(lambda: browser.text("#job-status") == "meeting.wav: completed, 1 of 1 done", 60)
    items = browser.wait(lambda: browser.all("#job-segments li"), message="no segments shown")
    diarized = api(server, path, model=DIARIZE, response_format="diarized_json").json()
    assert [item.find_element("css selector", ".speaker").text for item in items] == [
        s["speaker"] for s in diarized["segments"]
    ]
    assert "3 speakers" in browser.text("#job-segments-note")
    only_this_server(browser, server)
