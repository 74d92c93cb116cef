"""blefleet-web end to end, as a user sees it: the dashboard in chromium (Playwright) on a
BlueZoo testbed of 6 boards, with the testbed's own state as the referee, and /metrics as
Prometheus reads it (prometheus_client's parser). The tests share one page and run in
order: the daemon's restart comes after the tests that need it up."""

from __future__ import annotations

import base64
import random
import subprocess
import warnings

from playwright.sync_api import expect
from prometheus_client.parser import text_string_to_metric_families

from web_support import BIN, BOARDS, HOSTILE_ALIAS, another_web, basic, free_port, http_get, wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # deprecated, still in 3.11; the hashes are libxcrypt's, as blefleet-web's


def card(page, address: str):
    return page.locator(f'.card[data-address="{address}"]')


def metrics(stack) -> dict:
    """/metrics parsed: family name -> {sample name: [(labels, value)]}."""
    status, headers, text = http_get(stack.port, "/metrics")
    assert status == 200, f"/metrics: {status} {text}"
    assert headers["content-type"].startswith("text/plain"), headers
    families = {}
    for family in text_string_to_metric_families(text):
        samples = families.setdefault(family.name, {})
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return families


def by_address(families: dict, family: str, sample: str | None = None) -> dict[str, float]:
    return {labels["address"]: value for labels, value in families.get(family, {}).get(sample or family, [])}


def test_page_is_served_self_contained(stack):
    status, headers, text = http_get(stack.port, "/")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    # No external assets: nothing is fetched from anywhere but this server.
    for marker in ("http://", "https://", "//cdn", "@import"):
        assert marker not in text, f"the page refers to {marker}"


def test_a_card_for_every_board_each_ready(page, stack):
    boards = stack.testbed.state()["boards"]
    assert len(boards) == BOARDS
    expect(page.locator(".card")).to_have_count(BOARDS, timeout=15_000)
    for board in boards:
        c = card(page, board["address"])
        expect(c.locator('[data-field="state"]')).to_have_text("ready", timeout=30_000)
        # Every sensor of its profile, with the value the board measures.
        expect(c.locator('[data-sensor="temperature"]')).to_have_text(str(board["temperature"]), timeout=10_000)
        # Hundredths, as the profile's scale gives them (nano-02's 41.20).
        expect(c.locator('[data-sensor="humidity"]')).to_have_text(f'{board["humidity"]:.2f}', timeout=10_000)
        expect(c.locator('[data-field="adapter"]')).to_have_text("hci0")
        expect(c.locator('[data-field="led"]')).to_have_text("?" if board["led"] is None else "on" if board["led"] else "off")
        if board["name"] != f"nano-{BOARDS:02d}":
            expect(c.locator('[data-field="name"]')).to_have_text(board["name"])
    expect(page.locator("#daemon-banner")).to_be_hidden()
    expect(page.locator("#summary")).to_contain_text(f"{BOARDS} boards · {BOARDS} ready")


def test_board_names_are_shown_as_text(page, stack):
    """A user's alias with markup is text on the page, not markup."""
    c = card(page, stack.testbed.address(f"nano-{BOARDS:02d}"))
    expect(c.locator('[data-field="name"]')).to_have_text(HOSTILE_ALIAS)
    assert page.locator("#boards img, #boards b").count() == 0
    assert page.evaluate("window.__injected") is None


def test_an_alias_given_while_the_page_is_open_shows_without_reload(page, stack):
    """`blectl alias` elsewhere: the card takes the new name, and a page opened after too."""
    address = stack.testbed.address("nano-01")
    page.evaluate("window.__aliasMarker = 1")
    stack.blectl("alias", address, "window-seat")
    c = card(page, address)
    expect(c.locator('[data-field="name"]')).to_have_text("window-seat", timeout=5_000)
    assert page.evaluate("window.__aliasMarker") == 1, "the page was reloaded"
    stack.blectl("alias", address, "")
    expect(c.locator('[data-field="name"]')).to_have_text("nano-01", timeout=5_000)


