import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support import LANES, run_cli, testbeds  # noqa: E402

from blefleet_testbed.lanes import crash_lines  # noqa: E402

# The real lane's VM directory once known (given, or booted by `real_vm_dir`).
VM_DIRS: list[str] = [os.environ["BLEFLEET_TESTBED_VM"]] if os.environ.get("BLEFLEET_TESTBED_VM") else []


def _crashes() -> list[str]:
    return crash_lines(Path(VM_DIRS[0])) if VM_DIRS else []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A real-lane test during which bluetoothd crashed (5.66 does, now and then, under
    faults; the testbed restarts it as systemd would and registers the boards again) did not
    run as scheduled: when it failed, that is said in one line with the crash's reason and it
    runs again, once. A failure without a crash, or in the second run, is the test's."""
    if "real" not in item.nodeid:
        return None
    from _pytest.runner import runtestprotocol
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    before = len(_crashes())
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    crashed = _crashes()[before:]
    if crashed and any(r.failed for r in reports):
        failed = next(r for r in reports if r.failed)
        first = " / ".join(str(failed.longreprtext).strip().splitlines()[-2:])
        reporter = item.config.pluginmanager.get_plugin("terminalreporter")
        message = (f"testbed: bluetoothd crashed during {item.nodeid} ({'; '.join(crashed)}): it did not run as "
                   f"scheduled, so it runs again, once (the first run: {first})")
        if reporter is not None:
            reporter.write_line("")
            reporter.write_line(message)
        else:
            print(message, file=sys.stderr)
        item._initrequest()
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@pytest.fixture(scope="session")
def real_vm_dir():
    """The real lane's VM: $BLEFLEET_TESTBED_VM (scripts/test boots one for every test run),
    else one booted here on first use, for the whole session. A VM that cannot boot fails
    the real-lane tests with the reason; none is skipped."""
    given = os.environ.get("BLEFLEET_TESTBED_VM")
    booted: list[str] = []

    def get() -> str:
        if given:
            return given
        if not booted:
            path = tempfile.mkdtemp(prefix="bfvm-", dir="/tmp")
            run_cli("vm", "start", "--vm-dir", path, "--owner-pid", str(os.getpid()), timeout=900)
            booted.append(path)
            VM_DIRS[:] = [path]
        return booted[0]
    yield get
    for path in booted:
        run_cli("vm", "stop", "--vm-dir", path, check=False)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=LANES)
def lane(request):
    """A test that takes `lane` runs once per lane (BLEFLEET_LANES, both by default)."""
    return request.param


@pytest.fixture
def make_testbed(request, real_vm_dir):
    """Starts testbeds on demand (`make_testbed("--boards", "3")`); stops every one of them
    when the test ends, whether it passed or failed. On the test's `lane` when it takes one,
    else BlueZoo (`lane=` overrides). Run dirs are short paths under /tmp (Unix socket paths
    are limited to 107 bytes)."""
    lane = request.getfixturevalue("lane") if "lane" in request.fixturenames else "bluezoo"
    base = Path(tempfile.mkdtemp(prefix="bftb-", dir="/tmp"))
    try:
        with testbeds(base, real_vm=real_vm_dir, default_lane=lane) as make:
            yield make
    finally:
        shutil.rmtree(base, ignore_errors=True)
