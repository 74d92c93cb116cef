"""blefleet-web's benchmark (Benchmarks/web/run calls it): BlueZoo lane, in one run.

  1. first paint   the dashboard in chromium with N boards (default 30): navigation start to
                   every card rendered with its values and the next frame (the page's
                   window.__firstPaintMs), over fresh browser contexts; chromium's own
                   first-contentful-paint beside it.
  2. notification  a board's new temperature (`scripts/testbed board temp`) to the page's DOM
                   (a MutationObserver's clock), and, for the same change in the same run, to a
                   plain subscriber of the daemon's socket (`blectl --json watch --topic
                   temperature`): the floor. Nothing subtracted: both include the testbed
                   command and the board's next notification (once a second).
  3. /metrics      with M boards (default 100; BlueZoo, 4 central adapters): S scrapes on one
                   keep-alive connection (http.client), per scrape; and the same number of
                   `boards.list` calls straight on the daemon's socket, which each scrape makes.
  4. memory        blefleet-web's VmRSS after each part.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTBED = ROOT / "scripts" / "testbed"
sys.path.insert(0, str(ROOT / "Tests" / "web"))

from web_support import answers, free_port, wait_until  # noqa: E402  (the web tests' own helpers)
CHROMIUM = "/usr/bin/chromium"


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)




def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# blefleet-web as shipped (static Swift runtime) when given: its memory is a figure.
WEB_BIN: Path | None = None


class Stack:
    """A BlueZoo testbed of `boards` boards, blefleetd on it and blefleet-web on its socket."""

    def __init__(self, bin_dir: Path, work: Path, name: str, boards: int, centrals: int):
        self.bin = bin_dir
        self.work = work / name
        self.work.mkdir()
        self.boards = boards
        self.processes: list[subprocess.Popen] = []
        self.run_dir = self.work / "tb"
        out = subprocess.run(
            [str(TESTBED), "start", "--boards", str(boards), "--centrals", str(centrals), "--run-dir",
             str(self.run_dir), "--owner-pid", str(os.getpid())],
            capture_output=True, text=True, timeout=600, check=True).stdout
        exports = dict(line.removeprefix("export ").split("=", 1) for line in out.splitlines() if line.startswith("export "))
        bus = exports["DBUS_SYSTEM_BUS_ADDRESS"].strip("'")
        limit = -(-boards // centrals)
        config = self.work / "blefleetd.conf"
        config.write_text(f"socket-group: root\nadapter: all\nconnection-limit: {limit}\nlog-level: warning\n")
        self.socket = str(self.work / "d.sock")
        self.daemon = self.spawn("blefleetd", [
            str(bin_dir / "blefleetd"), "--config", str(config), "--socket", self.socket,
            "--state-dir", str(self.work / "state"), "--bus", bus, "--log-target", "stderr"])

        def accepts():
            with socket.socket(socket.AF_UNIX) as s:
                try:
                    s.connect(self.socket)
                    return True
                except OSError:
                    return False
        wait_until(accepts, 30, f"blefleetd ({name}) does not accept connections")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.web = self.spawn("blefleet-web", [
            str(WEB_BIN or bin_dir / "blefleet-web"), "--socket", self.socket, "--listen", f"127.0.0.1:{self.port}",
            "--log-target", "stderr", "--log-level", "warning"])

        wait_until(lambda: answers(self.port), 30, f"blefleet-web ({name}) does not answer")

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log_file = open(self.work / f"{name}.log", "wb")
        process = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.processes.append(process)
        return process

    def ready_count(self) -> int:
        result = subprocess.run([str(self.bin / "blectl"), "--socket", self.socket, "--json", "status"],
                                capture_output=True, text=True, timeout=30)
        try:
            return int(json.loads(result.stdout)["boards"]["ready"])
        except (ValueError, KeyError, TypeError):
            return 0

    def wait_ready(self, timeout: float) -> int:
        """Waits until every board is ready; returns how many are (fewer when the time ran out)."""
        deadline = time.monotonic() + timeout
        ready = 0
        while time.monotonic() < deadline:
            ready = self.ready_count()
            if ready == self.boards:
                break
            time.sleep(0.5)
        return ready

    def state(self) -> list[dict]:
        out = subprocess.run([str(TESTBED), "state", "--run-dir", str(self.run_dir)],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        return json.loads(out)["boards"]

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
        subprocess.run([str(TESTBED), "stop", "--run-dir", str(self.run_dir)], capture_output=True, timeout=120)


OBSERVE = """
([address, sensor]) => {
  // Records when the reading of one board's sensor changes (the page writes it as text).
  if (window.__benchObserver) window.__benchObserver.disconnect();
  const changes = window.__benchChanges = [];
  const el = document.querySelector('.card[data-address="' + address + '"] [data-sensor="' + sensor + '"]');
  if (!el) return false;
  window.__benchObserver = new MutationObserver(() => {
    changes.push([performance.timeOrigin + performance.now(), el.textContent]);
  });
  window.__benchObserver.observe(el, { childList: true, characterData: true, subtree: true });
  return true;
}
"""


def first_paint(stack: Stack, browser, runs: int) -> dict:
    marks, renders, fcps = [], [], []
    for _ in range(runs):
        # The page allows only its own scripts; the measuring expressions are the harness's.
        context = browser.new_context(viewport={"width": 1920, "height": 1080}, bypass_csp=True)
        page = context.new_page()
        page.goto(stack.url)
        page.wait_for_function("window.__firstPaintMs !== undefined", timeout=30_000)
        cards, valued = page.evaluate("""() => [document.querySelectorAll('.card').length,
            [...document.querySelectorAll('[data-sensor="temperature"]')].filter(e => /^-?[0-9.]+$/.test(e.textContent)).length]""")
        if cards != stack.boards or valued != stack.boards:
            raise SystemExit(f"bench: first paint showed {cards} cards, {valued} with a temperature; expected {stack.boards}")
        marks.append(page.evaluate("window.__firstPaintMs"))
        renders.append(page.evaluate("window.__snapshotRenderedMs"))
        fcp = page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime")
        if fcp is not None:
            fcps.append(fcp)
        context.close()
    return {"paint": marks, "rendered": renders, "fcp": fcps}


class Watch:
    """`blectl --json watch --topic temperature`: each event line with when it came."""

    def __init__(self, stack: Stack):
        self.lines: list[tuple[float, dict]] = []
        self.cond = threading.Condition()
        self.process = subprocess.Popen(
            [str(stack.bin / "blectl"), "--socket", stack.socket, "--json", "watch", "--topic", "temperature"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                return
            at = time.time() * 1000
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            with self.cond:
                for line in lines:
                    try:
                        self.lines.append((at, json.loads(line)))
                    except ValueError:
                        pass
                self.cond.notify_all()

    def wait_for(self, address: str, celsius: int, after: float, timeout: float) -> float | None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for at, event in self.lines:
                    if at >= after and event.get("address") == address and event.get("data", {}).get("celsius") == celsius:
                        return at
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self.cond.wait(remaining)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def notifications(stack: Stack, browser, changes: int) -> dict:
    boards = stack.state()
    context = browser.new_context(viewport={"width": 1920, "height": 1080}, bypass_csp=True)
    page = context.new_page()
    page.goto(stack.url)
    page.wait_for_function("window.__firstPaintMs !== undefined", timeout=30_000)
    watch = Watch(stack)
    time.sleep(1)  # the subscriber is subscribed (its first events came)
    to_page, to_socket, cli = [], [], []
    # Each change at a random moment of the boards' one-second notification cycle (one right
    # after the last would always wait almost a whole cycle).
    phase = random.Random(1)
    try:
        for i in range(changes):
            time.sleep(phase.uniform(0, 1))
            board = boards[i % len(boards)]
            celsius = 40 + i  # each change a value no board had
            ok = page.evaluate(OBSERVE, [board["address"], "temperature"])
            assert ok, f"no card for {board['address']}"
            t0 = time.time() * 1000
            subprocess.run([str(TESTBED), "board", "temp", board["name"], str(celsius), "--run-dir", str(stack.run_dir)],
                           check=True, capture_output=True, timeout=30)
            cli.append(time.time() * 1000 - t0)
            page.wait_for_function(
                f"window.__benchChanges.some(c => c[1] === '{celsius}')", timeout=10_000, polling=50)
            at_page = page.evaluate(f"window.__benchChanges.find(c => c[1] === '{celsius}')[0]")
            at_socket = watch.wait_for(board["address"], celsius, t0, 10)
            if at_socket is None:
                raise SystemExit(f"bench: blectl watch did not see {board['name']} at {celsius} °C")
            to_page.append(at_page - t0)
            to_socket.append(at_socket - t0)
    finally:
        watch.stop()
        context.close()
    return {"page": to_page, "socket": to_socket, "cli": cli}


def scrapes(stack: Stack, count: int) -> tuple[list[float], int]:
    connection = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=30)
    times = []
    samples = 0
    for _ in range(count):
        start = time.perf_counter()
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        body = response.read()
        times.append((time.perf_counter() - start) * 1000)
        if response.status != 200:
            raise SystemExit(f"bench: /metrics answered {response.status}")
        samples = sum(1 for line in body.decode().splitlines() if line.startswith("blefleet_temperature_celsius{"))
    connection.close()
    return times, samples


def boards_list_round_trips(stack: Stack, count: int) -> list[float]:
    """The floor under a scrape: `boards.list` straight on the daemon's socket (one JSON-RPC
    request per line), one connection."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(stack.socket)
        reader = sock.makefile("rb")
        times = []
        for i in range(count):
            start = time.perf_counter()
            sock.sendall(json.dumps({"jsonrpc": "2.0", "id": i, "method": "boards.list"}).encode() + b"\n")
            line = reader.readline()
            times.append((time.perf_counter() - start) * 1000)
            assert b'"result"' in line, line[:200]
        return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True, type=Path)
    parser.add_argument("--web-bin", type=Path, help="blefleet-web to run (default: the one in --bin)")
    parser.add_argument("--build", default="release")
    parser.add_argument("--boards", type=int, default=30)
    parser.add_argument("--paints", type=int, default=10)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--metrics-boards", type=int, default=100)
    parser.add_argument("--scrapes", type=int, default=200)
    args = parser.parse_args()
    global WEB_BIN
    WEB_BIN = args.web_bin

    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="bfwebbench-", dir="/tmp"))
    stacks: list[Stack] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-dev-shm-usage"])
            log(f"{args.boards} boards: starting the testbed, blefleetd and blefleet-web")
            paint_stack = Stack(args.bin, work, "paint", args.boards, 1)
            stacks.append(paint_stack)
            ready = paint_stack.wait_ready(120)
            if ready != args.boards:
                raise SystemExit(f"bench: only {ready} of {args.boards} boards ready in 120 s")
            time.sleep(2)  # every board has a temperature
            log(f"first paint x {args.paints}")
            paint = first_paint(paint_stack, browser, args.paints)
            log(f"notifications x {args.changes}")
            notes = notifications(paint_stack, browser, args.changes)
            web_rss_paint = rss_mb(paint_stack.web.pid)
            paint_stack.stop()
            stacks.remove(paint_stack)
            browser.close()

        log(f"{args.metrics_boards} boards (4 central adapters): starting the testbed, blefleetd and blefleet-web")
        metrics_stack = Stack(args.bin, work, "metrics", args.metrics_boards, 4)
        stacks.append(metrics_stack)
        ready = metrics_stack.wait_ready(300)
        time.sleep(2)
        log(f"{ready} of {args.metrics_boards} boards ready; {args.scrapes} scrapes")
        scrapes(metrics_stack, 10)  # warm-up
        times, samples = scrapes(metrics_stack, args.scrapes)
        boards_list_round_trips(metrics_stack, 10)
        floor = boards_list_round_trips(metrics_stack, args.scrapes)
        web_rss_metrics = rss_mb(metrics_stack.web.pid)
        daemon_rss = rss_mb(metrics_stack.daemon.pid)
    finally:
        for stack in stacks:
            stack.stop()
        if not os.environ.get("KEEP"):
            subprocess.run(["rm", "-rf", str(work)])

    def ms(values: list[float]) -> str:
        return f"median {statistics.median(values):7.1f} ms   max {max(values):7.1f} ms"

    difference = [p - s for p, s in zip(notes["page"], notes["socket"])]
    print(f"== blefleet-web, BlueZoo lane ({args.build} build), chromium {CHROMIUM}")
    print(f"first paint, {args.boards} boards, {args.paints} fresh page loads (navigation start ->)")
    print(f"   every card with its values, next frame   {ms(paint['paint'])}")
    print(f"   every card in the DOM (snapshot applied) {ms(paint['rendered'])}")
    if paint["fcp"]:
        print(f"   chromium first-contentful-paint          {ms(paint['fcp'])}")
    print(f"a board's new temperature, {args.changes} changes (from `scripts/testbed board temp` starting ->)")
    print(f"   the page's DOM shows it                  {ms(notes['page'])}")
    print(f"   blectl --json watch gets it (the floor)  {ms(notes['socket'])}")
    print(f"   page minus floor, same change            median {statistics.median(difference):7.1f} ms   "
          f"max {max(difference):7.1f} ms")
    print(f"   (the testbed command itself              {ms(notes['cli'])};")
    print("    the board notifies once a second, so up to 1 s of either is waiting for it)")
    print(f"/metrics, {ready} of {args.metrics_boards} boards ready ({samples} temperature samples per scrape), "
          f"{args.scrapes} scrapes, one keep-alive connection")
    print(f"   per scrape                               median {statistics.median(times):7.2f} ms   "
          f"p95 {percentile(times, 95):7.2f} ms   max {max(times):7.2f} ms")
    print(f"   boards.list on the daemon's socket       median {statistics.median(floor):7.2f} ms   "
          f"p95 {percentile(floor, 95):7.2f} ms   max {max(floor):7.2f} ms   (the floor: a scrape asks it)")
    print("resident memory (VmRSS)")
    print(f"   blefleet-web after the {args.boards}-board runs ({args.paints + 1} page loads)   {web_rss_paint:6.1f} MB")
    print(f"   blefleet-web after the {args.scrapes + 10} scrapes of {args.metrics_boards} boards      {web_rss_metrics:6.1f} MB")
    print(f"   blefleetd with {args.metrics_boards} boards                        {daemon_rss:6.1f} MB")


if __name__ == "__main__":
    main()
