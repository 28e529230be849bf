// The two ways the Microphone view reaches a Realtime session opened with an ephemeral key: a
// WebRTC call, as OpenAI's WebRTC guide makes one, and the Realtime WebSocket, for where the
// call cannot connect (the server's UDP ports out of reach: a container's published port, a
// Kubernetes Service, NAT). Each resolves once open with a link to `close()`; from then on
// it hands every server event to `onEvent` and says in words when the server ends it (`onEnd`).

import { APIError, call } from "./api.js";

// A call that connects at all does in well under a second; one whose candidates cannot reach
// each other never says "failed" in Chromium, so it is given up on after this long.
const CONNECT_MS = 5000;
const RATE = 24_000; // OpenAI's Realtime PCM rate, a WebSocket session's audio unless told
const APPEND_SAMPLES = RATE / 10; // 100 ms an append

// The call did not connect: the caller may go on over the WebSocket.
export class NotConnected extends Error {}

// The microphone as the call's track, the events on its "oai-events" channel.
export async function callOverWebRTC(key, stream, onEvent, onEnd) {
  const pc = new RTCPeerConnection();
  pc.addTrack(stream.getAudioTracks()[0], stream);
  const events = pc.createDataChannel("oai-events");
  events.onmessage = ({ data }) => onEvent(JSON.parse(data));
  try {
    await pc.setLocalDescription(await pc.createOffer());
    const answer = await call("/v1/realtime/calls", {
      method: "POST",
      body: pc.localDescription.sdp,
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/sdp" },
    });
    await pc.setRemoteDescription({ type: "answer", sdp: await answer.text() });
    await opened(pc, events);
  } catch (caught) {
    pc.close();
    throw caught;
  }
  events.onclose = () => onEnd("The server ended the call.");
  pc.onconnectionstatechange = () => {
    if (pc.connectionState === "failed") onEnd("The call's connection was lost.");
  };
  return {
    close() {
      pc.onconnectionstatechange = null;
      events.onclose = null;
      pc.close();
    },
  };
}

function opened(pc, events) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new NotConnected()), CONNECT_MS);
    events.onopen = () => {
      clearTimeout(timer);
      resolve();
    };
    pc.onconnectionstatechange = pc.oniceconnectionstatechange = () => {
      if (pc.connectionState !== "failed" && pc.iceConnectionState !== "failed") return;
      clearTimeout(timer);
      reject(new NotConnected());
    };
  });
}

// The session the key was minted for, over the HTTP port: the microphone at 24 kHz, as 100 ms
// `input_audio_buffer.append`s of base64 16-bit PCM.
export async function streamOverWebSocket(key, stream, onEvent, onEnd) {
  const context = new AudioContext({ sampleRate: RATE });
  let capture, socket;
  try {
    await context.audioWorklet.addModule("/ui/capture.js");
    capture = new AudioWorkletNode(context, "capture");
    context.createMediaStreamSource(stream).connect(capture);
    socket = await openSocket(key, onEvent);
  } catch (caught) {
    context.close();
    throw caught;
  }
  let pending = [];
  let count = 0;
  capture.port.onmessage = ({ data }) => {
    pending.push(data);
    count += data.length;
    if (count < APPEND_SAMPLES || socket.readyState !== WebSocket.OPEN) return;
    socket.send(JSON.stringify({ type: "input_audio_buffer.append", audio: pcm16(pending, count) }));
    pending = [];
    count = 0;
  };
  socket.onclose = (event) => onEnd(closed(event));
  return {
    close() {
      socket.onclose = null;
      socket.close();
      context.close();
    },
  };
}

// Browsers cannot set headers on a WebSocket: the key goes as a subprotocol, as OpenAI's does.
function openSocket(key, onEvent) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const url = `${scheme}//${location.host}/v1/realtime?intent=transcription`;
  const socket = new WebSocket(url, ["realtime", `openai-insecure-api-key.${key}`]);
  socket.onmessage = ({ data }) => onEvent(JSON.parse(data));
  return new Promise((resolve, reject) => {
    socket.onopen = () => resolve(socket);
    socket.onclose = (event) => reject(new APIError(0, closed(event)));
  });
}

function closed(event) {
  return `The server closed the session (${event.code}${event.reason ? `: ${event.reason}` : ""}).`;
}

// Float32 blocks in -1..1 as base64 of 16-bit little-endian PCM.
function pcm16(blocks, count) {
  const bytes = new Uint8Array(count * 2);
  const view = new DataView(bytes.buffer);
  let at = 0;
  for (const block of blocks) {
    for (const sample of block) {
      view.setInt16(at, Math.max(-1, Math.min(1, sample)) * 0x7fff, true);
      at += 2;
    }
  }
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}
