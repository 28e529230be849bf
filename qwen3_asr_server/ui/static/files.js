// The File view: a file streamed to text, then its segments (and words) against its playback.

import { APIError, DIARIZE, clock, readEvents, transcribe } from "./api.js";

const EXTENSIONS = { srt: "srt", vtt: "vtt", text: "txt", verbose_json: "json", json: "json" };
const TYPES = { srt: "application/x-subrip", vtt: "text/vtt", text: "text/plain" };
const COLOURS = 8; // speaker colours in style.css, one per speaker in order of first speech

export function setUpFiles(page) {
  const form = document.getElementById("file-form");
  const input = document.getElementById("file");
  const drop = document.getElementById("drop");
  const error = document.getElementById("file-error");
  const result = document.getElementById("result");
  const transcript = document.getElementById("transcript");
  const player = document.getElementById("player");
  const list = document.getElementById("segments");
  const note = document.getElementById("segments-note");
  const download = document.getElementById("download");
  const downloadNote = document.getElementById("download-note");
  const submit = document.getElementById("transcribe");
  let run = null; // what the last transcription asked and got: {file, options, verbose}
  let words = []; // [{start, end, element}] of the shown segments, in order

  for (const name of ["dragenter", "dragover"]) {
    drop.addEventListener(name, (event) => {
      event.preventDefault();
      drop.classList.add("over");
    });
  }
  for (const name of ["dragleave", "drop"]) {
    drop.addEventListener(name, () => drop.classList.remove("over"));
  }
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    if (event.dataTransfer.files.length) {
      input.files = event.dataTransfer.files;
      form.requestSubmit();
    }
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = input.files[0];
    if (!file) return;
    const options = readOptions("file");
    if (document.getElementById("file-speakers").checked) options.model = DIARIZE;
    error.textContent = "";
    submit.disabled = download.disabled = true;
    result.hidden = false;
    transcript.textContent = "";
    transcript.setAttribute("aria-busy", "true");
    list.replaceChildren();
    note.textContent = "";
    downloadNote.textContent = "";
    words = [];
    if (player.src) URL.revokeObjectURL(player.src);
    player.src = URL.createObjectURL(file);
    try {
      await stream(file, options);
      transcript.setAttribute("aria-busy", "false");
      note.textContent = "Finding the segments…";
      const timed = page.aligner();
      const verbose = await (
        await transcribe(file, options, {
          response_format: "verbose_json",
          "timestamp_granularities[]": timed ? ["segment", "word"] : ["segment"],
        })
      ).json();
      run = { file, options, verbose };
      show(verbose);
      download.disabled = false;
    } catch (caught) {
      error.textContent = caught instanceof APIError ? caught.message : String(caught);
      page.refused(caught);
    } finally {
      transcript.setAttribute("aria-busy", "false");
      submit.disabled = false;
    }
  });

  async function stream(file, options) {
    const response = await transcribe(file, options, { stream: "true" });
    await readEvents(response, (event) => {
      if (event.error) throw new APIError(0, event.error.message, event.error.code);
      if (event.type === "transcript.text.delta") transcript.textContent += event.delta;
      if (event.type === "transcript.text.done") transcript.textContent = event.text;
    });
  }

  function show(verbose) {
    const segments = verbose.segments || [];
    const timed = verbose.words || [];
    const speakers = [...new Set(segments.map((segment) => segment.speaker).filter(Boolean))];
    const who = speakers.length ? `, ${speakers.length} speaker${speakers.length > 1 ? "s" : ""}` : "";
    note.textContent = segments.length
      ? `${segments.length} segment${segments.length > 1 ? "s" : ""}${who}${timed.length ? ", words timed by the aligner" : ""}. Choose one to play it.`
      : "No speech was heard.";
    for (const segment of segments) {
      const item = document.createElement("li");
      const seek = document.createElement("button");
      seek.type = "button";
      seek.className = "seek";
      seek.textContent = `${clock(segment.start)} – ${clock(segment.end)}`;
      seek.setAttribute("aria-label", `Play from ${clock(segment.start)}`);
      seek.addEventListener("click", () => {
        player.currentTime = segment.start;
        player.play().catch(() => {}); // a browser that refuses to play still seeks
      });
      const text = document.createElement("span");
      text.className = "text";
      const inside = timed.filter((w) => w.start >= segment.start - 0.05 && w.end <= segment.end + 0.05);
      if (inside.length) {
        inside.forEach((word, index) => {
          const span = document.createElement("span");
          span.className = "word";
          span.textContent = word.word;
          text.append(...(index ? [" ", span] : [span]));
          words.push({ start: word.start, end: word.end, element: span });
        });
      } else {
        text.textContent = segment.text;
      }
      item.dataset.start = segment.start;
      item.dataset.end = segment.end;
      item.append(seek, " ");
      if (segment.speaker) {
        const label = document.createElement("span");
        label.className = "speaker";
        label.textContent = segment.speaker;
        label.dataset.colour = String(speakers.indexOf(segment.speaker) % COLOURS);
        item.append(label, " ");
      }
      item.append(text);
      list.append(item);
    }
  }

  player.addEventListener("timeupdate", () => {
    const now = player.currentTime;
    for (const item of list.children) {
      item.classList.toggle("playing", now >= +item.dataset.start && now < +item.dataset.end);
    }
    for (const word of words) {
      const current = now >= word.start && now < word.end;
      word.element.classList.toggle("current", current);
      if (current) word.element.setAttribute("aria-current", "true");
      else word.element.removeAttribute("aria-current");
    }
  });

  download.addEventListener("click", async () => {
    if (!run) return;
    const format = document.getElementById("file-format").value;
    downloadNote.textContent = "";
    try {
      let content = JSON.stringify(run.verbose, null, 2);
      if (format !== "verbose_json") {
        const answer = await transcribe(run.file, run.options, { response_format: format });
        content = format === "json" ? JSON.stringify(await answer.json(), null, 2) : await answer.text();
      }
      const blob = new Blob([content], { type: TYPES[format] || "application/json" });
      const link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = `${run.file.name.replace(/\.[^.]*$/, "") || "transcript"}.${EXTENSIONS[format]}`;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
      downloadNote.textContent = `Saved ${link.download}.`;
    } catch (caught) {
      downloadNote.textContent = caught instanceof APIError ? caught.message : String(caught);
      page.refused(caught);
    }
  });
}

// Language, prompt and keywords of a view's form (`file-` or `live-` fields).
export function readOptions(prefix) {
  const value = (name) => document.getElementById(`${prefix}-${name}`)?.value.trim() || "";
  return {
    language: value("language"),
    prompt: value("prompt"),
    keywords: value("keywords")
      .split(",")
      .map((keyword) => keyword.trim())
      .filter(Boolean),
  };
}
