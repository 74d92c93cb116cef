"""blefleet for Python against the real daemon on a BlueZoo testbed, as a script's author would
check it: the boards' own state (the testbed's) is the referee."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from blefleet import DaemonUnreachable, Fleet, FleetError


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def states(daemon) -> dict[str, dict]:
    return {b["name"]: b for b in daemon.testbed.state()["boards"]}


def test_led_on_a_selection_gives_each_boards_result_and_switches_the_boards(daemon):
    async def scenario():
        async with await Fleet.connect(daemon.socket) as fleet:
            on = await fleet.led("all", True)
            off = await fleet.led(["nano-02"], False)
            return on, off
    on, off = run(scenario())
    count = daemon.boards
    assert on.ok == count and not on.failed
    assert sorted(r.name for r in on) == [f"nano-{i:02d}" for i in range(1, count + 1)]
    assert all(r.latency_ms is not None for r in on)
    assert [(r.name, r.ok) for r in off] == [("nano-02", True)]
    assert {name: b["led"] for name, b in states(daemon).items()} == {
        f"nano-{i:02d}": 0 if i == 2 else 1 for i in range(1, count + 1)}


def test_identify_blinks_the_board_and_leaves_its_led_as_wanted(daemon):
    before = states(daemon)["nano-03"]

    async def scenario():
        async with await Fleet.connect(daemon.socket) as fleet:
            return await fleet.identify("nano-03")
    result = run(scenario())
    after = states(daemon)["nano-03"]
    assert [(r.name, r.ok) for r in result] == [("nano-03", True)]
    assert after["led_writes"] - before["led_writes"] == 13  # six blinks, and the LED put back
    assert after["led"] == before["led"]


def test_temperatures_and_a_profiles_sensor_are_what_the_boards_measure(daemon):
    async def scenario():
        async with await Fleet.connect(daemon.socket) as fleet:
            return await fleet.temperatures(), await fleet.sensor("humidity"), await fleet.boards()
    temperatures, humidity, boards = run(scenario())
    truth = states(daemon)
    assert {r.name: (r.value, r.unit) for r in temperatures} == {n: (b["temperature"], "°C") for n, b in truth.items()}
    assert {r.name: (pytest.approx(r.value), r.unit) for r in humidity} == {
        n: (pytest.approx(b["humidity"]), "%") for n, b in truth.items()}
    # Hundredths, as the profile's scale gives them: nano-02's 41.20 is written with both.
    assert {r.name: f"{r.value:.{r.decimals}f}" for r in humidity} == {
        n: f"{b['humidity']:.2f}" for n, b in truth.items()}
    assert {b.name: (b.state, b.sensors["temperature"]) for b in boards} == {
        n: ("ready", b["temperature"]) for n, b in truth.items()}


def test_events_follow_what_happens(daemon):
    async def scenario():
        async with await Fleet.connect(daemon.socket) as watcher, await Fleet.connect(daemon.socket) as switcher:
            async with watcher.subscribe("led") as events:
                await switcher.led("nano-03", False)
                return await asyncio.wait_for(anext(events), 10)
    event = run(scenario())
    address = daemon.testbed.address("nano-03")
    assert event["topic"] == "led" and event["address"] == address and event["data"] == {"on": False}


def test_history_holds_the_readings(daemon):
    async def scenario():
        async with await Fleet.connect(daemon.socket) as fleet:
            return await fleet.history("nano-01", since=timedelta(minutes=10), resolution="raw")
    (series,) = run(scenario())
    assert series.name == "nano-01" and series.points, series
    assert {value for _, value in series.points} == {states(daemon)["nano-01"]["temperature"]}
    assert series.decimals == 0  # whole degrees, as the nano profile's temperature is


def test_errors_are_sentences_with_the_daemons_codes(daemon, tmp_path):
    async def no_board():
        async with await Fleet.connect(daemon.socket) as fleet:
            await fleet.led("no-such-board", True)
    with pytest.raises(FleetError) as refused:
        run(no_board())
    assert refused.value.code == -32001 and "no-such-board" in refused.value.message

    async def bad_param():
        async with await Fleet.connect(daemon.socket) as fleet:
            await fleet.call("led.set", {"select": "all"})
    with pytest.raises(FleetError) as invalid:
        run(bad_param())
    assert invalid.value.code == -32602 and '"on"' in invalid.value.message

    with pytest.raises(DaemonUnreachable) as unreachable:
        run(Fleet.connect(str(tmp_path / "none.sock")))
    assert "does not exist" in str(unreachable.value)


def test_calls_at_once_on_one_connection_each_get_their_own_answer(daemon):
    names = [f"nano-{i:02d}" for i in range(1, daemon.boards + 1)]

    async def scenario():
        async with await Fleet.connect(daemon.socket) as fleet:
            return await asyncio.gather(*(fleet.temperatures(name) for name in names), fleet.status())
    *readings, status = run(scenario())
    assert [r[0].name for r in readings] == names
    assert status["boards"]["ready"] == daemon.boards


def test_the_package_is_typed_and_installs_with_pip(tmp_path):
    """What a user of the package gets: mypy --strict finds nothing in it, and pip installs it
    from the repository (py.typed included) and it imports."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    package = Path(__file__).resolve().parents[1]
    typed = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "mypy"),
                            str(package / "blefleet")], capture_output=True, text=True, timeout=300)
    assert typed.returncode == 0, typed.stdout + typed.stderr
    # From a copy: setuptools builds in the source directory.
    source = tmp_path / "source"
    shutil.copytree(package, source, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                "--no-deps", "--no-build-isolation", "--target", str(target), str(source)],
                               capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    assert (target / "blefleet" / "py.typed").exists()
    imported = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import blefleet; "
                               "print(blefleet.Fleet.__name__, blefleet.DEFAULT_SOCKET)", str(target)],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert imported.stdout.split() == ["Fleet", "/run/blefleet/blefleetd.sock"], imported.stderr