def test_all_on_then_all_off(page, stack):
    for button, on in (("all-on", True), ("all-off", False)):
        word = "on" if on else "off"
        page.click(f"#{button}")
        results = page.locator("#results")
        expect(results).to_have_attribute("data-state", "done", timeout=30_000)
        expect(results.locator("h2")).to_have_text(f"All {word}: {BOARDS} ok, 0 failed")
        boards = stack.testbed.state()["boards"]
        # Each board's result, by address, ok.
        for board in boards:
            item = results.locator(f'li[data-address="{board["address"]}"]')
            expect(item).to_have_attribute("data-result", "ok")
            expect(item.locator(".outcome")).to_contain_text("ok")
        # The testbed referee: every board's LED is what the page asked for.
        wait_until(lambda: all(b["led"] == (1 if on else 0) for b in stack.testbed.state()["boards"]), 5,
                   f"the testbed's LEDs are not all {word}: {stack.testbed.state()['boards']}")
        for board in boards:
            expect(card(page, board["address"]).locator('[data-field="led"]')).to_have_text(word, timeout=5_000)
        expect(page.locator("#summary")).to_contain_text(f"{BOARDS if on else 0} LED")


def test_one_board_switch(page, stack):
    address = stack.testbed.address("nano-02")
    switch = card(page, address).locator(".switch")
    expect(switch.locator('[data-field="led"]')).to_have_text("off")
    switch.click()
    expect(switch.locator('[data-field="led"]')).to_have_text("on", timeout=10_000)
    expect(switch).to_have_attribute("aria-checked", "true")
    wait_until(lambda: stack.testbed.board("nano-02")["led"] == 1, 5, "nano-02's LED is not on")
    assert [b["led"] for b in stack.testbed.state()["boards"] if b["name"] != "nano-02"] == [0] * (BOARDS - 1)
    switch.click()
    expect(switch.locator('[data-field="led"]')).to_have_text("off", timeout=10_000)
    wait_until(lambda: stack.testbed.board("nano-02")["led"] == 0, 5, "nano-02's LED is not off again")


def test_temperature_change_appears_live(page, stack):
    name = "nano-03"
    address = stack.testbed.address(name)
    before = {b["address"]: b["temperature"] for b in stack.testbed.state()["boards"]}
    celsius = before[address] + 9
    value = card(page, address).locator('[data-sensor="temperature"]')
    expect(value).to_have_text(str(before[address]))
    stack.testbed.cli("board", "temp", name, str(celsius))
    # Within 2 s of the board measuring it (its notifications come once a second).
    expect(value).to_have_text(str(celsius), timeout=2_000)
    # In place: the page was not loaded again, and the others did not change.
    assert page.evaluate("window.__testMarker") == "same page"
    for other, temperature in before.items():
        if other != address:
            expect(card(page, other).locator('[data-sensor="temperature"]')).to_have_text(str(temperature))
    # The plot took the new point: its path has a point at the top (the new maximum).
    path = card(page, address).locator('[data-sensor-row="temperature"] path')
    expect(path).not_to_have_attribute("d", "", timeout=2_000)


def test_metrics_match_the_testbed(stack):
    boards = stack.testbed.state()["boards"]
    names = {b["address"]: b["name"] for b in boards}

    def matching():
        families = metrics(stack)
        temperatures = by_address(families, "blefleet_temperature_celsius")
        return families if temperatures == {b["address"]: float(b["temperature"]) for b in boards} else None
    families = wait_until(matching, 5, f"blefleet_temperature_celsius does not match the testbed: {boards}")
    assert families["blefleet_up"]["blefleet_up"] == [({}, 1.0)]
    (labels, value), = families["blefleet_build_info"]["blefleet_build_info"]
    assert value == 1.0 and labels["version"], labels
    assert by_address(families, "blefleet_led_on") == {b["address"]: float(b["led"]) for b in boards}
    assert by_address(families, "blefleet_board_connected") == {address: 1.0 for address in names}
    assert by_address(families, "blefleet_humidity_percent") == {b["address"]: b["humidity"] for b in boards}
    assert set(by_address(families, "blefleet_reconnects", "blefleet_reconnects_total")) == set(names)
    # Each series carries the board's name (its alias where it has one).
    for labels, _ in families["blefleet_board_connected"]["blefleet_board_connected"]:
        expected = HOSTILE_ALIAS if names[labels["address"]] == f"nano-{BOARDS:02d}" else names[labels["address"]]
        assert labels["board"] == expected, labels


