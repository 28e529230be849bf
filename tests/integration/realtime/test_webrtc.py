"""POST /v1/realtime/calls, driven by an aiortc peer as a browser drives it: an offer with a
microphone track (a WAV of real speech, played in real time) and the `oai-events` data
channel, against the whole server on a loopback port in front of the stand-in."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from aiortc import RTCConfiguration, RTCDataChannel, RTCPeerConnection, RTCSessionDescription
from aiortc.contrib.media import MediaPlayer
from openai.types.realtime import (
    ConversationItemInputAudioTranscriptionCompletedEvent,
    SessionCreatedEvent,
)
from websockets.exceptions import InvalidStatus

from qwen3_asr_server.entrypoints.realtime import call
from tests.fixtures import metrics
from tests.fixtures.audio import pcm_wav
from tests.fixtures.harness import MODEL, LiveServer
from tests.fixtures.process import ServerProcess, install_launcher, listening, workers
from tests.fixtures.servers import ThreadedServer
from tests.fixtures.speech import spoken_pcm
from tests.fixtures.standin import StandIn
from tests.fixtures.websocket import connect
from tests.integration.middleware.test_keys_file import ADMIN, KEYS
from tests.integration.realtime.test_client_secrets import bearer
from tests.integration.realtime.test_handshakes import refusal
from tests.integration.realtime.test_realtime import HEARD

Events = list[dict[str, Any]]
TRANSCRIPTION = "conversation.item.input_audio_transcription."
SESSIONS = "qwen3_asr_realtime_sessions"
REALTIME = "/v1/realtime?intent=transcription"
# one utterance of 1.5 s, between silences: 2.5 s played in real time
PATTERN = [(0.5, False), (1.5, True), (1.0, False)]
SESSION = {"type": "transcription", "audio": {"input": {"transcription": {"prompt": "A call."}}}}


@contextmanager
def serving(**settings: Any) -> Iterator[str]:
    """The server in front of a stand-in, both in threads; yields its http:// base URL."""
    server = LiveServer(StandIn(MODEL, describe=True), **settings)
    try:
        yield server.url
    finally:
        server.stop()


def wav_of(path: Path, pattern: list[tuple[float, bool]]) -> Path:
    path.write_bytes(pcm_wav(spoken_pcm(pattern, rate=48000), rate=48000))
    return path


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wav_of(tmp_path_factory.mktemp("webrtc") / "speech.wav", PATTERN)


@dataclass
class Peer:
    """The caller's side: its peer connection, channel and the events the channel brought."""

    pc: RTCPeerConnection
    channel: RTCDataChannel
    events: asyncio.Queue[dict[str, Any]]
    closed: asyncio.Event

    def send(self, kind: str, **fields: Any) -> None:
        """A client event (once session.created came: the channel is open)."""
        self.channel.send(json.dumps({"type": kind, **fields}))

    async def until(self, done: Callable[[Events], bool], seconds: float = 30) -> Events:
        received: Events = []
        async with asyncio.timeout(seconds):
            while not done(received):
                received.append(await self.events.get())
        return received


def offering(wav: Path | None, channel: bool = True) -> Peer:
    pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
    if wav is not None:
        pc.addTrack(MediaPlayer(str(wav)).audio)
    events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    data = pc.createDataChannel("oai-events" if channel else "other")
    closed = asyncio.Event()
    data.on("message", lambda message: events.put_nowait(json.loads(message)))
    data.on("close", closed.set)
    return Peer(pc, data, events, closed)


async def offer_sdp(peer: Peer) -> str:
    await peer.pc.setLocalDescription(await peer.pc.createOffer())
    return str(peer.pc.localDescription.sdp)


async def post_sdp(url: str, sdp: str, key: str | None = None) -> httpx.Response:
    headers = {"Content-Type": "application/sdp"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(f"{url}/v1/realtime/calls", content=sdp, headers=headers)


@asynccontextmanager
async def calling(
    url: str, wav: Path | None, form: bool = False, key: str | None = None
) -> AsyncIterator[Peer]:
    """A call answered (201), the peer connected to it; hung up at the end."""
    peer = offering(wav)
    try:
        sdp = await offer_sdp(peer)
        if form:  # the SDK's multipart/form-data, with a session
            sdk = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=key or "-", max_retries=0)
            raw = await sdk.realtime.calls.with_raw_response.create(sdp=sdp, session=SESSION)
            status, headers, answer = raw.status_code, raw.headers, raw.content.decode()
        else:
            response = await post_sdp(url, sdp, key)
            status, headers, answer = response.status_code, response.headers, response.text
        assert status == 201, answer
        assert headers["content-type"].startswith("application/sdp")
        assert headers["location"].startswith("/v1/realtime/calls/rtc_")
        await peer.pc.setRemoteDescription(RTCSessionDescription(answer, "answer"))
        yield peer
    finally:
        await peer.pc.close()


