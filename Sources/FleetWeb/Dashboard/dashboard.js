// The dashboard's script: the page's DOM, blefleet-web's event stream and its /rpc calls.
// What is shown is decided in view.mjs; every string from the daemon goes into the page as
// text (textContent), never as markup.
import {
  addLive, bannerOf, fleetResultView, fmt, ledView, outcomeOf, plot, sensorOrder, sensorsOf, seenText, summaryText,
  toneOf, viewer, WINDOW_MS,
} from "./view.mjs";

const $ = (id) => document.getElementById(id);
const grid = $("boards"), banner = $("daemon-banner"), results = $("results");
const cardTemplate = $("card-template").content.firstElementChild;
const sensorTemplate = $("sensor-template").content.firstElementChild;

const cards = new Map();   // address -> card record
const series = new Map();  // "address|sensor" -> {hist: [[ms, value]], live: [[ms, value]]}
const dirty = new Set();   // cards whose plots wait to be drawn again
let daemonUp = null, linkUp = false, linkLostTimer = 0, daemonReason = "";
let flushTimer = 0, rpcSeq = 0, historyGeneration = 0;
window.__loadedOnce = true;
// Who is looking, and whether they may switch (blefleet-web's /me, as data): a read-only
// user's page shows the fleet only. Until it is known, nothing can be switched.
let readOnly = true;

// --- cards ---------------------------------------------------------------------------

function makeCard(address) {
  const el = cardTemplate.cloneNode(true);
  el.dataset.address = address;
  const f = (name) => el.querySelector('[data-field="' + name + '"]');
  const rec = { address, el, board: { address }, sensors: new Map(), list: el.querySelector(".sensors"),
    name: f("name"), realname: f("realname"), state: f("state"), addressEl: f("address"), adapter: f("adapter"),
    rssi: f("rssi"), seen: f("seen"), led: f("led"), desired: f("desired"), note: f("note"), sw: el.querySelector(".switch"),
    identify: el.querySelector(".identify"), noteTimer: 0 };
  rec.addressEl.textContent = address;
  applyRole(rec);
  rec.sw.addEventListener("click", () => { if (!readOnly) toggleLed(rec); });
  rec.identify.addEventListener("click", () => { if (!readOnly) identify(rec); });
  cards.set(address, rec);
  return rec;
}

// A card's controls as the viewer's role allows.
function applyRole(rec) {
  rec.sw.disabled = readOnly;
  rec.sw.title = readOnly ? "read-only: a user with the control role switches LEDs" : "";
  rec.identify.hidden = readOnly;
}

function setText(el, text) { if (el.textContent !== text) el.textContent = text; }

function setState(rec, state) {
  rec.board.state = state;
  setText(rec.state, state || "?");
  rec.el.dataset.tone = toneOf(state);
  setText(rec.seen, seenText(state, rec.board.lastSeen));
}

function setLed(rec, led, desired) {
  rec.board.led = led;
  if (desired !== undefined) rec.board.desiredLed = desired;
  const view = ledView(led, rec.board.desiredLed);
  setText(rec.led, view.text);
  rec.sw.setAttribute("aria-checked", view.checked);
  setText(rec.desired, view.desired);
  rec.sw.setAttribute("aria-label", "LED of " + (rec.board.alias || rec.board.name || rec.address));
}

function sensorRow(rec, name, unit, deviceClass) {
  let row = rec.sensors.get(name);
  if (!row) {
    const el = sensorTemplate.cloneNode(true);
    row = { name, el, value: el.querySelector(".value"), unit: el.querySelector(".unit"),
      path: el.querySelector("path"), svg: el.querySelector("svg"), range: el.querySelector(".range") };
    row.value.dataset.sensor = name;
    el.dataset.sensorRow = name;
    el.querySelector(".sname").textContent = name;
    // Keep the profile's order: temperature first, then by name.
    let before = null;
    for (const [other, r] of rec.sensors) if (sensorOrder(name, other) < 0 && (!before || sensorOrder(other, before.name) < 0)) before = r;
    rec.list.insertBefore(el, before ? before.el : null);
    rec.sensors.set(name, row);
  }
  if (unit) { row.unitText = unit; setText(row.unit, unit); }
  return row;
}

function setSensor(rec, name, value, unit, at) {
  const row = sensorRow(rec, name, unit);
  setText(row.value, fmt(value, row.decimals));
  if (typeof value === "number" && isFinite(value)) {
    addLiveReading(rec.address, name, at, value);
    markDirty(rec);
  }
}