def test_daemon_away_and_back(page, stack):
    banner = page.locator("#daemon-banner")
    expect(banner).to_be_hidden()
    stack.stop_daemon()
    expect(banner).to_be_visible(timeout=10_000)
    expect(banner).to_contain_text("blefleetd is not reachable")
    wait_until(lambda: metrics(stack)["blefleet_up"]["blefleet_up"] == [({}, 0.0)], 10,
               "blefleet_up is not 0 with the daemon stopped")
    stack.start_daemon()
    # The page follows the daemon again by itself: no reload, banner gone, every card back.
    expect(banner).to_be_hidden(timeout=20_000)
    expect(page.locator(".card")).to_have_count(BOARDS, timeout=10_000)
    for board in stack.testbed.state()["boards"]:
        expect(card(page, board["address"]).locator('[data-field="state"]')).to_have_text("ready", timeout=30_000)
    assert page.evaluate("window.__testMarker") == "same page"
    wait_until(lambda: metrics(stack)["blefleet_up"]["blefleet_up"] == [({}, 1.0)], 10,
               "blefleet_up is not 1 with the daemon back")


def test_usable_on_a_phone(browser, stack):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(stack.url)
        expect(page.locator(".card")).to_have_count(BOARDS, timeout=15_000)
        # One column, nothing wider than the screen, the buttons on it.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        boxes = [page.locator(".card").nth(i).bounding_box() for i in range(2)]
        assert boxes[0]["x"] == boxes[1]["x"] and boxes[1]["y"] > boxes[0]["y"], boxes
        expect(page.locator("#all-on")).to_be_in_viewport()
        expect(page.locator("#all-off")).to_be_in_viewport()
        # Works offline: every request went to blefleet-web itself.
        assert requests and all(url.startswith(stack.url) for url in requests), requests
    finally:
        context.close()


def test_page_had_no_errors(page):
    assert page.problems == []


def test_listen_beyond_loopback_needs_auth_file(stack):
    result = subprocess.run(
        [str(BIN / "blefleet-web"), "--socket", stack.socket, "--listen", f"0.0.0.0:{free_port()}", "--log-target", "stderr"],
        capture_output=True, text=True, timeout=30)
    assert result.returncode == 78, result
    assert "--auth-file" in result.stderr, result.stderr


def yescrypt(password: str) -> str:
    alphabet = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    # 24 characters of crypt's base 64 are 18 whole bytes (22 would need their last
    # character's spare bits clear, as mkpasswd's are).
    salt = "".join(random.SystemRandom().choice(alphabet) for _ in range(24))
    return crypt.crypt(password, f"$y$j9T${salt}$")


def test_auth_file(stack, tmp_path):
    users = {
        "ada": ("yes crypt", yescrypt("yes crypt")),
        "bob": ("sha 512", crypt.crypt("sha 512", crypt.mksalt(crypt.METHOD_SHA512))),
        # htpasswd -nbB writes bcrypt as $2y$.
        "cyd": ("b crypt", crypt.crypt("b crypt", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)).replace("$2b$", "$2y$", 1)),
    }
    for user, (_, hashed) in users.items():
        assert hashed and hashed.startswith("$"), (user, hashed)
    auth = tmp_path / "users"
    auth.write_text("".join(f"{user}:{hashed}\n" for user, (_, hashed) in users.items()))
    with another_web(stack.socket, tmp_path / "blefleet-web-auth.log", "--auth-file", str(auth), listen="0.0.0.0") as port:
        for path in ("/", "/metrics"):
            status, headers, _ = http_get(port, path)
            assert status == 401 and headers.get("www-authenticate", "").startswith('Basic realm="blefleet"'), (path, status, headers)
            for user, (password, _) in users.items():
                status, headers, _ = http_get(port, path, basic(user, password + "x"))
                assert status == 401, (path, user, "wrong password", status)
                assert headers.get("www-authenticate", "").startswith('Basic realm="blefleet"'), headers
                status, headers, body = http_get(port, path, basic(user, password))
                assert status == 200, (path, user, status, body[:200])
                if path == "/metrics":
                    assert "blefleet_up 1" in body
                else:
                    assert 'id="daemon-banner"' in body
            status, _, _ = http_get(port, path, basic("nobody", "yes crypt"))
            assert status == 401


def test_identify_blinks_the_board_and_puts_its_led_back(page, stack):
    address = stack.testbed.address("nano-03")
    before = stack.testbed.board("nano-03")
    identify = card(page, address).locator(".identify")
    expect(identify).to_be_visible()
    identify.click()
    expect(card(page, address).locator('[data-field="note"]')).to_have_text("identified: it blinked", timeout=20_000)
    after = stack.testbed.board("nano-03")
    # Six blinks and the LED put back as it was: 13 writes, the same LED as before.
    assert after["led_writes"] - before["led_writes"] == 13, (before, after)
    assert after["led"] == before["led"], (before, after)