def count(kind: str, wanted: int = 1) -> Callable[[Events], bool]:
    return lambda events: sum(event["type"] == kind for event in events) >= wanted


def of(events: Events, kind: str) -> Events:
    return [event for event in events if event["type"] == kind]


@pytest.mark.parametrize("form", [False, True], ids=["application/sdp", "multipart"])
async def test_a_call_turns_its_speech_into_events_on_the_data_channel(
    speech: Path, form: bool
) -> None:
    with serving() as url:
        async with calling(url, speech, form=form) as peer:
            events = await peer.until(count(TRANSCRIPTION + "completed"))
    created = SessionCreatedEvent.model_validate(events[0])
    assert created.session.type == "transcription"
    kinds = [event["type"] for event in events]
    for kind in (
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
    ):
        assert kind in kinds
    [started] = of(events, "input_audio_buffer.speech_started")
    # speech at 0.5 s, found 300 ms early (prefix padding) within about three Silero windows
    assert started["audio_start_ms"] == pytest.approx(200, abs=150)
    [done] = of(events, TRANSCRIPTION + "completed")
    transcript = ConversationItemInputAudioTranscriptionCompletedEvent.model_validate(done)
    assert transcript.item_id == started["item_id"]
    # the stand-in says what it heard: the 1.5 s spoken, 300 ms before it and 150 ms after
    [heard] = HEARD.findall(transcript.transcript)
    assert float(heard) == pytest.approx(1.95, abs=0.2)
    if form:  # the session the offer came with
        assert created.session.audio.input.transcription.prompt == "A call."


@pytest.mark.parametrize("form", [False, True], ids=["application/sdp", "multipart"])
async def test_an_ephemeral_key_opens_a_call_with_the_session_it_was_minted_for(
    speech: Path, form: bool
) -> None:
    """As OpenAI's WebRTC guide: the app's backend mints a key, the page calls with it; a
    session sent with the offer (the SDK's form) is applied over the minted one."""
    minted = {
        "type": "transcription",
        "audio": {"input": {"transcription": {"language": "de", "prompt": "Minted."}}},
    }
    with serving(api_key="sk-real") as url:
        sdk = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="sk-real", max_retries=0)
        secret = await sdk.realtime.client_secrets.create(session=minted)
        async with calling(url, speech, form=form, key=secret.value) as peer:
            events = await peer.until(count(TRANSCRIPTION + "completed"))
    created = SessionCreatedEvent.model_validate(events[0])
    transcription = created.session.audio.input.transcription
    assert transcription.language == "de"
    assert transcription.prompt == ("A call." if form else "Minted.")
    assert of(events, TRANSCRIPTION + "completed")


async def test_the_channel_takes_client_events_as_a_websocket_does(speech: Path) -> None:
    with serving() as url:
        async with calling(url, speech) as peer:
            await peer.until(count("session.created"))
            peer.send("session.update", session={"type": "transcription", "include": []})
            peer.send("input_audio_buffer.append", audio="AAAA")
            peer.send("input_audio_buffer.clear")
            peer.send("no.such.event")
            events = await peer.until(count("error", 2))
    updated = of(events, "session.updated")
    assert len(updated) == 1
    assert "input_audio_buffer.cleared" in [event["type"] for event in events]
    refused = [event["error"] for event in of(events, "error")]
    assert "audio track" in refused[0]["message"]
    assert refused[1]["param"] == "type"


async def test_a_call_holds_a_seat_until_its_peer_hangs_up(speech: Path) -> None:
    with serving(max_sessions=1) as url:
        async with calling(url, speech) as peer:
            await peer.until(count("session.created"))
            second = await post_sdp(url, await offer_sdp(offering(speech)))
            assert second.status_code == 429
            assert second.json()["error"]["code"] == "session_limit_reached"
        await _sessions_open(url, 0)
        async with calling(url, speech) as peer:  # the seat was given back
            await peer.until(count("session.created"))


async def _sessions_open(url: str, wanted: int) -> None:
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient() as http:
        while metrics.value((await http.get(f"{url}/metrics")).text, SESSIONS) != wanted:
            assert time.monotonic() < deadline, "the call kept its seat"
            await asyncio.sleep(0.1)


