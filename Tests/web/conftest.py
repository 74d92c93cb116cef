"""Fixtures of blefleet-web's end-to-end tests: a BlueZoo testbed, the daemon on it, the
web server on the daemon's socket (web_support.Stack), and Debian's chromium driven by
Playwright. The logs of both binaries are attached to every failing test's report."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from web_support import BIN, BOARDS, CHROMIUM, HOSTILE_ALIAS, LANES, LOGS, Stack, wait_until


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for name, path in LOGS.items():
            try:
                lines = path.read_text(errors="replace").splitlines()
            except OSError:
                continue
            report.sections.append((f"{name} ({path}), last 80 lines", "\n".join(lines[-80:])))


@pytest.fixture(scope="module")
def stack():
    if "bluezoo" not in LANES:
        pytest.skip("blefleet-web's browser tests run on the BlueZoo lane (BLEFLEET_LANES has no bluezoo)")
    for binary in ("blefleetd", "blefleet-web", "blectl"):
        assert (BIN / binary).exists(), f"{BIN / binary} is missing: run `swift build` first"
    work = Path(tempfile.mkdtemp(prefix="bfweb-", dir="/tmp"))
    made = None
    try:
        made = Stack(work, BOARDS)
        made.start_daemon()
        # Every board known to the daemon, then one of them named by a user with markup in
        # mind, before blefleet-web takes its first look at the fleet.
        def known():
            return len(json.loads(made.blectl("--json", "boards"))["boards"]) == BOARDS
        wait_until(known, 30, f"blefleetd does not know {BOARDS} boards")
        made.blectl("alias", made.testbed.address(f"nano-{BOARDS:02d}"), HOSTILE_ALIAS)
        made.start_web()
        yield made
    finally:
        if made:
            made.stop()
        LOGS.clear()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: scripts/setup installs Debian's chromium"
    with sync_playwright() as playwright:
        # Debian's chromium (Playwright cannot download its own build here); as root it
        # needs --no-sandbox.
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def page(browser, stack):
    """One page on the dashboard for the whole module (it follows the fleet by itself); its
    console errors and uncaught exceptions are collected in `page.problems`."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    page.on("console", lambda message: problems.append(f"console: {message.text}") if message.type == "error" else None)
    page.problems = problems
    page.goto(stack.url)
    # A marker no reload would keep: tests check that the page follows the fleet in place.
    page.evaluate("window.__testMarker = 'same page'")
    yield page
    context.close()
