"""The playground on a server with a keys file: it asks for a key as it does for `--api-key`,
and the jobs it lists are that key's project's only, as the API answers them; another key, in
another tab, sees its own."""

from __future__ import annotations

import time
from collections.abc import Iterator

import openai
import pytest
from selenium.webdriver.common.keys import Keys

from tests.fixtures.audio import wav
from tests.fixtures.browser import Browser
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.standin import StandIn
from tests.integration.jobs.test_projects import ENDPOINT, line
from tests.integration.middleware.test_keys_file import ADMIN, KEYS

pytestmark = pytest.mark.browser


def job(server: LiveServer, key: str, filename: str) -> str:
    """A batch of one line made through the API with `key`, named as the playground names its
    own; its id once it has completed."""
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    clip = client.files.create(file=(filename, wav(1.0)), purpose="user_data")
    source = client.files.create(file=("in.jsonl", line("a", clip.id)), purpose="batch")
    batch = client.batches.create(
        input_file_id=source.id,
        endpoint=ENDPOINT,  # type: ignore[arg-type]
        completion_window="24h",
        metadata={"filename": filename},
    )
    deadline = time.monotonic() + 60
    while client.batches.retrieve(batch.id).status != "completed":
        assert time.monotonic() < deadline, "the batch did not complete"
        time.sleep(0.1)
    return batch.id


def listed(browser: Browser, server: LiveServer, key: str) -> list[str]:
    """The names of the jobs the page lists in a new tab given `key`."""
    browser.driver.switch_to.new_window("tab")
    browser.driver.get(server.url)
    browser.wait(lambda: browser.find("#key-panel").is_displayed(), message="no key asked")
    browser.find("#key").send_keys(key, Keys.ENTER)
    browser.wait(lambda: not browser.find("#key-panel").is_displayed())
    browser.wait(lambda: browser.text("#status").startswith("Ready"), message="never Ready")
    browser.find("#jobs-recent summary").click()
    browser.wait(
        lambda: browser.all("#jobs-list li") or browser.text("#jobs-note"), message="no list"
    )
    entries = browser.all("#jobs-list li")
    names = [entry.find_element("css selector", "button").text for entry in entries]
    if not names:
        assert browser.text("#jobs-note") == "No audio jobs yet."
    browser.driver.close()
    browser.driver.switch_to.window(browser.driver.window_handles[0])
    return names


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    keys = tmp_path_factory.mktemp("keys") / "keys.toml"
    keys.write_text(KEYS)
    live = LiveServer(StandIn(MODEL, describe=True), api_key=ADMIN, keys_file=keys)
    yield live
    live.stop()


def test_the_jobs_listed_are_the_project_of_the_key_given(
    browser: Browser, server: LiveServer
) -> None:
    job(server, "sk-notes", "standup.wav")
    job(server, "sk-calls", "customer-call.wav")
    job(server, "sk-calls", "supplier-call.wav")
    assert listed(browser, server, "sk-notes") == ["standup.wav"]
    assert sorted(listed(browser, server, "sk-calls")) == ["customer-call.wav", "supplier-call.wav"]
    assert listed(browser, server, ADMIN) == []  # the project `default`: none of these
