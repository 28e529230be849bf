// The playground: the server's state, the API key when one is needed, and the two views.

import { APIError, DIARIZE, call, storeKey, storedKey } from "./api.js";
import { setUpFiles } from "./files.js";
import { setUpJobs } from "./jobs.js";
import { setUpLive } from "./live.js";

const STATES = {
  ok: "Ready",
  loading: "Loading the model",
  down: "The model is restarting",
  stopping: "The server is stopping",
};

let health = {};

const page = {
  aligner: () => health.aligner?.status === "ok",
  refused(caught) {
    if (caught instanceof APIError && caught.status === 401) askForKey(caught.message);
  },
};

function askForKey(message) {
  document.getElementById("key-panel").hidden = false;
  document.getElementById("key-error").textContent = message || "";
  document.getElementById("key").focus();
}

async function checkKey() {
  try {
    const models = (await (await call("/v1/models")).json()).data.map((model) => model.id);
    for (const element of document.querySelectorAll("[data-speakers]")) {
      element.hidden = !models.includes(DIARIZE);
    }
    document.getElementById("key-panel").hidden = true;
    return true;
  } catch (caught) {
    if (caught instanceof APIError && caught.status === 401) {
      askForKey(storedKey() ? caught.message : "");
      return false;
    }
    return true; // not a key problem: the status line says what is wrong
  }
}

async function poll() {
  const line = document.getElementById("status");
  try {
    const response = await fetch("/health", { cache: "no-store" });
    health = await response.json();
    const words = STATES[health.status] || health.status;
    const where = health.device ? ` on ${health.device}` : "";
    const aligner = health.aligner ? `; word timestamps ${health.aligner.status === "ok" ? "on" : health.aligner.status}` : "";
    line.textContent = `${words}: ${health.model}${where}${aligner}`;
    line.dataset.state = health.status;
  } catch {
    health = {};
    line.textContent = "The server cannot be reached.";
    line.dataset.state = "unreachable";
  }
  setTimeout(poll, health.status === "ok" ? 10_000 : 2_000);
}

async function fillLanguages() {
  const languages = await (await fetch("/ui/languages.json")).json();
  for (const select of document.querySelectorAll("select[data-languages]")) {
    for (const { code, name } of languages) {
      select.append(new Option(`${name} (${code})`, code));
    }
  }
}

function setUpTabs() {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  const choose = (tab) => {
    for (const each of tabs) {
      const chosen = each === tab;
      each.setAttribute("aria-selected", String(chosen));
      each.tabIndex = chosen ? 0 : -1;
      document.getElementById(each.getAttribute("aria-controls")).hidden = !chosen;
    }
    tab.focus();
  };
  tabs.forEach((tab, index) => {
    tab.addEventListener("click", () => choose(tab));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (step) choose(tabs[(index + step + tabs.length) % tabs.length]);
      if (event.key === "Home") choose(tabs[0]);
      if (event.key === "End") choose(tabs[tabs.length - 1]);
    });
  });
}

document.getElementById("key-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  storeKey(document.getElementById("key").value.trim(), document.getElementById("remember").checked);
  if (await checkKey()) document.getElementById("key").value = "";
});

setUpTabs();
setUpFiles(page, setUpJobs(page));
setUpLive(page);
poll();
checkKey();
fillLanguages();
