// The Microphone view: live captions over a WebRTC call to OpenAI's Realtime API (transcription).

import { APIError, call, clock, postJSON } from "./api.js";
import { readOptions } from "./files.js";

const FAILED =
  "The call could not connect: this browser cannot reach the server's address for calls (UDP). " +
  "A server behind NAT (a container's published port) needs host networking for calls.";

export function setUpLive(page) {
  const form = document.getElementById("live-form");
  const toggle = document.getElementById("live-toggle");
  const error = document.getElementById("live-error");
  const vad = document.getElementById("vad");
  const captions = document.getElementById("captions");
  let live = null; // {pc, stream, events}

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (live) stop("Microphone off");
    else await start();
  });

  function state(name, words) {
    vad.dataset.state = name;
    vad.textContent = words;
  }

  // A WebRTC call as OpenAI's WebRTC guide makes one: an ephemeral key for the session the
  // form describes (minted with the page's key, if the server has one), the microphone as the
  // call's track, the events on its "oai-events" channel.
  async function start() {
    error.textContent = "";
    toggle.disabled = true;
    try {
      const minted = await postJSON("/v1/realtime/client_secrets", { session: session(readOptions("live")) });
      const stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true },
      });
      const pc = new RTCPeerConnection();
      pc.addTrack(stream.getAudioTracks()[0], stream);
      const events = pc.createDataChannel("oai-events");
      live = { pc, stream, events };
      events.onmessage = ({ data }) => handle(JSON.parse(data));
      events.onclose = () => ended("The server ended the call.");
      pc.onconnectionstatechange = () => {
        if (pc.connectionState === "failed") ended(FAILED);
      };
      state("connecting", "Connecting…");
      await pc.setLocalDescription(await pc.createOffer());
      const answer = await call("/v1/realtime/calls", {
        method: "POST",
        body: pc.localDescription.sdp,
        headers: { Authorization: `Bearer ${minted.value}`, "Content-Type": "application/sdp" },
      });
      await pc.setRemoteDescription({ type: "answer", sdp: await answer.text() });
      toggle.textContent = "Stop";
    } catch (caught) {
      error.textContent =
        caught instanceof APIError ? caught.message : `The microphone could not be used: ${caught.message || caught}`;
      page.refused(caught);
      stop("Microphone off");
    } finally {
      toggle.disabled = false;
    }
  }

  function ended(words) {
    stop("Microphone off");
    error.textContent = words;
  }

  function stop(words) {
    if (live) {
      live.pc.onconnectionstatechange = null;
      live.events.onclose = null;
      live.pc.close();
      for (const track of live.stream.getTracks()) track.stop();
      live = null;
    }
    toggle.textContent = "Start";
    state("off", words);
  }

  function caption(itemId) {
    let item = captions.querySelector(`[data-item="${CSS.escape(itemId)}"]`);
    if (!item) {
      item = document.createElement("li");
      item.dataset.item = itemId;
      item.className = "partial";
      const time = document.createElement("span");
      time.className = "time";
      const text = document.createElement("span");
      text.className = "text";
      item.append(time, " ", text);
      captions.append(item);
    }
    return item;
  }

  function handle(event) {
    switch (event.type) {
      case "session.created":
        state("silent", "Listening: silent");
        break;
      case "input_audio_buffer.speech_started":
        state("speaking", "Listening: speaking");
        caption(event.item_id).querySelector(".time").textContent = clock(event.audio_start_ms / 1000);
        break;
      case "input_audio_buffer.speech_stopped":
        state("silent", "Listening: silent");
        break;
      case "conversation.item.input_audio_transcription.delta":
        caption(event.item_id).querySelector(".text").textContent += event.delta;
        break;
      case "conversation.item.input_audio_transcription.completed": {
        const item = caption(event.item_id);
        item.querySelector(".text").textContent = event.transcript;
        item.className = event.transcript ? "done" : "empty";
        break;
      }
      case "conversation.item.input_audio_transcription.failed": {
        const item = caption(event.item_id);
        item.querySelector(".text").textContent = `(not transcribed: ${event.error?.message || "failed"})`;
        item.className = "failed";
        break;
      }
      case "error":
        error.textContent = event.error?.message || "The server reported an error.";
        break;
      default:
    }
  }
}

// The session the form describes, in the GA shape (the call's audio is its track: no format).
function session(options) {
  const transcription = { model: "gpt-4o-transcribe" };
  if (options.language) transcription.language = options.language;
  if (options.prompt) transcription.prompt = options.prompt;
  return { type: "transcription", audio: { input: { transcription, turn_detection: { type: "server_vad" } } } };
}