// `board` is a whole BOARD (snapshot, `board` event) unless `partial`.
function applyBoard(board, isNew, partial) {
  if (!board || typeof board.address !== "string") return null;
  let rec = cards.get(board.address);
  if (!rec) { rec = makeCard(board.address); isNew = true; }
  const b = rec.board;
  // A whole board (boards.list's) replaces the copy: members it leaves out are unknown now
  // (an alias removed, no signal heard); a partial one only adds.
  if (!partial) for (const k of Object.keys(b)) if (!(k in board)) delete b[k];
  for (const k of Object.keys(board)) b[k] = board[k];
  setText(rec.name, b.alias || b.name || b.address);
  setText(rec.realname, b.alias && b.name && b.alias !== b.name ? b.name : "");
  setText(rec.adapter, b.adapter || "");
  setText(rec.rssi, typeof b.rssi === "number" ? b.rssi + " dBm" : "");
  setState(rec, b.state);
  setLed(rec, b.led === true || b.led === false ? b.led : null, b.desiredLed);
  const s = sensorsOf(board);
  const now = Date.now();
  if (!partial) {
    for (const [name, row] of rec.sensors) if (!(name in s)) { row.el.remove(); rec.sensors.delete(name); }
  }
  for (const name of Object.keys(s).sort(sensorOrder)) {
    const info = s[name];
    const row = sensorRow(rec, name, info.unit, info.deviceClass);
    if (typeof info.decimals === "number") row.decimals = info.decimals;
    setText(row.value, fmt(info.value, row.decimals));
    if (typeof info.value === "number") {
      addLiveReading(rec.address, name, now - (typeof info.ageMs === "number" ? info.ageMs : 0), info.value);
    }
  }
  markDirty(rec);
  if (isNew && !rec.el.isConnected) insertSorted(rec);
  return rec;
}

function insertSorted(rec) {
  let before = null;
  for (const el of grid.children) if (el.dataset.address > rec.address) { before = el; break; }
  grid.insertBefore(rec.el, before);
  $("empty").hidden = true;
}

function removeCard(address) {
  const rec = cards.get(address);
  if (!rec) return;
  rec.el.remove();
  cards.delete(address);
  dirty.delete(rec);
  scheduleFlush();
}

// --- plots -----------------------------------------------------------------------------

function seriesOf(address, name) {
  const key = address + "|" + name;
  let s = series.get(key);
  if (!s) series.set(key, s = { hist: [], live: [] });
  return s;
}

function addLiveReading(address, name, at, value) {
  addLive(seriesOf(address, name).live, at, value);
}

function markDirty(rec) { dirty.add(rec); scheduleFlush(); }

function scheduleFlush() { if (!flushTimer) flushTimer = setTimeout(flush, 400); }

function flush() {
  flushTimer = 0;
  const now = Date.now();
  for (const rec of dirty) for (const row of rec.sensors.values()) drawPlot(rec, row, now);
  dirty.clear();
  updateSummary();
}

function drawPlot(rec, row, now) {
  const s = series.get(rec.address + "|" + row.name);
  const view = plot(s ? s.hist : [], s ? s.live : [], now, row.unitText, row.name);
  row.path.setAttribute("d", view.d);
  setText(row.range, view.range);
  if (view.label) row.svg.setAttribute("aria-label", view.label);
}

// The last hours of each sensor, once per snapshot; live points extend them. A daemon
// without history (-32011) leaves the live points alone.
async function loadHistory() {
  const generation = ++historyGeneration;
  const names = new Set();
  for (const rec of cards.values()) for (const name of rec.sensors.keys()) names.add(name);
  const since = new Date(Date.now() - WINDOW_MS).toISOString().replace(/\.\d+Z$/, "Z");
  await Promise.all([...names].map(async (sensor) => {
    let result;
    try {
      result = await rpc("history.read", { select: "all", sensor, since, resolution: "5m" });
    } catch (e) {
      return;
    }
    if (generation !== historyGeneration || !result || !Array.isArray(result.boards)) return;
    for (const b of result.boards) {
      if (!b || !Array.isArray(b.points)) continue;
      const s = seriesOf(b.address, sensor);
      s.hist = b.points.map((p) => [Date.parse(p.time), p.value])
        .filter((p) => isFinite(p[0]) && typeof p[1] === "number");
      const rec = cards.get(b.address);
      if (rec) dirty.add(rec);
    }
    scheduleFlush();
  }));
}

// --- the header, the banner --------------------------------------------------------------

function updateSummary() {
  setText($("summary"), summaryText([...cards.values()].map((rec) => rec.board), daemonUp));
  $("empty").hidden = !(daemonUp && cards.size === 0);
}

