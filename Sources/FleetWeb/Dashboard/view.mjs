// What the dashboard shows, as data: no DOM here, so that node's test runner checks it
// (Tests/web/js) as the page's own script uses it (dashboard.js).

export const WINDOW_MS = 3 * 3600 * 1000;   // the plots' longest span: the last 3 hours
export const MIN_WINDOW_MS = 10 * 60 * 1000; // and their shortest, while less is known
export const STEP_MS = 10 * 1000;            // live points kept at most this often (the last one moves)

const TONES = {
  ready: "ok", resolving: "warn", connecting: "warn", "backing-off": "warn", disconnecting: "warn",
  failed: "bad", absent: "bad", "waiting-for-adapter": "bad",
};

/** The card's colour for a board's state: ok, warn, bad, or none (unknown states). */
export function toneOf(state) {
  return Object.prototype.hasOwnProperty.call(TONES, state) ? TONES[state] : "none";
}

/** A value with the decimals its profile's scale gives it (1001.0 at scale 0.1), else with
 * at most two; a dash for no number. */
export function fmt(v, decimals) {
  if (typeof v !== "number" || !isFinite(v)) return "–";
  if (typeof decimals === "number" && decimals >= 0 && decimals <= 9) return v.toFixed(decimals);
  return Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100);
}

/** The sensors' order on a card: temperature first, then by name. */
export function sensorOrder(a, b) {
  if (a === b) return 0;
  if (a === "temperature") return -1;
  if (b === "temperature") return 1;
  return a < b ? -1 : 1;
}

/** The sensors a board reports: its profile's (`sensors`), else its temperature alone. */
export function sensorsOf(board) {
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

/** Where a board is not linked, when it was last heard ("" while ready or never heard). */
export function seenText(state, lastSeen, now = new Date()) {
  const seen = Date.parse(lastSeen);
  if (state === "ready" || !isFinite(seen)) return "";
  const when = new Date(seen);
  return "seen " + (when.toDateString() === now.toDateString() ? when.toLocaleTimeString() : when.toLocaleString());
}

/** The LED switch: its text, its aria-checked, and what the fleet still wants of it. */
export function ledView(led, desired) {
  const known = led === true || led === false;
  return {
    text: led === true ? "on" : led === false ? "off" : "?",
    checked: known ? String(led) : "mixed",
    desired: (desired === true || desired === false) && desired !== led ? "wanted " + (desired ? "on" : "off") : "",
  };
}

/** Adds a live reading to `live` ([[ms, value]], oldest first): at most one point per STEP_MS
 * (the last one moves), none older than WINDOW_MS, none out of order. */
export function addLive(live, at, value, now = Date.now()) {
  const n = live.length;
  if (n && at < live[n - 1][0]) return;
  if (n >= 2 && at - live[n - 2][0] < STEP_MS) live[n - 1] = [at, value];
  else live.push([at, value]);
  const oldest = now - WINDOW_MS;
  while (live.length && live[0][0] < oldest) live.shift();
}

/** A sensor's plot: the kept history and the live points after it, over the last span (10 min
 * to 3 h, as much as is known), as an SVG path in a 240×48 box, and its range in words. */
export function plot(hist, live, now, unitText, name) {
  const lastHist = hist.length ? hist[hist.length - 1][0] : -Infinity;
  let pts = hist.concat(live.filter((p) => p[0] > lastHist));
  const first = pts.length ? pts[0][0] : now;
  const span = Math.min(WINDOW_MS, Math.max(MIN_WINDOW_MS, now - first));
  const t0 = now - span;
  pts = pts.filter((p) => p[0] >= t0);
  if (!pts.length) return { d: "", range: "", label: "" };
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
  const minutes = Math.round(span / 60000);
  const spanText = minutes >= 120 ? Math.round(minutes / 60) + " h" : minutes + " min";
  const unit = unitText ? " " + unitText : "";
  const range = "last " + spanText + ": " + (lo === hi ? fmt(lo) : fmt(lo) + "–" + fmt(hi)) + unit;
  return { d, range, label: name + ", " + range };
}

/** The header's line: how many boards, ready, LEDs on; what is known when blefleetd is away. */
export function summaryText(boards, daemonUp) {
  let n = 0, ready = 0, on = 0;
  for (const board of boards) {
    n++;
    if (board.state === "ready") ready++;
    if (board.led === true) on++;
  }
  const text = n + (n === 1 ? " board" : " boards") + " · " + ready + " ready · " + on + " LED" + (on === 1 ? "" : "s") + " on";
  if (daemonUp === false) return n ? "blefleetd unreachable · last known: " + text : "blefleetd unreachable";
  if (daemonUp === null) return "connecting…";
  return text;
}

/** The banner: down (and why) when the page's stream to blefleet-web is lost for a while or
 * blefleetd is away; `linkLost` is true once the stream has been gone past the blip allowance. */
export function bannerOf({ linkUp, linkLost, daemonUp, boards, reason }) {
  if (!linkUp && linkLost) {
    return { down: true, text: "The dashboard lost its connection to blefleet-web. Reconnecting…", reason: "" };
  }
  if (daemonUp === false) {
    return {
      down: true,
      text: "blefleetd is not reachable." + (boards ? " The boards below are as last seen." : "") +
        " This page follows it again by itself when it is back.",
      reason: reason || "",
    };
  }
  return { down: false, text: "", reason: "" };
}

/** One board's result of a fleet call (led.set, boards.identify): ok, pending or failed. */
export function outcomeOf(r) {
  if (r.ok) return { kind: "ok", text: "ok" + (typeof r.latencyMs === "number" ? " (" + r.latencyMs + " ms)" : "") };
  const message = r.error && r.error.message ? r.error.message : "failed";
  if (r.pending) return { kind: "pending", text: "pending: " + message };
  return { kind: "failed", text: "failed: " + message };
}

/** "All on"/"All off"'s answer: a heading with the totals and one line per board. */
export function fleetResultView(label, result) {
  const results = Array.isArray(result && result.results) ? result.results : [];
  const totals = (result && result.totals) || {};
  return {
    heading: label + ": " + (totals.ok || 0) + " ok, " + (totals.failed || 0) + " failed",
    items: results.map((r) => ({ address: r.address, name: r.name || r.address, ...outcomeOf(r) })),
    empty: results.length === 0,
  };
}

/** Who is looking (from /me): their name and whether they may switch. */
export function viewer(me) {
  const user = me && typeof me.user === "string" ? me.user : "";
  const readOnly = !me || me.role !== "control";
  return { readOnly, text: user + (readOnly ? " · read-only" : "") };
}