async def test_a_keys_calls_count_toward_its_max_sessions_beside_its_websockets(
    speech: Path, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text(KEYS.replace('key = "sk-notes"', 'key = "sk-notes"\nmax_sessions = 1'))
    with serving(api_key=ADMIN, keys_file=keys) as url:
        async with calling(url, speech, key="sk-notes") as peer:
            await peer.until(count("session.created"))
            late = offering(speech)
            again = await post_sdp(url, await offer_sdp(late), "sk-notes")
            await late.pc.close()
            assert again.status_code == 429
            assert again.json()["error"]["code"] == "session_limit_reached"
            assert "'notes-web' has 1 Realtime sessions open" in again.json()["error"]["message"]
            status, _, _ = await refusal(url.replace("http", "ws"), **bearer("sk-notes"))
            assert status == 429  # a WebSocket session of the key's: its seat is the call's
            async with calling(url, speech, key="sk-calls") as other:  # another key's seat
                await other.until(count("session.created"))
        await _sessions_open(url, 0)
        async with calling(url, speech, key="sk-notes") as peer:  # its seat given back
            await peer.until(count("session.created"))
        async with httpx.AsyncClient() as http:
            shown = (await http.get(f"{url}/metrics")).text
    assert metrics.value(shown, 'qwen3_asr_rejected_total{reason="key_session_limit"}') == 2


async def test_a_server_bound_to_loopback_offers_only_loopback(speech: Path) -> None:
    with serving(host="127.0.0.1") as url:
        async with calling(url, speech) as peer:
            await peer.until(count("session.created"))
            answer = peer.pc.remoteDescription.sdp
    candidates = [line.split()[4] for line in answer.splitlines() if line.startswith("a=candidate")]
    assert candidates
    assert set(candidates) == {"127.0.0.1"}


async def test_bad_offers_are_refused_and_the_server_serves_on(speech: Path) -> None:
    with serving() as url:
        not_sdp = await post_sdp(url, "hello")
        silent = offering(None)
        no_audio = await post_sdp(url, await offer_sdp(silent))
        await silent.pc.close()
        broken = await post_sdp(
            url, "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nm=application 9\r\n"
        )
        peer = offering(speech)
        sdp = await offer_sdp(peer)
        async with httpx.AsyncClient() as http:
            calls = f"{url}/v1/realtime/calls"
            no_field = await http.post(calls, files={"session": (None, json.dumps(SESSION))})
            bad_json = await http.post(calls, files={"sdp": (None, sdp), "session": (None, "{")})
            realtime = {"sdp": (None, sdp), "session": (None, json.dumps({"type": "realtime"}))}
            not_transcription = await http.post(calls, files=realtime)
            plain = await http.post(calls, content=sdp, headers={"Content-Type": "text/plain"})
            huge = await post_sdp(url, sdp + "a=x\r\n" * 20_000)
            page = {"Origin": "https://elsewhere.example"}  # another site's form
            cross_site = await http.post(calls, files={"sdp": (None, sdp)}, headers=page)
        await peer.pc.close()
        async with calling(url, speech) as peer:  # and the server still answers
            await peer.until(count("session.created"))
    for response, param, code in [
        (not_sdp, "sdp", "invalid_offer"),
        (no_audio, "sdp", "invalid_offer"),
        (broken, "sdp", "invalid_offer"),
        (no_field, "sdp", "missing_required_parameter"),
        (bad_json, "session", "invalid_json"),
        (not_transcription, "session.type", "invalid_value"),
    ]:
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert (error["type"], error["param"], error["code"]) == (
            "invalid_request_error",
            param,
            code,
        )
    assert "m=audio" in no_audio.json()["error"]["message"]
    assert plain.status_code == 415
    assert huge.status_code == 413
    assert cross_site.status_code == 403
    assert cross_site.json()["error"]["code"] == "origin_not_allowed"


async def test_an_offer_needs_the_key() -> None:
    with serving(api_key="sesame") as url:
        peer = offering(None)
        refused = await post_sdp(url, await offer_sdp(peer))
        await peer.pc.close()
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "missing_api_key"


async def test_a_flooded_channel_is_told_then_hung_up(speech: Path) -> None:
    with serving() as url:
        async with calling(url, speech) as peer:
            await peer.until(count("session.created"))
            for _ in range(3000):
                peer.channel.send(json.dumps({"type": "input_audio_buffer.clear"}))
            events = await peer.until(
                lambda events: any(
                    event["type"] == "error" and event["error"]["code"] == "rate_limit_exceeded"
                    for event in events
                )
            )
            async with asyncio.timeout(30):
                await peer.closed.wait()
        assert "input_audio_buffer.cleared" in [event["type"] for event in events]
        async with calling(url, speech) as again:  # the server serves on
            await again.until(count("session.created"))


async def test_a_call_whose_audio_stops_or_channel_never_opens_ends(
    speech: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(call, "NO_AUDIO_SECONDS", 2.0)
    monkeypatch.setattr(call, "CONNECT_SECONDS", 2.0)
    with serving() as url:
        async with calling(url, speech) as peer:  # 2.5 s of audio, then none
            events = await peer.until(count(TRANSCRIPTION + "completed"))
            async with asyncio.timeout(30):
                await peer.closed.wait()
        assert events[0]["type"] == "session.created"
        await _sessions_open(url, 0)
        mute = offering(speech, channel=False)  # its channel is not oai-events
        try:
            answered = await post_sdp(url, await offer_sdp(mute))
            assert answered.status_code == 201
            await mute.pc.setRemoteDescription(RTCSessionDescription(answered.text, "answer"))
            async with asyncio.timeout(30):
                await mute.closed.wait()  # the server refuses it...
            await _sessions_open(url, 0)  # ...and the call ends without one
            assert mute.events.empty()
        finally:
            await mute.pc.close()


async def test_sigterm_lets_a_call_finish_its_utterance_then_hangs_up(tmp_path: Path) -> None:
    install_launcher(tmp_path / "bin", "vllm")
    server = ServerProcess(tmp_path, ["--model", "tiny"], {"FAKE_VLLM_RESPONSE_DELAY": "1"})
    talk = wav_of(tmp_path / "talk.wav", [(0.3, False), (2.0, True), (2.0, False)])
    try:
        await asyncio.to_thread(server.wait_for_health, 200)
        async with calling(server.url, talk) as peer:
            await peer.until(count("input_audio_buffer.speech_started"))
            server.proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(server.wait_for_health, 503)  # the drain began
            late = offering(talk)
            refused = await post_sdp(server.url, await offer_sdp(late))
            await late.pc.close()
            assert refused.status_code == 503
            events = await peer.until(count(TRANSCRIPTION + "completed"))
            async with asyncio.timeout(30):
                await peer.closed.wait()
        assert events[-1]["transcript"] == "Hello world."
        assert await asyncio.to_thread(server.wait_exit) == -signal.SIGTERM
    finally:
        server.stop()


def both_listen(server: ServerProcess) -> None:
    deadline = time.monotonic() + 20
    while not (len(found := workers(server.proc.pid)) == 2 and found <= listening(server.port)):
        assert time.monotonic() < deadline, "the two workers never both listened"
        time.sleep(0.1)


async def test_calls_and_websocket_sessions_share_the_seats_of_every_worker(
    tmp_path: Path, speech: Path
) -> None:
    """--workers 2 --max-sessions 2: two calls, wherever they landed, fill the server; a third
    call and a WebSocket handshake are refused by either worker, until a call hangs up."""
    standin = ThreadedServer(StandIn(MODEL, describe=True).app).start()
    args = ["--backend-url", standin.url, "--model", MODEL, "--workers", "2"]
    server = ServerProcess(tmp_path, [*args, "--max-sessions", "2"])
    try:
        await asyncio.to_thread(server.wait_for_health, 200)
        await asyncio.to_thread(both_listen, server)  # either may answer what follows
        async with calling(server.url, speech) as first:
            await first.until(count("session.created"))
            async with calling(server.url, speech) as second:
                await second.until(count("session.created"))
                for _ in range(4):  # new connections: both workers answer some of them
                    third = offering(speech)
                    refused = await post_sdp(server.url, await offer_sdp(third))
                    await third.pc.close()
                    assert refused.status_code == 429
                    with pytest.raises(InvalidStatus) as handshake:
                        await connect(f"{server.url.replace('http', 'ws')}{REALTIME}")
                    assert handshake.value.response.status_code == 429
            async with asyncio.timeout(30):  # the seat comes back once the call has ended
                while True:
                    try:
                        async with connect(f"{server.url.replace('http', 'ws')}{REALTIME}"):
                            break
                    except InvalidStatus:
                        await asyncio.sleep(0.2)
    finally:
        server.stop()
        standin.stop()