function showBanner() {
  const view = bannerOf({ linkUp, linkLost: linkLostTimer === -1, daemonUp, boards: cards.size, reason: daemonReason });
  setText($("banner-text"), view.text);
  setText($("banner-reason"), view.reason);
  banner.hidden = !view.down;
  document.body.classList.toggle("stale", view.down);
  updateSummary();
}

// --- events ------------------------------------------------------------------------------

function onSnapshot(snap) {
  if (!snap || typeof snap !== "object") return;
  if (snap.version) setText($("version"), "blefleet " + snap.version);
  if (!snap.up) {
    daemonUp = false;
    daemonReason = snap.reason || "";
    showBanner();
    return;
  }
  daemonUp = true;
  daemonReason = "";
  // Rebuild every card from the snapshot (in one go: one layout).
  const boards = Array.isArray(snap.boards) ? snap.boards : [];
  const keep = new Set(boards.map((b) => b && b.address));
  for (const address of [...cards.keys()]) if (!keep.has(address)) removeCard(address);
  const fragment = document.createDocumentFragment();
  for (const board of boards) {
    const rec = cards.get(board && board.address) || (board && typeof board.address === "string" ? makeCard(board.address) : null);
    if (!rec) continue;
    rec.board = { address: rec.address };
    applyBoard(board, false);
    fragment.appendChild(rec.el);
  }
  grid.replaceChildren(fragment);
  showBanner();
  flush();
  if (window.__firstPaintMs === undefined) {
    window.__snapshotRenderedMs = performance.now();
    const mark = () => { if (window.__firstPaintMs === undefined) window.__firstPaintMs = performance.now(); };
    if (document.visibilityState === "visible") requestAnimationFrame(() => setTimeout(mark, 0));
    else mark();
  }
  loadHistory();
}

function onFleet(ev) {
  if (!ev || typeof ev !== "object") return;
  const data = ev.data && typeof ev.data === "object" ? ev.data : {};
  // Plotted at this browser's clock when it came (the event's own time has whole seconds,
  // and the two clocks need not agree): delivery takes milliseconds.
  const at = Date.now();
  if (ev.topic === "adapter") {
    setText($("adapter-note"), data.powered === false ? "An adapter is powered off" : "");
    return;
  }
  if (typeof ev.address !== "string") return;
  let rec = cards.get(ev.address);
  if (ev.topic === "boards") {
    if (data.event === "removed") { removeCard(ev.address); return; }
    if (!rec) rec = applyBoard({ address: ev.address, name: data.name || undefined, state: data.state || "discovered" }, true, true);
    if (data.event === "state" && typeof data.state === "string") setState(rec, data.state);
    scheduleFlush();
    return;
  }
  if (!rec) return;
  if (ev.topic === "led") {
    if (typeof data.on === "boolean") setLed(rec, data.on);
    scheduleFlush();
  } else if (ev.topic === "temperature") {
    if (typeof data.celsius === "number") setSensor(rec, "temperature", data.celsius, rec.sensors.get("temperature") ? undefined : "°C", at);
  } else if (ev.topic === "sensor") {
    if (typeof data.sensor === "string") setSensor(rec, data.sensor, data.value, data.unit, at);
  }
}

function parse(e) { try { return JSON.parse(e.data); } catch (_) { return null; } }

let source = null;
function connect() {
  if (source) source.close();
  source = new EventSource("events");
  source.addEventListener("open", () => {
    linkUp = true;
    clearTimeout(linkLostTimer);
    linkLostTimer = 0;
    showBanner();
  });
  source.addEventListener("snapshot", (e) => onSnapshot(parse(e)));
  source.addEventListener("daemon", (e) => {
    const d = parse(e);
    if (!d) return;
    daemonUp = !!d.up;
    daemonReason = d.reason || "";
    showBanner();
  });
  source.addEventListener("fleet", (e) => onFleet(parse(e)));
  // A board read again after it changed (blefleet-web sends it after state and LED events).
  source.addEventListener("board", (e) => {
    const b = parse(e);
    if (b && daemonUp) { applyBoard(b, !cards.has(b.address)); scheduleFlush(); }
  });
  source.addEventListener("error", () => {
    linkUp = false;
    // A short blip (the stream being renewed) shows nothing; a longer one shows the banner.
    if (!linkLostTimer) linkLostTimer = setTimeout(() => { linkLostTimer = -1; showBanner(); }, 2000);
    if (source.readyState === EventSource.CLOSED) setTimeout(connect, 2000);
  });
}

// --- calls -------------------------------------------------------------------------------

