// A transcript's segments shown against its recording: each a button that plays from there,
// its speaker labelled, its words (when timed) highlighted as they play. The File view's
// answer and a batch job's are shown alike.

import { clock } from "./api.js";

const COLOURS = 8; // speaker colours in style.css, one per speaker in order of first speech

export class Segments {
  constructor(list, note, player) {
    this.list = list;
    this.note = note;
    this.player = player;
    this.words = []; // [{start, end, element}] of the shown words, in order
    player.addEventListener("timeupdate", () => this.follow());
  }

  clear() {
    this.list.replaceChildren();
    this.note.textContent = "";
    this.words = [];
  }

  // The recording to play: a file picked here or one fetched from the server, kept in memory.
  // None (`null`) leaves the player empty: an empty `src` would load the page itself.
  load(blob) {
    if (this.player.src) URL.revokeObjectURL(this.player.src);
    if (blob) this.player.src = URL.createObjectURL(blob);
    else this.player.removeAttribute("src");
  }

  // `answer` is verbose_json or diarized_json: segments with times, and speakers when labelled.
  show(answer) {
    this.clear();
    const segments = answer.segments || [];
    const timed = answer.words || [];
    const speakers = [...new Set(segments.map((segment) => segment.speaker).filter(Boolean))];
    const who = speakers.length ? `, ${speakers.length} speaker${speakers.length > 1 ? "s" : ""}` : "";
    this.note.textContent = segments.length
      ? `${segments.length} segment${segments.length > 1 ? "s" : ""}${who}${timed.length ? ", words timed by the aligner" : ""}. Choose one to play it.`
      : "No speech was heard.";
    for (const segment of segments) {
      const inside = timed.filter((w) => w.start >= segment.start - 0.05 && w.end <= segment.end + 0.05);
      this.list.append(this.item(segment, inside, speakers));
    }
  }

  item(segment, inside, speakers) {
    const item = document.createElement("li");
    const seek = document.createElement("button");
    seek.type = "button";
    seek.className = "seek";
    seek.textContent = `${clock(segment.start)} – ${clock(segment.end)}`;
    seek.setAttribute("aria-label", `Play from ${clock(segment.start)}`);
    seek.addEventListener("click", () => {
      this.player.currentTime = segment.start;
      this.player.play().catch(() => {}); // a browser that refuses to play still seeks
    });
    const text = document.createElement("span");
    text.className = "text";
    if (inside.length) {
      inside.forEach((word, index) => {
        const span = document.createElement("span");
        span.className = "word";
        span.textContent = word.word;
        text.append(...(index ? [" ", span] : [span]));
        this.words.push({ start: word.start, end: word.end, element: span });
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
    return item;
  }

  follow() {
    const now = this.player.currentTime;
    for (const item of this.list.children) {
      item.classList.toggle("playing", now >= +item.dataset.start && now < +item.dataset.end);
    }
    for (const word of this.words) {
      const current = now >= word.start && now < word.end;
      word.element.classList.toggle("current", current);
      if (current) word.element.setAttribute("aria-current", "true");
      else word.element.removeAttribute("aria-current");
    }
  }
}
