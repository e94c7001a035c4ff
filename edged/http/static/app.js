// The edged page: type, listen here (streamed WAV), announce on the device, and watch the queue,
// the events (Server-Sent Events read with fetch, so an API key can go in a header) and the cache.
"use strict";

const $ = (id) => document.getElementById(id);
const MAX_EVENTS = 30;
const touched = new Set();
let key = localStorage.getItem("edged-key") || "";

function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({}, options, {headers: headers(options && options.headers)}));
  if (response.status === 401) {
    $("key-card").hidden = false;
    throw new Error("this device needs an API key");
  }
  if (!response.ok) {
    let reason = response.statusText;
    try { reason = (await response.json()).error || reason; } catch (e) { /* not JSON */ }
    throw new Error(reason);
  }
  return response;
}

function say(text) { $("message").textContent = text; }

function settings() {
  const body = {text: $("text").value.trim()};
  if ($("voice").value) body.voice = $("voice").value;
  if ($("speaker").value !== "") body.speaker = $("speaker").value;
  // Unless moved, the sliders leave speed and volume to the device's own settings.
  if (touched.has("speed")) body.speed = parseFloat($("speed").value);
  if (touched.has("volume")) body.volume = parseFloat($("volume").value);
  return body;
}

async function listen() {
  const body = settings();
  if (!body.text) { say("Type something first."); return; }
  const player = $("player");
  say("Speaking…");
  if (!key) {
    // A plain URL streams: the first words play while the rest is being made.
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(body)) query.set(k, String(v));
    player.src = "/api/tts?" + query.toString();
  } else {
    // An <audio> element cannot send a header: fetch the whole WAV with the key instead.
    try {
      const response = await api("/api/tts", {method: "POST", body: JSON.stringify(body),
                                              headers: {"Content-Type": "application/json"}});
      player.src = URL.createObjectURL(await response.blob());
    } catch (err) { say(err.message); return; }
  }
  player.play().catch(() => { /* no sound device or autoplay refused: the controls still work */ });
}

async function announce() {
  const body = settings();
  if (!body.text) { say("Type something first."); return; }
  try {
    const response = await api("/api/say", {method: "POST", body: JSON.stringify(body),
                                            headers: {"Content-Type": "application/json"}});
    const answer = await response.json();
    say("Queued as " + answer.id + " (" + answer.status + ")");
  } catch (err) { say(err.message); }
}

async function control(action) {
  try {
    await api("/api/control", {method: "POST", body: JSON.stringify({action}),
                               headers: {"Content-Type": "application/json"}});
  } catch (err) { say(err.message); }
}

function addEvent(kind, data) {
  const li = document.createElement("li");
  li.className = "ev-" + kind;
  const time = new Date((data.ts || Date.now() / 1000) * 1000).toLocaleTimeString();
  let detail = data.error || "";
  if (kind === "finished" && data.action) detail = data.action;
  else if (kind === "finished") detail = (data.cached ? "cached" : "synthesized") + ", " + data.duration_ms + " ms";
  li.textContent = time + " " + kind + " " + data.id + (detail ? " (" + detail + ")" : "");
  li.dataset.event = kind;
  const list = $("events");
  list.prepend(li);
  while (list.children.length > MAX_EVENTS) list.lastChild.remove();
}

async function followEvents() {
  // Reconnects after a drop or an overflow, as EventSource would.
  for (;;) {
    try {
      const response = await api("/api/events", {});
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, {stream: true});
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          handleMessage(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (err) { /* reconnect below */ }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

function handleMessage(block) {
  let kind = "message", data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) kind = line.slice(6).trim();
    else if (line.startsWith("data:")) data += line.slice(5).trim();
  }
  if (!data) return;
  addEvent(kind, JSON.parse(data));
  refreshState();
}

async function refreshState() {
  try {
    const state = await (await api("/api/state", {})).json();
    $("device").textContent = state.device_id + " · " + state.voice;
    $("state").textContent = state.state + (state.paused ? ", paused" : "");
    $("state").className = "pill " + state.state;
    $("queue").textContent = state.queue + " waiting" + (state.paused ? " (paused)" : "");
    const cache = state.cache || {};
    const hits = cache.hits || {};
    const facts = {
      "entries": cache.entries, "size": ((cache.bytes || 0) / 1e6).toFixed(1) + " MB",
      "hits": (hits.memory || 0) + (hits.disk || 0), "misses": cache.misses,
      "hit ratio": cache.hit_ratio == null ? "–" : Math.round(cache.hit_ratio * 100) + " %",
    };
    const dl = $("cache");
    dl.replaceChildren();
    for (const [name, value] of Object.entries(facts)) {
      const dt = document.createElement("dt"); dt.textContent = name;
      const dd = document.createElement("dd"); dd.textContent = value == null ? "–" : value;
      dl.append(dt, dd);
    }
  } catch (err) { $("state").textContent = "unreachable"; }
}

async function loadVoices() {
  try {
    const {voices} = await (await api("/api/voices", {})).json();
    const select = $("voice");
    select.replaceChildren();
    for (const v of voices) {
      const option = new Option(v.name, v.default ? "" : v.name);
      option.title = v.language || "";
      option.dataset.speakers = JSON.stringify(Array.isArray(v.speakers) ? v.speakers : []);
      select.append(option);
    }
    fillSpeakers();
  } catch (err) { say(err.message); }
}

function fillSpeakers() {
  const option = $("voice").selectedOptions[0];
  const speakers = option ? JSON.parse(option.dataset.speakers || "[]") : [];
  const select = $("speaker");
  select.replaceChildren(new Option("default", ""));
  for (const name of speakers) select.append(new Option(name, name));
  select.disabled = speakers.length === 0;
}

function start() {
  $("listen").addEventListener("click", listen);
  $("announce").addEventListener("click", announce);
  $("voice").addEventListener("change", fillSpeakers);
  for (const id of ["speed", "volume"]) {
    $(id).addEventListener("input", () => { touched.add(id); $(id + "-value").textContent = parseFloat($(id).value).toFixed(id === "speed" ? 1 : 2); });
  }
  for (const button of document.querySelectorAll("[data-action]")) {
    button.addEventListener("click", () => control(button.dataset.action));
  }
  $("player").addEventListener("canplay", () => say("Playing."));
  $("player").addEventListener("error", () => say("The audio could not be played."));
  $("save-key").addEventListener("click", () => {
    key = $("key").value.trim();
    localStorage.setItem("edged-key", key);
    $("key-card").hidden = true;
    loadVoices(); refreshState();
  });
  loadVoices();
  refreshState();
  setInterval(refreshState, 5000);
  followEvents();
}

start();
