"""blefleet-web keeps the fleet's roles (issues 36, 50): a web user has the role its --auth-file
gives (control, or read-only), and without an auth file the local account the kernel says holds
the other end of the loopback connection has the role the daemon's socket gives it (root and
blefleet-web's own account control, the read-only group looks, anyone else is refused); /rpc
offers the page's calls alone; the daemon logs whose call it was. The testbed's boards are the
referee of what was switched."""

from __future__ import annotations

import json
import subprocess
import warnings

from playwright.sync_api import expect

from web_support import BOARDS, another_web, basic, http_get, wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # deprecated, still in 3.11; the hashes are libxcrypt's, as blefleet-web's

import http.client


def post_rpc(port: int, method: str, params: dict | None = None, headers: dict | None = None) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", "/rpc", body=json.dumps(body),
                           headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        assert response.status == 200, (response.status, response.read())
        return json.loads(response.read())
    finally:
        connection.close()


def leds(stack) -> dict[str, int | None]:
    return {b["name"]: b["led"] for b in stack.testbed.state()["boards"]}


def wait_ready(stack) -> None:
    def ready():
        boards = json.loads(stack.blectl("--json", "boards"))["boards"]
        return len(boards) == BOARDS and all(b["state"] == "ready" for b in boards)
    wait_until(ready, 60, f"{BOARDS} boards ready")


def test_auth_file_roles(stack, browser, tmp_path):
    wait_ready(stack)
    teacher = crypt.crypt("teach", crypt.mksalt(crypt.METHOD_SHA512))
    pupil = crypt.crypt("learn", crypt.mksalt(crypt.METHOD_SHA512))
    auth = tmp_path / "users"
    auth.write_text(f"teacher:{teacher}\npupil:{pupil}:read-only\n")
    with another_web(stack.socket, tmp_path / "blefleet-web-roles.log", "--auth-file", str(auth)) as port:
        as_pupil, as_teacher = basic("pupil", "learn"), basic("teacher", "teach")
        # Who each one is.
        assert json.loads(http_get(port, "/me", as_pupil)[2]) == {"user": "pupil", "role": "read-only"}
        assert json.loads(http_get(port, "/me", as_teacher)[2]) == {"user": "teacher", "role": "control"}

        # The pupil sees the fleet and switches nothing.
        before = leds(stack)
        listed = post_rpc(port, "boards.list", {}, as_pupil)
        assert len(listed["result"]["boards"]) == BOARDS, listed
        refused = post_rpc(port, "led.set", {"select": "all", "on": before["nano-01"] != 1}, as_pupil)
        assert refused["error"]["code"] == -32000, refused
        assert "pupil may only look" in refused["error"]["message"], refused
        assert leds(stack) == before

        # Nobody gets raw GATT, forgetting boards or scans from a browser.
        for user in (as_pupil, as_teacher):
            for method, params in (("gatt.write", {"select": "nano-01", "service": "1", "characteristic": "2", "value": "00"}),
                                   ("boards.forget", {"select": "all"}), ("boards.scan", {"seconds": 15})):
                answer = post_rpc(port, method, params, user)
                assert answer["error"]["code"] == -32601, (method, answer)
                assert "blefleet-web does not offer" in answer["error"]["message"], answer
        assert len(json.loads(stack.blectl("--json", "boards"))["boards"]) == BOARDS

        # The teacher switches, and the daemon's log says it was the teacher.
        on = before["nano-02"] != 1
        switched = post_rpc(port, "led.set", {"select": "nano-02", "on": on}, as_teacher)
        assert switched["result"]["totals"]["ok"] == 1, switched
        wait_until(lambda: leds(stack)["nano-02"] == (1 if on else 0), 10, "nano-02 switched on the board")
        daemon_log = (stack.work / "blefleetd.log").read_text()
        assert any("State-changing call succeeded" in line and "client.claimed-user=teacher" in line and "led.set" in line
                   for line in daemon_log.splitlines()), daemon_log[-3000:]

        # The pupil's page has nothing to press.
        context = browser.new_context(http_credentials={"username": "pupil", "password": "learn"})
        try:
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            expect(page.locator(".card")).to_have_count(BOARDS, timeout=15_000)
            expect(page.locator("#who")).to_have_text("pupil · read-only")
            expect(page.locator("#all-on")).to_be_hidden()
            for switch in page.locator(".card .switch").all():
                expect(switch).to_be_disabled()
        finally:
            context.close()