def test_a_connection_the_daemon_closed_as_idle_is_made_again_by_the_next_call(tmp_path):
    """blefleetd closes a connection that holds nothing and says nothing for idle-timeout-s; a
    script that keeps a Fleet open between calls longer than that does not see it: the next call
    makes the connection again. A connection the daemon refused says why."""
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    from conftest import Daemon
    from support import LANES
    from test_devices import BASE_PYTHON, readable_packages
    if "bluezoo" not in LANES:
        pytest.skip("the Python package's tests run on the BlueZoo lane")
    work = Path(tempfile.mkdtemp(prefix="bfidle-", dir="/tmp"))
    work.chmod(0o755)
    made = None
    try:
        # A read-only group opens the socket to every account: the daemon itself refuses strangers.
        made = Daemon(work, config="idle-timeout-s: 1\nread-only-group: nogroup\n")

        async def scenario() -> tuple[int, str, int]:
            async with await Fleet.connect(made.socket) as fleet:
                first = len(await fleet.boards())
                while fleet.closed is None:  # the daemon closes it after a second of silence
                    await asyncio.sleep(0.05)
                reason = fleet.closed
                return first, reason, len(await fleet.boards())
        first, reason, again = run(scenario())
        assert first == again == made.boards and reason == "blefleetd closed the connection", (first, reason, again)
        # uid 4242 (no group of the daemon's) is told why it was refused.
        stranger = subprocess.run(
            ["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", BASE_PYTHON, "-c",
             "import asyncio, sys\nsys.path.insert(0, sys.argv[2])\nfrom blefleet import Fleet, FleetError\n"
             "async def main():\n    fleet = await Fleet.connect(sys.argv[1])\n"
             # Whether the call is sent before the daemon's refusal comes or after, it says why.
             "    try:\n        await fleet.boards()\n    except FleetError as e:\n        print('refused:', e)\n"
             "asyncio.run(main())\n", made.socket, readable_packages(work)],
            capture_output=True, text=True, timeout=60, cwd="/")
        assert "refused:" in stranger.stdout and "Permission denied" in stranger.stdout, (stranger.stdout, stranger.stderr)
    finally:
        if made:
            made.stop()
        shutil.rmtree(work, ignore_errors=True)

