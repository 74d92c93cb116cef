// The dashboard's logic without a browser (node --test): what a card, the header, the banner
// and a fleet result say for what blefleet-web sends. The page itself is tested in chromium
// (Tests/web/test_web.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  addLive, bannerOf, fleetResultView, fmt, ledView, outcomeOf, plot, sensorOrder, sensorsOf, seenText, STEP_MS,
  summaryText, toneOf, viewer, WINDOW_MS,
} from "../../../Sources/FleetWeb/Dashboard/view.mjs";

test("values keep their profile's decimals, else at most two; no number is a dash", () => {
  assert.equal(fmt(1001, 1), "1001.0");
  assert.equal(fmt(21.456), "21.46");
  assert.equal(fmt(21), "21");
  assert.equal(fmt(undefined), "–");
  assert.equal(fmt(NaN, 1), "–");
  assert.equal(fmt(3.14159, 12), "3.14", "a scale beyond 9 decimals is not trusted");
});

test("a board's sensors: its profile's, temperature first; else its temperature alone", () => {
  assert.deepEqual(sensorsOf({ temperature: { celsius: 21.5, ageMs: 300 } }),
    { temperature: { unit: "°C", value: 21.5, ageMs: 300 } });
  const both = sensorsOf({ sensors: { humidity: { value: 40, unit: "%" }, temperature: { value: 20, unit: "°C" } },
    temperature: { celsius: 19 } });
  assert.equal(both.temperature.value, 20, "the profile's reading wins over the legacy member");
  assert.deepEqual(Object.keys(both).sort(sensorOrder), ["temperature", "humidity"]);
  assert.deepEqual(["pressure", "humidity", "temperature"].sort(sensorOrder), ["temperature", "humidity", "pressure"]);
  assert.deepEqual(sensorsOf({}), {});
});

test("a card's tone follows the board's state; an unknown state has none", () => {
  assert.equal(toneOf("ready"), "ok");
  assert.equal(toneOf("backing-off"), "warn");
  assert.equal(toneOf("waiting-for-adapter"), "bad");
  assert.equal(toneOf("something-new"), "none");
  assert.equal(toneOf("constructor"), "none", "no inherited member of an object is a tone");
  assert.equal(toneOf(undefined), "none");
});

test("when a board was last seen shows only while it is not linked", () => {
  const now = new Date("2026-11-29T10:00:00Z");
  assert.equal(seenText("ready", "2026-11-29T09:59:00Z", now), "");
  assert.equal(seenText("absent", undefined, now), "");
  assert.match(seenText("absent", "2026-11-29T09:59:00Z", now), /^seen /);
});

test("the LED switch says on, off or unknown, and what the fleet still wants", () => {
  assert.deepEqual(ledView(true, true), { text: "on", checked: "true", desired: "" });
  assert.deepEqual(ledView(false, true), { text: "off", checked: "false", desired: "wanted on" });
  assert.deepEqual(ledView(null, false), { text: "?", checked: "mixed", desired: "wanted off" });
  assert.deepEqual(ledView(null, undefined), { text: "?", checked: "mixed", desired: "" });
});

test("live points: at most one per step (the last moves), none out of order, none too old", () => {
  const now = 10 * WINDOW_MS;
  const live = [];
  addLive(live, now - 3 * STEP_MS, 1, now);
  addLive(live, now - 2 * STEP_MS, 2, now);
  addLive(live, now - 2 * STEP_MS + 1000, 3, now);
  assert.deepEqual(live, [[now - 3 * STEP_MS, 1], [now - 2 * STEP_MS, 2], [now - 2 * STEP_MS + 1000, 3]]);
  addLive(live, now - 2 * STEP_MS + 2000, 4, now);
  assert.deepEqual(live.at(-1), [now - 2 * STEP_MS + 2000, 4], "within a step of the one before, the last point moves");
  assert.equal(live.length, 3);
  addLive(live, now - 5 * STEP_MS, 9, now);
  assert.equal(live.length, 3, "a reading older than the last is dropped");
  addLive(live, now + WINDOW_MS, 5, now + WINDOW_MS + STEP_MS);
  assert.deepEqual(live, [[now + WINDOW_MS, 5]], "points older than the window go");
});