CLIENT = """
import http.client, json, sys
port, method, params = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
if method.startswith("/"):
    c.request("GET", method)
else:
    c.request("POST", "/rpc", body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
              headers={"Content-Type": "application/json"})
response = c.getresponse()
print(json.dumps({"status": response.status, "body": response.read().decode()}))
"""

# uid 4242: no account, no group of the daemon's (the socket refuses it).
STRANGER = 4242


def as_uid(uid: int, port: int, method: str, params: dict | None = None) -> tuple[int, str]:
    """A request from another local account (no supplementary groups): a curl of theirs."""
    result = subprocess.run(
        ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
         "/usr/bin/python3", "-I", "-c", CLIENT, str(port), method, json.dumps(params or {})],
        capture_output=True, text=True, timeout=60, cwd="/")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    return answer["status"], answer["body"]


def as_nobody(port: int, method: str, params: dict | None = None) -> dict:
    """A call from nobody (uid 65534, whose group nogroup is the test daemon's read-only group)."""
    status, body = as_uid(65534, port, method, params)
    assert status == 200, (status, body)
    return json.loads(body)


def test_without_auth_file_a_local_account_gets_what_the_socket_gives_it(stack):
    """Without --auth-file blefleet-web gives a local account the socket's role: root (this
    test) controls; nobody, in the daemon's read-only group (nogroup here), looks and cannot
    switch; uid 4242, in no group of the daemon's, is refused as the socket refuses it."""
    wait_ready(stack)
    assert json.loads(http_get(stack.port, "/me")[2])["role"] == "control"
    me = as_nobody(stack.port, "/me")
    assert me == {"user": "nobody (uid 65534)", "role": "read-only"}, me
    before = leds(stack)
    refused = as_nobody(stack.port, "led.set", {"select": "all", "on": before["nano-03"] != 1})
    assert refused["error"]["code"] == -32000, refused
    assert "nobody (uid 65534) may only look" in refused["error"]["message"], refused
    assert leds(stack) == before
    assert len(as_nobody(stack.port, "boards.list")["result"]["boards"]) == BOARDS
    for path, params in (("/me", None), ("/", None), ("/metrics", None), ("boards.list", {}), ("led.set", {"select": "all", "on": True})):
        status, text = as_uid(STRANGER, stack.port, path, params)
        assert status == 403, (path, status, text)
        assert "uid 4242 is not in blefleetd's groups" in text and "join 'nogroup' to look" in text, (path, text)
    assert leds(stack) == before


ATTACK = """
import json, socket, sys, threading
port, threads, attempts = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "led.set", "params": {"select": "all", "on": True}}).encode()
request = (f"POST /rpc HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nContent-Type: application/json\\r\\n"
           f"Content-Length: {len(body)}\\r\\n\\r\\n").encode() + body
def attack():
    for _ in range(attempts):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(request)
        s.close()  # at once: the request is read after its sender is gone
workers = [threading.Thread(target=attack) for _ in range(threads)]
for w in workers: w.start()
for w in workers: w.join()
"""


def test_a_request_whose_sender_closed_at_once_is_nobodys(stack):
    """The attack of issue 50: uid 4242 sends led.set all on and closes at once, from eight
    threads, forty times each. The kernel lists a closed socket as root's; blefleet-web takes
    a uid only from a socket someone still holds, so every attempt is refused and no LED moves."""
    wait_ready(stack)
    stack.blectl("led", "off", "--all")
    wait_until(lambda: all(v == 0 for v in leds(stack).values()), 15, "every LED off")
    log = stack.work / "blefleet-web.log"
    refusals_before = log.read_text().count("web request refused")
    result = subprocess.run(
        ["/usr/bin/setpriv", f"--reuid={STRANGER}", f"--regid={STRANGER}", "--clear-groups",
         "/usr/bin/python3", "-I", "-c", ATTACK, str(stack.port), "8", "40"],
        capture_output=True, text=True, timeout=120, cwd="/")
    assert result.returncode == 0, result.stderr
    # Every attempt is answered (refused) by blefleet-web, each said in its log.
    wait_until(lambda: log.read_text().count("web request refused") - refusals_before >= 320, 60,
               "blefleet-web to refuse all 320 attempts")
    assert all(v == 0 for v in leds(stack).values()), leds(stack)
    calls = [line for line in log.read_text().splitlines() if "web call" in line and "led.set" in line and "uid 0" in line]
    assert calls == [], calls[:3]
