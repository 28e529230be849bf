// The Microphone view: live captions over OpenAI's Realtime API (transcription), a WebRTC call
// first and the Realtime WebSocket where the call cannot connect (`transports.js`).

import { APIError, clock, postJSON } from "./api.js";
import { readOptions } from "./files.js";
import { NotConnected, callOverWebRTC, streamOverWebSocket } from "./transports.js";

export function setUpLive(page) {
  const form = document.getElementById("live-form");
  const toggle = document.getElementById("live-toggle");
  const error = document.getElementById("live-error");
  const vad = document.getElementById("vad");
  const captions = document.getElementById("captions");
  let live = null; // {stream, via: the transport in words, link: its close(), once open}

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (live) stop("Microphone off");
    else await start();
  });

  function state(name, words) {
    vad.dataset.state = name;
    vad.textContent = words;
  }

  function listening(what) {
    return `Listening (${live.via}): ${what}`;
  }

  // An ephemeral key for the session the form describes (minted with the page's key, if the
  // server has one), which opens that session over either transport.
  async function start() {
    error.textContent = "";
    toggle.disabled = true;
    try {
      const minted = await postJSON("/v1/realtime/client_secrets", { session: session(readOptions("live")) });
      const stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true },
      });
      live = { stream, via: "WebRTC", link: null };
      state("connecting", "Connecting…");
      live.link = await connect(minted.value, stream);
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

  async function connect(key, stream) {
    try {
      return await callOverWebRTC(key, stream, handle, ended);
    } catch (caught) {
      if (!(caught instanceof NotConnected)) throw caught;
    }
    live.via = "WebSocket: WebRTC could not connect";
    return streamOverWebSocket(key, stream, handle, ended);
  }

  function ended(words) {
    stop("Microphone off");
    error.textContent = words;
  }

  function stop(words) {
    if (live) {
      live.link?.close();
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
        state("silent", listening("silent"));
        break;
      case "input_audio_buffer.speech_started":
        state("speaking", listening("speaking"));
        caption(event.item_id).querySelector(".time").textContent = clock(event.audio_start_ms / 1000);
        break;
      case "input_audio_buffer.speech_stopped":
        state("silent", listening("silent"));
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

// The session the form describes, in the GA shape. No format: a call's audio is its track, and
// the WebSocket's is the 24 kHz PCM it takes unless told.
function session(options) {
  const transcription = { model: "gpt-4o-transcribe" };
  if (options.language) transcription.language = options.language;
  if (options.prompt) transcription.prompt = options.prompt;
  return { type: "transcription", audio: { input: { transcription, turn_detection: { type: "server_vad" } } } };
}
