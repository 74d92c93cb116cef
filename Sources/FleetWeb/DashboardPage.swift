/// The dashboard (`GET /`): one self-contained page, no external assets.
enum DashboardPage {
    /// The page for `user`: their name and role on `<body>` (a read-only user's page has no
    /// switches to press), as attribute text.
    static func html(for user: WebUser) -> String {
        func attribute(_ text: String) -> String {
            var escaped = ""
            for character in text {
                switch character {
                case "&": escaped += "&amp;"
                case "<": escaped += "&lt;"
                case ">": escaped += "&gt;"
                case "\"": escaped += "&quot;"
                case "'": escaped += "&#39;"
                default: escaped.append(character)
                }
            }
            return escaped
        }
        var page = html
        if let body = page.firstRange(of: "<body>") {
            page.replaceSubrange(body, with: "<body data-user=\"\(attribute(user.name))\" data-role=\"\(user.role.rawValue)\">")
        }
        return page
    }

    static let html: String = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="dark">
<title>blefleet</title>
<link rel="icon" href="data:,">
<style>
:root {
  --bg: #000; --panel: #121212; --line: #3a3a3a; --text: #fff; --dim: #c8c8c8;
  --ok: #3ddc84; --warn: #ffc400; --bad: #ff5252; --off: #8a8a8a; --accent: #5ab0ff;
  font-size: clamp(16px, 0.55vw + 12px, 26px);
}
* { box-sizing: border-box; }
html, body { margin: 0; background: var(--bg); color: var(--text);
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; line-height: 1.3; }
header.top { display: flex; flex-wrap: wrap; align-items: center; gap: .6rem 1.2rem; padding: .8rem 1rem;
  border-bottom: 2px solid var(--line); position: sticky; top: 0; background: var(--bg); z-index: 2; }
header.top h1 { font-size: 1.5rem; margin: 0; letter-spacing: .02em; }
#summary { color: var(--dim); font-size: 1rem; flex: 1 1 auto; }
#adapter-note { color: #000; background: var(--warn); font-weight: 700; padding: .1rem .5rem; border-radius: .3rem; }
#adapter-note:empty { display: none; }
.actions { display: flex; gap: .6rem; }
.actions[hidden] { display: none; }
#who { color: var(--dim); }
button { font: inherit; color: inherit; cursor: pointer; }
.big { font-size: 1.1rem; font-weight: 700; padding: .55rem 1.1rem; border-radius: .5rem;
  border: 2px solid var(--text); background: #1e1e1e; min-height: 2.75rem; }
.big:hover, .big:focus-visible { background: #333; }
.big:disabled { opacity: .5; cursor: progress; }
#all-on { border-color: var(--warn); }
#daemon-banner { margin: 0; padding: .9rem 1rem; background: var(--bad); color: #000; font-weight: 700;
  font-size: 1.15rem; border-bottom: 3px solid #000; }
#daemon-banner[hidden] { display: none; }
#daemon-banner small { display: block; font-weight: 400; font-size: .85rem; margin-top: .2rem; word-break: break-word; }
#results { margin: .8rem 1rem 0; padding: .6rem .9rem; border: 2px solid var(--line); border-radius: .5rem;
  background: var(--panel); }
#results[hidden] { display: none; }
#results h2 { margin: 0 0 .4rem; font-size: 1.05rem; }
#results ul { list-style: none; margin: 0; padding: 0; display: grid; gap: .15rem 1.2rem;
  grid-template-columns: repeat(auto-fill, minmax(15rem, 1fr)); }
#results li[data-result="ok"] .outcome { color: var(--ok); }
#results li[data-result="failed"] .outcome { color: var(--bad); }
#results li[data-result="pending"] .outcome { color: var(--warn); }
#results .rname { font-weight: 700; margin-right: .4rem; }
main { padding: 1rem; }
#boards { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fill, minmax(min(100%, 17rem), 1fr)); }
#empty { color: var(--dim); font-size: 1.2rem; }
#empty[hidden] { display: none; }
.card { background: var(--panel); border: 2px solid var(--line); border-left: .5rem solid var(--off);
  border-radius: .6rem; padding: .7rem .9rem .8rem; display: flex; flex-direction: column; gap: .45rem; min-width: 0; }
.card[data-tone="ok"] { border-left-color: var(--ok); }
.card[data-tone="warn"] { border-left-color: var(--warn); }
.card[data-tone="bad"] { border-left-color: var(--bad); }
.stale .card { opacity: .45; }
.card .head { display: flex; align-items: baseline; justify-content: space-between; gap: .5rem; }
.card h2 { margin: 0; font-size: 1.3rem; overflow-wrap: anywhere; }
.state { font-weight: 700; font-size: 1rem; white-space: nowrap; }
.card[data-tone="ok"] .state { color: var(--ok); }
.card[data-tone="warn"] .state { color: var(--warn); }
.card[data-tone="bad"] .state { color: var(--bad); }
.card[data-tone="none"] .state { color: var(--dim); }
.meta { color: var(--dim); font-size: .85rem; overflow-wrap: anywhere; }
.meta span:empty { display: none; }
.meta span:not(:empty) ~ span:not(:empty)::before { content: " · "; }
.ledrow { display: flex; align-items: center; gap: .7rem; font-size: 1rem; }
.switch { display: inline-flex; align-items: center; gap: .5rem; background: none; border: 0; padding: .2rem 0;
  min-height: 2.5rem; }
.track { width: 3.2rem; height: 1.7rem; border-radius: 1rem; background: #444; border: 2px solid var(--dim);
  position: relative; flex: none; }
.track::after { content: ""; position: absolute; top: .15rem; left: .15rem; width: 1.2rem; height: 1.2rem;
  border-radius: 50%; background: #fff; transition: left .12s; }
.switch[aria-checked="true"] .track { background: var(--warn); border-color: var(--warn); }
.switch[aria-checked="true"] .track::after { left: 1.65rem; background: #000; }
.switch[aria-checked="mixed"] .track::after { left: .85rem; background: var(--off); }
.switch:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.switch[aria-busy="true"] { opacity: .6; cursor: progress; }
.ledtext { font-weight: 700; min-width: 1.8rem; text-align: left; }
.desired { color: var(--warn); font-size: .85rem; }
.identify { margin-left: auto; font-size: .9rem; padding: .3rem .7rem; border-radius: .4rem; border: 1px solid var(--dim);
  background: #1e1e1e; min-height: 2.2rem; }
.identify:hover, .identify:focus-visible { background: #333; }
.identify:disabled { opacity: .5; cursor: progress; }
.identify[hidden] { display: none; }
.note { font-size: .85rem; color: var(--warn); overflow-wrap: anywhere; }
.note:empty { display: none; }
.note.bad { color: var(--bad); }
.card:not([data-tone="ok"]) .sensors { opacity: .6; }
.sensors { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: .4rem; }
.sensor { display: grid; grid-template-columns: auto 1fr; grid-template-areas: "label label" "value plot";
  align-items: end; column-gap: .7rem; }
.sname { grid-area: label; color: var(--dim); font-size: .85rem; }
.reading { grid-area: value; white-space: nowrap; }
.value { font-size: 2.1rem; font-weight: 800; font-variant-numeric: tabular-nums; }
.unit { font-size: 1.05rem; margin-left: .15rem; color: var(--dim); }
.plotbox { grid-area: plot; min-width: 0; }
.plot { display: block; width: 100%; height: 2.8rem; }
.plot path { fill: none; stroke: var(--accent); stroke-width: 2; vector-effect: non-scaling-stroke;
  stroke-linejoin: round; stroke-linecap: round; }
.range { display: block; font-size: .7rem; color: var(--dim); text-align: right; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; }
footer { color: var(--dim); font-size: .8rem; padding: 0 1rem 1rem; }
@media (max-width: 30rem) {
  header.top { position: static; }
  .actions { width: 100%; }
  .actions .big { flex: 1; }
}
@media (prefers-reduced-motion: reduce) { .track::after { transition: none; } }
</style>
</head>
<body>
<header class="top">
  <h1>blefleet</h1>
  <span id="summary" aria-live="polite">connecting…</span>
  <span id="adapter-note" role="status"></span>
  <span id="who"></span>
  <div class="actions">
    <button type="button" class="big" id="all-on">All on</button>
    <button type="button" class="big" id="all-off">All off</button>
  </div>
</header>
<p id="daemon-banner" role="alert" hidden><span id="banner-text">blefleetd is not reachable.</span><small id="banner-reason"></small></p>
<section id="results" aria-live="polite" hidden></section>
<main>
  <p id="empty" hidden>No boards known yet. blefleetd adds boards as it hears them advertise (blectl scan).</p>
  <div id="boards"></div>
</main>
<footer><span id="version"></span></footer>
<template id="card-template">
  <article class="card" data-tone="none">
    <div class="head"><h2 data-field="name"></h2><span class="state" data-field="state"></span></div>
    <div class="meta"><span data-field="realname"></span><span data-field="address"></span><span data-field="adapter"></span><span data-field="rssi"></span><span data-field="seen"></span></div>
    <div class="ledrow">LED
      <button type="button" class="switch" role="switch" aria-checked="mixed"><span class="track"></span><span class="ledtext" data-field="led">?</span></button>
      <span class="desired" data-field="desired"></span>
      <button type="button" class="identify" title="Blink this board's LED for a few seconds to find it">Identify</button>
    </div>
    <div class="note" data-field="note"></div>
    <ul class="sensors"></ul>
  </article>
</template>
<template id="sensor-template">
  <li class="sensor">
    <span class="sname"></span>
    <span class="reading"><span class="value">–</span><span class="unit"></span></span>
    <span class="plotbox"><svg class="plot" viewBox="0 0 240 48" preserveAspectRatio="none" role="img"><path d=""></path></svg><span class="range"></span></span>
  </li>
</template>
<script>
"use strict";
(function () {
  // Every string from the daemon goes into the page as text (textContent), never as markup.
  const $ = (id) => document.getElementById(id);
  const grid = $("boards"), banner = $("daemon-banner"), results = $("results");
  const cardTemplate = $("card-template").content.firstElementChild;
  const sensorTemplate = $("sensor-template").content.firstElementChild;
  const WINDOW_MS = 3 * 3600 * 1000;   // the plots' longest span: the last 3 hours
  const MIN_WINDOW_MS = 10 * 60 * 1000; // and their shortest, while less is known
  const STEP_MS = 10 * 1000;            // live points kept at most this often (the last one moves)
  const TONES = { ready: "ok", resolving: "warn", connecting: "warn", "backing-off": "warn", disconnecting: "warn",
    failed: "bad", absent: "bad", "waiting-for-adapter": "bad" };

  const cards = new Map();   // address -> card record
  const series = new Map();  // "address|sensor" -> {hist: [[ms, value]], live: [[ms, value]]}
  const dirty = new Set();   // cards whose plots wait to be drawn again
  let daemonUp = null, linkUp = false, linkLostTimer = 0, daemonReason = "";
  let flushTimer = 0, rpcSeq = 0, historyGeneration = 0;
  window.__loadedOnce = true;
  // Who is looking, and whether they may switch: a read-only user's page shows the fleet only.
  const readOnly = document.body.dataset.role === "read-only";
  setText($("who"), (document.body.dataset.user || "") + (readOnly ? " · read-only" : ""));
  if (readOnly) document.querySelector(".actions").hidden = true;

  // A value with the decimals its profile's scale gives it (1001.0 at scale 0.1), else
  // with at most two.
  function fmt(v, decimals) {
    if (typeof v !== "number" || !isFinite(v)) return "–";
    if (typeof decimals === "number" && decimals >= 0 && decimals <= 9) return v.toFixed(decimals);
    return Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100);
  }

  function sensorOrder(a, b) {
    if (a === b) return 0;
    if (a === "temperature") return -1;
    if (b === "temperature") return 1;
    return a < b ? -1 : 1;
  }

  // The sensors a board reports: its profile's (`sensors`), else its temperature alone.
  function sensorsOf(board) {
    const out = {};
    if (board.sensors && typeof board.sensors === "object") {
      for (const name of Object.keys(board.sensors)) out[name] = board.sensors[name] || {};
    }
    if (board.temperature && typeof board.temperature.celsius === "number") {
      const t = out.temperature || (out.temperature = { unit: "°C" });
      if (typeof t.value !== "number") { t.value = board.temperature.celsius; t.ageMs = board.temperature.ageMs; }
    }
    return out;
  }

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
    if (readOnly) {
      rec.sw.disabled = true;
      rec.sw.title = "read-only: a user with the control role switches LEDs";
      rec.identify.hidden = true;
    } else {
      rec.sw.addEventListener("click", () => toggleLed(rec));
      rec.identify.addEventListener("click", () => identify(rec));
    }
    cards.set(address, rec);
    return rec;
  }

  function setText(el, text) { if (el.textContent !== text) el.textContent = text; }

  function setState(rec, state) {
    rec.board.state = state;
    setText(rec.state, state || "?");
    rec.el.dataset.tone = TONES[state] || "none";
    // Where a board is not linked, when it was last heard.
    const seen = Date.parse(rec.board.lastSeen);
    const when = new Date(seen);
    const today = when.toDateString() === new Date().toDateString();
    setText(rec.seen, state !== "ready" && isFinite(seen)
      ? "seen " + (today ? when.toLocaleTimeString() : when.toLocaleString()) : "");
  }

  function setLed(rec, led, desired) {
    rec.board.led = led;
    if (desired !== undefined) rec.board.desiredLed = desired;
    setText(rec.led, led === true ? "on" : led === false ? "off" : "?");
    rec.sw.setAttribute("aria-checked", led === true ? "true" : led === false ? "false" : "mixed");
    const want = rec.board.desiredLed;
    setText(rec.desired, (want === true || want === false) && want !== led ? "wanted " + (want ? "on" : "off") : "");
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
      addLive(rec.address, name, at, value);
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
        addLive(rec.address, name, now - (typeof info.ageMs === "number" ? info.ageMs : 0), info.value);
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

  function addLive(address, name, at, value) {
    const live = seriesOf(address, name).live;
    const n = live.length;
    if (n && at < live[n - 1][0]) return;
    if (n >= 2 && at - live[n - 2][0] < STEP_MS) live[n - 1] = [at, value];
    else live.push([at, value]);
    const oldest = Date.now() - WINDOW_MS;
    while (live.length && live[0][0] < oldest) live.shift();
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
    let pts = [];
    if (s) {
      const lastHist = s.hist.length ? s.hist[s.hist.length - 1][0] : -Infinity;
      pts = s.hist.concat(s.live.filter((p) => p[0] > lastHist));
    }
    const first = pts.length ? pts[0][0] : now;
    const span = Math.min(WINDOW_MS, Math.max(MIN_WINDOW_MS, now - first));
    const t0 = now - span;
    pts = pts.filter((p) => p[0] >= t0);
    if (!pts.length) { row.path.setAttribute("d", ""); setText(row.range, ""); return; }
    let lo = Infinity, hi = -Infinity;
    for (const p of pts) { if (p[1] < lo) lo = p[1]; if (p[1] > hi) hi = p[1]; }
    let a = lo, b = hi;
    if (b - a < 1) { const mid = (a + b) / 2; a = mid - 0.5; b = mid + 0.5; }
    let d = "";
    for (let i = 0; i < pts.length; i++) {
      const x = ((pts[i][0] - t0) / span) * 240;
      const y = 4 + (1 - (pts[i][1] - a) / (b - a)) * 40;
      d += (i ? "L" : "M") + x.toFixed(1) + " " + y.toFixed(1);
    }
    if (pts.length === 1) d += "h-3";
    row.path.setAttribute("d", d);
    const minutes = Math.round(span / 60000);
    const spanText = minutes >= 120 ? Math.round(minutes / 60) + " h" : minutes + " min";
    const unit = row.unitText ? " " + row.unitText : "";
    const text = "last " + spanText + ": " + (lo === hi ? fmt(lo) : fmt(lo) + "–" + fmt(hi)) + unit;
    setText(row.range, text);
    row.svg.setAttribute("aria-label", row.name + ", " + text);
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
    let ready = 0, on = 0;
    for (const rec of cards.values()) {
      if (rec.board.state === "ready") ready++;
      if (rec.board.led === true) on++;
    }
    const n = cards.size;
    let text = n + (n === 1 ? " board" : " boards") + " · " + ready + " ready · " + on + " LED" + (on === 1 ? "" : "s") + " on";
    if (daemonUp === false) text = n ? "blefleetd unreachable · last known: " + text : "blefleetd unreachable";
    else if (daemonUp === null) text = "connecting…";
    setText($("summary"), text);
    $("empty").hidden = !(daemonUp && n === 0);
  }

  function showBanner() {
    let down = false, text = "", reason = "";
    if (!linkUp && linkLostTimer === -1) {
      down = true;
      text = "The dashboard lost its connection to blefleet-web. Reconnecting…";
    } else if (daemonUp === false) {
      down = true;
      text = "blefleetd is not reachable." + (cards.size ? " The boards below are as last seen." : "") +
        " This page follows it again by itself when it is back.";
      reason = daemonReason;
    }
    setText($("banner-text"), text);
    setText($("banner-reason"), reason);
    banner.hidden = !down;
    document.body.classList.toggle("stale", down);
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

  function outcomeOf(r) {
    if (r.ok) return { kind: "ok", text: "ok" + (typeof r.latencyMs === "number" ? " (" + r.latencyMs + " ms)" : "") };
    const message = r.error && r.error.message ? r.error.message : "failed";
    if (r.pending) return { kind: "pending", text: "pending: " + message };
    return { kind: "failed", text: "failed: " + message };
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
      const list = document.createElement("ul");
      for (const r of result.results || []) {
        const o = outcomeOf(r);
        const li = document.createElement("li");
        li.dataset.address = r.address;
        li.dataset.result = o.kind;
        const name = document.createElement("span");
        name.className = "rname";
        name.textContent = r.name || r.address;
        const outcome = document.createElement("span");
        outcome.className = "outcome";
        outcome.textContent = o.text;
        li.append(name, outcome);
        list.appendChild(li);
        const rec = cards.get(r.address);
        if (rec && o.kind === "ok") setLed(rec, on);
      }
      const t = result.totals || {};
      heading.textContent = label + ": " + (t.ok || 0) + " ok, " + (t.failed || 0) + " failed";
      results.dataset.state = "done";
      results.appendChild(list);
      if (!(result.results || []).length) {
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
  connect();
})();
</script>
</body>
</html>
"""#
}