test("a plot spans what is known (10 min to 3 h) and says its range", () => {
  const now = 1_000_000_000;
  assert.deepEqual(plot([], [], now, "°C", "temperature"), { d: "", range: "", label: "" });
  const one = plot([], [[now, 21]], now, "°C", "temperature");
  assert.match(one.d, /^M240\.0 24\.0h-3$/);
  assert.equal(one.range, "last 10 min: 21 °C");
  const hist = [[now - 2 * 3600 * 1000, 18], [now - 3600 * 1000, 20]];
  const both = plot(hist, [[now - 3600 * 1000, 99], [now, 22]], now, "°C", "temperature");
  assert.equal(both.range, "last 2 h: 18–22 °C", "a live point no newer than the history is not drawn");
  assert.equal(both.label, "temperature, last 2 h: 18–22 °C");
  assert.equal(both.d.split("L").length, 3);
  const old = plot([[now - 5 * 3600 * 1000, 1]], [[now, 2]], now, "", "x");
  assert.equal(old.range, "last 3 h: 2", "points older than 3 h are not drawn");
});

test("the header counts boards, ready ones and LEDs on, and says when blefleetd is away", () => {
  const boards = [{ state: "ready", led: true }, { state: "absent", led: false }, { state: "ready" }];
  assert.equal(summaryText(boards, true), "3 boards · 2 ready · 1 LED on");
  assert.equal(summaryText([{ state: "ready", led: true }, { led: true }], true), "2 boards · 1 ready · 2 LEDs on");
  assert.equal(summaryText(boards, false), "blefleetd unreachable · last known: 3 boards · 2 ready · 1 LED on");
  assert.equal(summaryText([], false), "blefleetd unreachable");
  assert.equal(summaryText(boards, null), "connecting…");
});

test("the banner: the page's stream lost for a while, or blefleetd away with its reason", () => {
  assert.deepEqual(bannerOf({ linkUp: true, linkLost: false, daemonUp: true, boards: 3 }), { down: false, text: "", reason: "" });
  assert.equal(bannerOf({ linkUp: false, linkLost: false, daemonUp: true, boards: 3 }).down, false,
    "a blip of the stream shows nothing");
  assert.match(bannerOf({ linkUp: false, linkLost: true, daemonUp: true, boards: 3 }).text, /lost its connection to blefleet-web/);
  const away = bannerOf({ linkUp: true, linkLost: false, daemonUp: false, boards: 2, reason: "connection refused" });
  assert.equal(away.down, true);
  assert.match(away.text, /^blefleetd is not reachable\. The boards below are as last seen\./);
  assert.equal(away.reason, "connection refused");
  assert.doesNotMatch(bannerOf({ linkUp: true, daemonUp: false, boards: 0 }).text, /boards below/);
});

test("a fleet call's result: one line per board, ok with its latency, pending or failed with why", () => {
  assert.deepEqual(outcomeOf({ ok: true, latencyMs: 41 }), { kind: "ok", text: "ok (41 ms)" });
  assert.deepEqual(outcomeOf({ ok: false, pending: true, error: { message: "did not answer within 5000 ms" } }),
    { kind: "pending", text: "pending: did not answer within 5000 ms" });
  assert.deepEqual(outcomeOf({ ok: false }), { kind: "failed", text: "failed: failed" });
  const view = fleetResultView("All on", {
    results: [{ address: "CA:FE:00:00:00:01", name: "nano-01", ok: true, latencyMs: 30 },
      { address: "CA:FE:00:00:00:02", ok: false, error: { message: "absent" } }],
    totals: { ok: 1, failed: 1 },
  });
  assert.equal(view.heading, "All on: 1 ok, 1 failed");
  assert.deepEqual(view.items.map((i) => [i.name, i.kind, i.text]),
    [["nano-01", "ok", "ok (30 ms)"], ["CA:FE:00:00:00:02", "failed", "failed: absent"]]);
  assert.equal(view.empty, false);
  assert.deepEqual(fleetResultView("All off", { results: [], totals: {} }),
    { heading: "All off: 0 ok, 0 failed", items: [], empty: true });
});

test("who is looking: control switches; read-only, an unknown role or no answer does not", () => {
  assert.deepEqual(viewer({ user: "teacher", role: "control" }), { readOnly: false, text: "teacher" });
  assert.deepEqual(viewer({ user: "pupil", role: "read-only" }), { readOnly: true, text: "pupil · read-only" });
  assert.equal(viewer({ user: "x", role: "admin" }).readOnly, true);
  assert.deepEqual(viewer(null), { readOnly: true, text: " · read-only" });
});