async function rpc(method, params) {
  const response = await fetch("rpc", {
    method: "POST", headers: { "Content-Type": "application/json" }, credentials: "same-origin",
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcSeq, method, params }) });
  if (!response.ok) throw new Error("HTTP " + response.status + ": " + (await response.text()).trim());
  const reply = await response.json();
  if (reply.error) {
    const error = new Error(reply.error.message || "error " + reply.error.code);
    error.code = reply.error.code;
    throw error;
  }
  return reply.result;
}

function setNote(rec, text, bad) {
  clearTimeout(rec.noteTimer);
  setText(rec.note, text);
  rec.note.classList.toggle("bad", !!bad);
  if (text && !bad) rec.noteTimer = setTimeout(() => setText(rec.note, ""), 15000);
}

async function toggleLed(rec) {
  if (rec.sw.getAttribute("aria-busy") === "true") return;
  const on = rec.board.led !== true;
  rec.sw.setAttribute("aria-busy", "true");
  setNote(rec, "switching " + (on ? "on" : "off") + "…");
  try {
    const result = await rpc("led.set", { select: rec.address, on });
    const r = (result.results || []).find((x) => x.address === rec.address) || (result.results || [])[0];
    if (!r) { setNote(rec, "no such board", true); return; }
    const o = outcomeOf(r);
    if (o.kind === "ok") { setLed(rec, on); setNote(rec, ""); }
    else setNote(rec, o.text, o.kind === "failed");
  } catch (e) {
    setNote(rec, "failed: " + e.message, true);
  } finally {
    rec.sw.removeAttribute("aria-busy");
    scheduleFlush();
  }
}

// The board blinks its LED for a few seconds (boards.identify), then has it as wanted.
async function identify(rec) {
  if (rec.identify.disabled) return;
  rec.identify.disabled = true;
  setNote(rec, "blinking…");
  try {
    const result = await rpc("boards.identify", { select: rec.address });
    const r = (result.results || []).find((x) => x.address === rec.address) || (result.results || [])[0];
    if (!r) { setNote(rec, "no such board", true); return; }
    const o = outcomeOf(r);
    setNote(rec, o.kind === "ok" ? "identified: it blinked" : o.text, o.kind === "failed");
  } catch (e) {
    setNote(rec, "failed: " + e.message, true);
  } finally {
    rec.identify.disabled = false;
  }
}

async function allLeds(on) {
  const buttons = [$("all-on"), $("all-off")];
  const label = on ? "All on" : "All off";
  buttons.forEach((b) => { b.disabled = true; });
  const heading = document.createElement("h2");
  heading.textContent = label + ": switching every board…";
  results.dataset.state = "running";
  results.replaceChildren(heading);
  results.hidden = false;
  try {
    const result = await rpc("led.set", { select: "all", on });
    const view = fleetResultView(label, result);
    const list = document.createElement("ul");
    for (const item of view.items) {
      const li = document.createElement("li");
      li.dataset.address = item.address;
      li.dataset.result = item.kind;
      const name = document.createElement("span");
      name.className = "rname";
      name.textContent = item.name;
      const outcome = document.createElement("span");
      outcome.className = "outcome";
      outcome.textContent = item.text;
      li.append(name, outcome);
      list.appendChild(li);
      const rec = cards.get(item.address);
      if (rec && item.kind === "ok") setLed(rec, on);
    }
    heading.textContent = view.heading;
    results.dataset.state = "done";
    results.appendChild(list);
    if (view.empty) {
      const p = document.createElement("p");
      p.textContent = "No boards are known.";
      results.appendChild(p);
    }
  } catch (e) {
    heading.textContent = label + " failed: " + e.message;
    results.dataset.state = "failed";
  } finally {
    buttons.forEach((b) => { b.disabled = false; });
    scheduleFlush();
  }
}

$("all-on").addEventListener("click", () => allLeds(true));
$("all-off").addEventListener("click", () => allLeds(false));
// Plots move with the clock even when nothing comes.
setInterval(() => { for (const rec of cards.values()) dirty.add(rec); scheduleFlush(); }, 60000);
window.__fleet = { cards, series };
// Who is looking, asked while the stream opens: until it answers every card is read-only.
async function whoIsLooking() {
  let who = viewer(null);
  try {
    const response = await fetch("me", { credentials: "same-origin", cache: "no-store" });
    if (response.ok) who = viewer(await response.json());
  } catch (_) {
    // Read-only it stays: nothing to switch without a role.
  }
  readOnly = who.readOnly;
  setText($("who"), who.text);
  document.querySelector(".actions").hidden = readOnly;
  for (const rec of cards.values()) applyRole(rec);
}

connect();
whoIsLooking();
