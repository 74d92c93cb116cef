"""Checks the Debian package scripts/package builds, and runs the daemon out of it.

Run from the repository root:
    .venv-testbed/bin/python -m pytest -q -p no:cacheprovider packaging/tests
The package is built once per run (scripts/package --no-lintian, reusing .build); set
BLEFLEET_DEB=dist/blefleet_<version>_<arch>.deb to check an existing one instead.
Needs dpkg-dev, lintian and systemd's tools (systemd-analyze, systemd-sysusers,
systemd-socket-activate), and the testbed for the end-to-end tests.
"""

from __future__ import annotations

import grp
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "lib/systemd/system/blefleetd.service"
SOCKET_UNIT = "lib/systemd/system/blefleetd.socket"
MQTT_SERVICE = "lib/systemd/system/blefleet-mqtt.service"
WEB_SERVICE = "lib/systemd/system/blefleet-web.service"
WEB_DEFAULTS = "etc/default/blefleet-web"
CONFFILE = "etc/blefleet/blefleetd.conf"
POLICY = "usr/share/blefleet/dbus/zz-blefleet-restrict-bluez.conf"
BLUEZ_RESTART = "lib/systemd/system/bluetooth.service.d/blefleet-restart.conf"

# Every file the package ships besides the man pages, with its mode.
EXPECTED_FILES = {
    "etc/blefleet/blefleetd.conf": 0o644,
    "lib/systemd/system/blefleetd.service": 0o644,
    "lib/systemd/system/blefleetd.socket": 0o644,
    "lib/systemd/system/blefleet-mqtt.service": 0o644,
    "lib/systemd/system/blefleet-web.service": 0o644,
    "etc/default/blefleet-web": 0o644,
    "lib/systemd/system/bluetooth.service.d/blefleet-restart.conf": 0o644,
    "usr/bin/blectl": 0o755,
    "usr/sbin/blefleetd": 0o755,
    "usr/bin/blefleet-mqtt": 0o755,
    "usr/bin/blefleet-web": 0o755,
    "usr/lib/sysusers.d/blefleet.conf": 0o644,
    "usr/share/blefleet/dbus/zz-blefleet-restrict-bluez.conf": 0o644,
    "usr/share/bash-completion/completions/blectl": 0o644,
    "usr/share/zsh/vendor-completions/_blectl": 0o644,
    "usr/share/fish/vendor_completions.d/blectl.fish": 0o644,
    "usr/share/doc/blefleet/copyright": 0o644,
    "usr/share/doc/blefleet/changelog.gz": 0o644,
    "usr/share/lintian/overrides/blefleet": 0o644,
}


def run(*argv: str | os.PathLike, timeout: float = 60, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"{argv} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def python_files() -> list[str]:
    """The Python package's modules (and its py.typed marker), relative to python/blefleet."""
    package = ROOT / "python" / "blefleet"
    return sorted(str(p.relative_to(package)) for p in package.rglob("*")
                  if p.is_file() and (p.suffix == ".py" or p.name == "py.typed"))


def man_pages() -> list[Path]:
    return sorted(p for p in (ROOT / "man").iterdir() if re.fullmatch(r".+\.[1-8]", p.name))


@pytest.fixture(scope="session")
def deb() -> Path:
    given = os.environ.get("BLEFLEET_DEB")
    if given:
        return Path(given).resolve()
    out = run(ROOT / "scripts/package", "--no-lintian", cwd=ROOT, timeout=900)
    return ROOT / out.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def tree(deb: Path, tmp_path_factory) -> Path:
    """The package unpacked, control files in DEBIAN/."""
    dest = tmp_path_factory.mktemp("deb") / "root"
    run("dpkg-deb", "--raw-extract", deb, dest)
    return dest


@pytest.fixture(scope="session")
def listing(deb: Path) -> dict[str, tuple[str, str]]:
    """path (no leading ./) -> (permissions as `ls` shows them, owner/group)."""
    entries = {}
    for line in run("dpkg-deb", "--contents", deb).stdout.splitlines():
        perms, owner, _size, _date, _time, path = line.split(None, 5)
        entries[path.removeprefix("./").rstrip("/")] = (perms, owner)
    return entries


def unit_settings(path: Path) -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def mode_string(mode: int, kind: str = "-") -> str:
    bits = "rwxrwxrwx"
    return kind + "".join(bits[i] if mode & (1 << (8 - i)) else "-" for i in range(9))


# MARK: contents


def test_package_ships_every_file_with_its_mode_owned_by_root(listing):
    files = {path: perms for path, (perms, _) in listing.items() if not perms.startswith("d")}
    expected = {path: mode_string(mode) for path, mode in EXPECTED_FILES.items()}
    for page in man_pages():
        expected[f"usr/share/man/man{page.suffix[1:]}/{page.name}.gz"] = "-rw-r--r--"
    for module in python_files():
        expected[f"usr/lib/python3/dist-packages/blefleet/{module}"] = "-rw-r--r--"
    assert files == expected
    directories = {path: perms for path, (perms, _) in listing.items() if perms.startswith("d")}
    assert set(directories.values()) == {"drwxr-xr-x"}
    assert {owner for _, owner in listing.values()} == {"root/root"}


def test_the_config_files_are_the_conffiles(tree):
    assert (tree / "DEBIAN/conffiles").read_text().split() == ["/etc/blefleet/blefleetd.conf", "/etc/default/blefleet-web"]
    assert (tree / CONFFILE).is_file() and (tree / WEB_DEFAULTS).is_file()


def test_control_names_the_package_and_depends_on_libc_not_on_the_swift_runtime(tree):
    control = dict(
        line.split(": ", 1) for line in (tree / "DEBIAN/control").read_text().splitlines() if ": " in line and not line.startswith(" ")
    )
    assert control["Package"] == "blefleet"
    assert control["Architecture"] == run("dpkg", "--print-architecture").stdout.strip()
    assert control["Version"] == run(tree / "usr/bin/blectl", "--version").stdout.strip()
    assert "libc6" in control["Depends"] and "swift" not in control["Depends"].lower()
    # libmosquitto is opened with dlopen by the MQTT module, only for blectl --broker and the
    # daemon's bridge: recommended, never linked (it would bring libssl and libcrypto).
    assert "libmosquitto1" in control["Recommends"] and "mosquitto" not in control["Depends"]
    for binary in ("usr/bin/blectl", "usr/sbin/blefleetd"):
        needed = re.findall(r"NEEDED\s+(\S+)", run("objdump", "-p", tree / binary).stdout)
        assert needed and not [lib for lib in needed if "swift" in lib.lower() or "Foundation" in lib], needed
        assert not [lib for lib in needed if lib.startswith(("libmosquitto", "libssl", "libcrypto"))], needed
        assert "not stripped" not in run("file", tree / binary).stdout


def test_md5sums_cover_every_file(tree):
    sums = dict(reversed(line.split(None, 1)) for line in (tree / "DEBIAN/md5sums").read_text().splitlines())
    shipped = {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() and p.parts[len(tree.parts)] != "DEBIAN"}
    assert set(sums) == shipped
    run("md5sum", "--check", "--quiet", "--strict", input=(tree / "DEBIAN/md5sums").read_text(), cwd=tree)


def test_man_pages_are_the_sources_gzipped(tree):
    pages = man_pages()
    assert "blectl.1" in [p.name for p in pages]
    for page in pages:
        packed = tree / f"usr/share/man/man{page.suffix[1:]}/{page.name}.gz"
        assert run("gzip", "-dc", packed).stdout == page.read_text()


def test_completions_are_blectls_own(tree):
    bash = (tree / "usr/share/bash-completion/completions/blectl").read_text()
    assert not bash.startswith("#!") and re.search(r"^complete .*-F _blectl blectl$", bash, re.MULTILINE)
    assert (tree / "usr/share/zsh/vendor-completions/_blectl").read_text().startswith("#compdef blectl")
    assert re.search(r"^complete -c '?blectl'? ", (tree / "usr/share/fish/vendor_completions.d/blectl.fish").read_text(), re.MULTILINE)


def test_maintainer_scripts_create_the_user_reload_systemd_and_enable_the_socket(tree):
    for script in ("postinst", "prerm", "postrm"):
        path = tree / "DEBIAN" / script
        assert os.access(path, os.X_OK)
        run("sh", "-n", path)
    postinst = (tree / "DEBIAN/postinst").read_text()
    assert "systemd-sysusers" in postinst and "blefleet.conf" in postinst
    assert "daemon-reload" in postinst
    assert "deb-systemd-helper enable 'blefleetd.socket'" in postinst
    assert "deb-systemd-invoke start 'blefleetd.socket'" in postinst
    # The MQTT bridge is tracked, not enabled: it needs an mqtt: section first.
    assert "deb-systemd-helper update-state 'blefleet-mqtt.service'" in postinst
    assert "enable 'blefleet-mqtt.service'" not in postinst
    assert "blefleet-mqtt.service" in (tree / "DEBIAN/prerm").read_text()
    assert "blefleet-mqtt.service" in (tree / "DEBIAN/postrm").read_text()
    # So is the web dashboard: the admin enables it.
    assert "deb-systemd-helper update-state 'blefleet-web.service'" in postinst
    assert "enable 'blefleet-web.service'" not in postinst
    assert "blefleet-web.service" in (tree / "DEBIAN/prerm").read_text()
    assert "blefleet-web.service" in (tree / "DEBIAN/postrm").read_text()


# MARK: the default configuration


def daemon_defaults() -> dict[str, str]:
    """Each config key -> its default, read from the daemon's sources."""
    source = (ROOT / "Sources/BlefleetDaemon/DaemonConfiguration+File.swift").read_text()
    struct = (ROOT / "Sources/BlefleetDaemon/DaemonConfiguration.swift").read_text()
    properties = dict(re.findall(r"public var (\w+):[^=\n]*= (.+)", struct))
    defaults = {}
    blocks = re.split(r"Setting\(\s*key: ", source)[1:]
    assert blocks, "no Setting(key: ...) found in DaemonConfiguration+File.swift"
    for block in blocks:
        key = re.match(r'"([^"]+)"', block).group(1)
        prop = re.search(r"config\.(\w+) =", block).group(1)
        defaults[key] = normalize_swift(properties[prop].strip())
    return defaults


def normalize_swift(value: str) -> str:
    if value.startswith('"'):
        return value.strip('"')
    if value == "nil":
        return ""
    if value == "HistorySettings()":  # its defaults, as blefleetd.conf(5) writes them
        return "{enabled: true, raw-days: 10, five-minute-days: 90, max-size-mb: 512}"
    named = re.fullmatch(r'\.named\("([^"]*)"\)', value)  # AdapterSelection.named("hci0")
    if named:
        return named.group(1)
    if value.startswith("."):
        return value[1:]
    if re.fullmatch(r"[0-9_ <]+", value):
        return str(eval(value.replace("_", "")))  # integer literals like 1 << 20 or 10_000
    return value


def conffile_values(text: str) -> dict[str, str]:
    values = {}
    for line in text.splitlines():
        match = re.fullmatch(r"#([a-z-]+): (.*)", line)
        if match:
            values[match.group(1)] = match.group(2).strip('"')
    return values


def test_default_config_comments_out_every_key_with_its_default(tree):
    text = (tree / CONFFILE).read_text()
    active = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert active == [], "every setting must be commented out"
    assert conffile_values(text) == daemon_defaults()


# MARK: units and users


def test_units_pass_systemd_analyze_verify_as_installed(tree, tmp_path):
    # An installed system: the package's files plus the host's units (sysinit.target…).
    root = tmp_path / "root"
    shutil.copytree(tree, root, symlinks=True, ignore=shutil.ignore_patterns("DEBIAN"))
    shutil.copytree("/lib/systemd/system", root / "lib/systemd/system", symlinks=True, dirs_exist_ok=True)
    # ExecReload= runs the host's kill (procps/util-linux), which every system has.
    (root / "bin").mkdir(exist_ok=True)
    shutil.copy2(os.path.realpath("/bin/kill"), root / "bin/kill")
    env = dict(os.environ, MANPATH=str(tree / "usr/share/man"))
    result = run(
        "systemd-analyze", "verify", f"--root={root}", SERVICE, SOCKET_UNIT, MQTT_SERVICE, WEB_SERVICE, cwd=root, env=env, check=False)
    report = [line for line in (result.stdout + result.stderr).splitlines()
              if line and "running with root privileges is not recommended" not in line]
    assert (result.returncode, report) == (0, [])


def test_service_exposure_is_at_most_1_5(tree):
    result = run("systemd-analyze", "security", "--offline=yes", tree / SERVICE)
    score = float(re.search(r"Overall exposure level for blefleetd.service: ([0-9.]+)", result.stdout).group(1))
    assert score <= 1.5


@pytest.mark.parametrize("unit, exec_start", [
    (MQTT_SERVICE, "/usr/bin/blefleet-mqtt"),
    (WEB_SERVICE, "/usr/bin/blefleet-web $BLEFLEET_WEB_OPTIONS"),
])
def test_client_units_have_ip_and_the_daemons_socket_and_nothing_else(tree, unit, exec_start):
    name = Path(unit).name
    result = run("systemd-analyze", "security", "--offline=yes", tree / unit)
    score = float(re.search(rf"Overall exposure level for {re.escape(name)}: ([0-9.]+)", result.stdout).group(1))
    assert score <= 2.5, result.stdout
    service = unit_settings(tree / unit)
    assert service["ExecStart"] == [exec_start]
    assert service["DynamicUser"] == ["yes"] and service["SupplementaryGroups"] == ["blefleet"]
    assert service["RestrictAddressFamilies"] == ["AF_UNIX AF_INET AF_INET6"]
    assert service["CapabilityBoundingSet"] == [""] and service["NoNewPrivileges"] == ["yes"]
    assert service["RestartPreventExitStatus"] == ["78"]
    assert int(service["LimitNOFILE"][0]) >= 1024
    # The daemon has no IP at all: the clients are the only units facing the network.
    daemon = unit_settings(tree / SERVICE)
    assert "AF_INET" not in daemon["RestrictAddressFamilies"][0] and daemon["IPAddressDeny"] == ["any"]


def test_web_unit_reads_its_options_from_a_defaults_file_that_keeps_it_on_loopback(tree):
    assert unit_settings(tree / WEB_SERVICE)["EnvironmentFile"] == ["-/etc/default/blefleet-web"]
    assert unit_settings(tree / WEB_DEFAULTS) == {"BLEFLEET_WEB_OPTIONS": ['""']}


def test_service_and_socket_settings(tree):
    service = unit_settings(tree / SERVICE)
    assert service["Type"] == ["notify"]
    assert service["Restart"] == ["on-failure"]
    assert service["WatchdogSec"] and service["User"] == ["blefleet"] and service["Group"] == ["blefleet"]
    assert service["RuntimeDirectory"] == ["blefleet"] and service["RuntimeDirectoryPreserve"] == ["yes"]
    assert service["StateDirectory"] == ["blefleet"] and service["ConfigurationDirectory"] == ["blefleet"]
    assert "PrivateUsers" not in service  # peers' uids and groups must stay real
    assert int(service["LimitNOFILE"][0]) >= 4096
    # The system bus and the control socket; the kernel's Bluetooth management interface.
    assert service["RestrictAddressFamilies"] == ["AF_UNIX AF_BLUETOOTH"]
    assert service["CapabilityBoundingSet"] == ["CAP_NET_ADMIN"] and service["AmbientCapabilities"] == ["CAP_NET_ADMIN"]
    # A Bluetooth socket exists only in the initial network namespace; IP stays shut.
    assert "PrivateNetwork" not in service and service["IPAddressDeny"] == ["any"]
    sock = unit_settings(tree / SOCKET_UNIT)
    assert sock["ListenStream"] == ["/run/blefleet/blefleetd.sock"]
    assert sock["SocketMode"] == ["0660"] and sock["SocketGroup"] == ["blefleet"]


def test_bluetoothd_is_restarted_when_it_crashes_and_only_that_changes(tree, tmp_path):
    # A drop-in for BlueZ's own unit: Restart= and its delay, nothing else of bluetooth.service.
    assert unit_settings(tree / BLUEZ_RESTART) == {"Restart": ["on-failure"], "RestartSec": ["1s"]}
    unit = Path("/lib/systemd/system/bluetooth.service")
    if not unit.exists():
        pytest.skip("no bluetooth.service here to load the drop-in with")
    # systemd loads it with the unit as installed and finds nothing to say about it.
    root = tmp_path / "root"
    shutil.copytree(tree, root, symlinks=True, ignore=shutil.ignore_patterns("DEBIAN"))
    shutil.copytree("/lib/systemd/system", root / "lib/systemd/system", symlinks=True, dirs_exist_ok=True)
    result = run("systemd-analyze", "verify", f"--root={root}", "bluetooth.service", cwd=root, check=False)
    assert [line for line in (result.stdout + result.stderr).splitlines() if "blefleet-restart.conf" in line] == []


def test_sysusers_creates_the_blefleet_user_and_group(tree, tmp_path):
    (tmp_path / "etc").mkdir()
    run("systemd-sysusers", f"--root={tmp_path}", tree / "usr/lib/sysusers.d/blefleet.conf")
    users = {line.split(":")[0]: line.split(":") for line in (tmp_path / "etc/passwd").read_text().splitlines()}
    groups = {line.split(":")[0]: line.split(":") for line in (tmp_path / "etc/group").read_text().splitlines()}
    user = users["blefleet"]
    assert 0 < int(user[2]) < 1000 and user[3] == groups["blefleet"][2]
    assert user[5] == "/var/lib/blefleet" and user[6].endswith("nologin")


# MARK: lintian


def justified_lintian_warnings() -> set[str]:
    text = (ROOT / "packaging/README").read_text()
    section = text.split("## Lintian", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^- `([a-z0-9-]+)`", section, re.MULTILINE))


def test_lintian_reports_no_errors_and_only_justified_warnings(deb):
    if not shutil.which("lintian"):
        pytest.fail("lintian is not installed (apt-get install lintian)")
    result = run("lintian", deb, check=False, timeout=300)
    tags = [line.split()[2] for line in result.stdout.splitlines() if line[:2] in ("E:", "W:")]
    errors = [line for line in result.stdout.splitlines() if line.startswith("E:")]
    assert errors == []
    assert set(tags) <= justified_lintian_warnings(), result.stdout


# MARK: the opt-in D-Bus policy


BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <includedir>{includedir}</includedir>
</busconfig>
"""

# BlueZ's own policy as Debian 12 ships it (/etc/dbus-1/system.d/bluetooth.conf), the part
# that matters here: root owns org.bluez, the bluetooth group and everyone may call it.
BLUEZ_POLICY = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <policy user="root"><allow own="org.bluez"/><allow send_destination="org.bluez"/></policy>
  <policy group="bluetooth"><allow send_destination="org.bluez"/></policy>
  <policy context="default"><allow send_destination="org.bluez"/></policy>
</busconfig>
"""


def call_bluez_as(address: str, uid: int, gid: int) -> subprocess.CompletedProcess:
    """org.freedesktop.DBus.Peer.Ping to org.bluez, sent by uid/gid with no other groups."""
    return run("setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
               "dbus-send", f"--bus={address}", "--print-reply", "--dest=org.bluez", "/",
               "org.freedesktop.DBus.Peer.Ping", check=False, timeout=20)


@pytest.mark.parametrize("with_policy", [False, True])
def test_restrict_bluez_policy_leaves_org_bluez_to_root_and_the_daemon_user(tree, with_policy):
    # The user `blefleet` exists only where the package is installed; here the rules are
    # checked with the policy's user swapped for `daemon` (uid 1), an account every Debian has.
    # The bus lives in a directory other users can reach (pytest's tmp_path is 0700).
    with tempfile.TemporaryDirectory(prefix="blefleet-policy-") as tmp:
        Path(tmp).chmod(0o755)
        check_policy(tree, Path(tmp), with_policy)


def check_policy(tree: Path, tmp_path: Path, with_policy: bool) -> None:
    includedir = tmp_path / "system.d"
    includedir.mkdir()
    (includedir / "bluetooth.conf").write_text(BLUEZ_POLICY)
    if with_policy:
        policy = (tree / POLICY).read_text()
        assert policy.count('user="blefleet"') == 1
        (includedir / Path(POLICY).name).write_text(policy.replace('user="blefleet"', 'user="daemon"'))
    config = tmp_path / "bus.conf"
    config.write_text(BUS_CONFIG.format(socket=tmp_path / "bus", includedir=includedir))
    bus = subprocess.Popen(["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    owner = None
    try:
        address = bus.stdout.readline().strip()
        assert address, bus.stderr.read()
        # root owns org.bluez, like bluetoothd: dbus-fast answers Peer.Ping for it.
        owner = subprocess.Popen(
            [str(ROOT / ".venv-testbed/bin/python"), "-c",
             "import asyncio, sys\n"
             "from dbus_fast.aio import MessageBus\n"
             "async def main():\n"
             f"    bus = await MessageBus(bus_address={address!r}).connect()\n"
             "    await bus.request_name('org.bluez')\n"
             "    print('owned', flush=True)\n"
             "    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)\n"
             "asyncio.run(main())\n"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert owner.stdout.readline().strip() == "owned"
        daemon_gid = grp.getgrnam("daemon").gr_gid
        bluetooth_gid = grp.getgrnam("bluetooth").gr_gid if _has_group("bluetooth") else 65534
        root, daemon_user = call_bluez_as(address, 0, 0), call_bluez_as(address, 1, daemon_gid)
        nobody, bluetooth = call_bluez_as(address, 65534, 65534), call_bluez_as(address, 65534, bluetooth_gid)
        assert root.returncode == 0, root.stderr
        assert daemon_user.returncode == 0, daemon_user.stderr
        if with_policy:
            for other in (nobody, bluetooth):
                assert other.returncode != 0 and "AccessDenied" in other.stderr, other
        else:  # Debian's default: anyone may call BlueZ, which is why the drop-in exists.
            assert nobody.returncode == 0 and bluetooth.returncode == 0
    finally:
        for process in (owner, bus):
            if process and process.poll() is None:
                process.terminate()
                process.wait(timeout=10)


def _has_group(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


# MARK: end to end on the testbed


@pytest.fixture(scope="module")
def testbed():
    out = run(ROOT / "scripts/testbed", "start", "--boards", "5", timeout=120).stdout
    env = dict(re.findall(r"^export (\w+)=(.*)$", out, re.MULTILINE))
    env = {k: shlex.split(v)[0] for k, v in env.items()}
    try:
        yield env
    finally:
        run(ROOT / "scripts/testbed", "stop", env=dict(os.environ, **env), check=False, timeout=60)


def board_leds(testbed) -> list:
    state = json.loads(run(ROOT / "scripts/testbed", "state", env=dict(os.environ, **testbed)).stdout)
    return [board["led"] for board in state["boards"]]


def daemon_command(tree: Path, work: Path, testbed: dict) -> list[str]:
    """The unit's ExecStart= with the binary taken from the unpacked package, plus the
    overrides a test needs: a config file, and socket, state dir and bus in temp dirs."""
    exec_start = unit_settings(tree / SERVICE)["ExecStart"]
    assert len(exec_start) == 1
    argv = shlex.split(exec_start[0])
    assert argv[0] == "/usr/sbin/blefleetd"
    # The shipped config with every line uncommented (each default must be accepted);
    # the socket group is the test user's, as `blefleet` exists only once installed.
    values = conffile_values((tree / CONFFILE).read_text())
    values["socket-group"] = grp.getgrgid(os.getgid()).gr_name
    config = work / "blefleetd.conf"
    config.write_text("".join(f"{key}: {json.dumps(v) if v == '' else v}\n" for key, v in values.items()))
    state = work / "state"
    state.mkdir()
    return [str(tree / argv[0].lstrip("/")), *argv[1:], "--config", str(config),
            "--socket", str(work / "blefleetd.sock"), "--state-dir", str(state),
            "--bus", testbed["DBUS_SYSTEM_BUS_ADDRESS"]]


def blectl(tree: Path, sock: Path, *args: str) -> subprocess.CompletedProcess:
    return run(tree / "usr/bin/blectl", "--socket", sock, *args, check=False, timeout=60)


def scan_finds_every_board(tree: Path, sock: Path) -> None:
    result = blectl(tree, sock, "--no-legend", "scan", "--seconds", "3")
    assert result.returncode == 0, result.stderr
    assert len([line for line in result.stdout.splitlines() if line.strip()]) == 5, result.stdout


class Logged:
    """A child process whose stderr is drained by a thread (so a chatty daemon never
    blocks on a full pipe) and kept for failure messages."""

    def __init__(self, argv: list[str], env: dict | None = None):
        self.process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        for line in self.process.stderr:
            with self.changed:
                self.lines.append(line.rstrip("\n"))
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def wait_for_line(self, text: str, seconds: float) -> None:
        with self.changed:
            found = self.changed.wait_for(
                lambda: any(text in line for line in self.lines) or not self.reader.is_alive(), timeout=seconds)
            assert found and any(text in line for line in self.lines), f"no \"{text}\" within {seconds} s: {self.log}"

    @property
    def log(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> int:
        status = stop(self.process)
        self.reader.join(timeout=10)
        return status


def stop(process: subprocess.Popen) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
            raise
    return process.returncode


class NotifySocket:
    """Stands in for systemd's notification socket: receives sd_notify datagrams in a
    thread, as systemd does all the time (the queue holds only a few datagrams; a daemon
    whose messages nobody reads blocks in sd_notify)."""

    def __init__(self, path: Path):
        self.path = path
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(str(path))
        self.socket.settimeout(0.2)
        self.messages: list[str] = []
        self.changed = threading.Condition()
        self.closing = False
        self.reader = threading.Thread(target=self._receive, daemon=True)
        self.reader.start()

    def _receive(self) -> None:
        while not self.closing:
            try:
                data = self.socket.recv(65536)
            except TimeoutError:
                continue
            with self.changed:
                self.messages += data.decode().split("\n")
                self.changed.notify_all()

    def wait_for(self, message: str, daemon: "Logged", seconds: float) -> None:
        with self.changed:
            self.changed.wait_for(lambda: message in self.messages or daemon.process.poll() is not None, timeout=seconds)
            assert message in self.messages, (
                f"no {message} within {seconds} s (exit status {daemon.process.poll()}); got {self.messages}: {daemon.log}")

    def close(self) -> None:
        self.closing = True
        self.reader.join(timeout=5)
        self.socket.close()


def test_daemon_started_alone_with_its_unit_command_line_serves_led_on_all(tree, testbed):
    with tempfile.TemporaryDirectory(prefix="blefleet-pkg-") as tmp:
        work = Path(tmp)
        notify = NotifySocket(work / "notify")
        env = dict(os.environ, NOTIFY_SOCKET=str(work / "notify"))
        env.pop("JOURNAL_STREAM", None)
        daemon = Logged(daemon_command(tree, work, testbed), env=env)
        try:
            notify.wait_for("READY=1", daemon, 60)
            sock = work / "blefleetd.sock"
            assert oct(sock.stat().st_mode & 0o777) == oct(0o660)
            scan_finds_every_board(tree, sock)
            result = blectl(tree, sock, "led", "on", "--all")
            assert result.returncode == 0, result.stderr
            assert board_leds(testbed) == [True] * 5
        finally:
            status = daemon.stop()
            notify.close()
        assert status == 0, daemon.log
        assert "STOPPING=1" in notify.messages


def test_packaged_python_module_runs_an_unchanged_bleak_script_through_the_packaged_daemon(tree, testbed):
    site = tree / "usr/lib/python3/dist-packages"
    # Debian's python3 imports the fleet's API; without bleak the launcher says what to install.
    plain = run("/usr/bin/python3", "-c", "import blefleet; print(blefleet.Fleet.__name__)",
                env=dict(os.environ, PYTHONPATH=str(site)), check=False)
    assert plain.stdout.strip() == "Fleet", plain.stderr
    no_bleak = run("/usr/bin/python3", "-m", "blefleet.bleak", "script.py", env=dict(os.environ, PYTHONPATH=str(site)),
                   check=False, cwd="/")
    if run("/usr/bin/python3", "-c", "import bleak", check=False).returncode != 0:
        assert no_bleak.returncode == 1 and "pip install 'bleak>=1.0'" in no_bleak.stderr, no_bleak.stderr
    with tempfile.TemporaryDirectory(prefix="blefleet-pkg-") as tmp:
        work = Path(tmp)
        notify = NotifySocket(work / "notify")
        env = dict(os.environ, NOTIFY_SOCKET=str(work / "notify"))
        env.pop("JOURNAL_STREAM", None)
        daemon = Logged(daemon_command(tree, work, testbed), env=env)
        try:
            notify.wait_for("READY=1", daemon, 60)
            sock = work / "blefleetd.sock"
            scan_finds_every_board(tree, sock)
            script = work / "discover.py"
            script.write_text(
                "import asyncio\nfrom bleak import BleakScanner\n"
                "for d in asyncio.run(BleakScanner.discover(timeout=2.0)):\n    print(d.address, d.name)\n")
            # bleak from the test's environment (pip), the module from the package's tree.
            result = run(sys.executable, "-m", "blefleet.bleak", "--socket", sock, script,
                         env=dict(os.environ, PYTHONPATH=str(site)), check=False, timeout=60)
            assert result.returncode == 0, result.stderr
            assert sum(" nano-" in line for line in result.stdout.splitlines()) == 5, result.stdout
        finally:
            status = daemon.stop()
            notify.close()
        assert status == 0, daemon.log


def test_packaged_web_serves_the_packaged_daemons_boards_and_refuses_the_network_without_passwords(tree, testbed):
    with tempfile.TemporaryDirectory(prefix="blefleet-pkg-") as tmp:
        work = Path(tmp)
        notify = NotifySocket(work / "notify")
        env = dict(os.environ, NOTIFY_SOCKET=str(work / "notify"))
        env.pop("JOURNAL_STREAM", None)
        daemon = Logged(daemon_command(tree, work, testbed), env=env)
        web = None
        try:
            notify.wait_for("READY=1", daemon, 60)
            sock = work / "blefleetd.sock"
            scan_finds_every_board(tree, sock)
            # Beyond loopback without --auth-file: refused, with a sentence saying why.
            refused = run(tree / "usr/bin/blefleet-web", "--socket", sock, "--listen", "0.0.0.0:8477", check=False, timeout=30)
            assert refused.returncode == 78 and "--auth-file" in refused.stderr, refused
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            web = Logged([str(tree / "usr/bin/blefleet-web"), "--socket", str(sock), "--listen", f"127.0.0.1:{port}",
                          "--log-target", "stderr"])
            web.wait_for_line("following blefleetd", 30)
            import urllib.request
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
                text = response.read().decode()
            assert "blefleet_up 1" in text, text
            assert len(re.findall(r"^blefleet_board_connected\{", text, re.MULTILINE)) == 5, text
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
                assert response.status == 200 and "text/html" in response.headers["Content-Type"]
        finally:
            if web is not None:
                assert web.stop() == 0, web.log
            daemon.stop()
            notify.close()


def test_daemon_socket_activated_with_its_unit_command_line_serves_led_off_all(tree, testbed):
    with tempfile.TemporaryDirectory(prefix="blefleet-pkg-") as tmp:
        work = Path(tmp)
        sock = work / "blefleetd.sock"
        # systemd-socket-activate stands in for blefleetd.socket: it listens, and on the
        # first connection runs the daemon with the listening socket as fd 3.
        activator = Logged(["systemd-socket-activate", "--listen", str(sock), *daemon_command(tree, work, testbed)])
        try:
            activator.wait_for_line("Listening on", 10)  # the socket is bound
            scan_finds_every_board(tree, sock)  # the first connection starts the daemon
            result = blectl(tree, sock, "led", "off", "--all")
            assert result.returncode == 0, result.stderr
            assert board_leds(testbed) == [False] * 5
        finally:
            status = activator.stop()
        assert status == 0, activator.log


def syscall_group(names: list[str], seen: dict[str, set[str]] | None = None) -> set[str]:
    """System call names in systemd's groups (@system-service…) and plain names, expanded."""
    seen = {} if seen is None else seen
    result: set[str] = set()
    for name in names:
        if not name.startswith("@"):
            result.add(name)
            continue
        if name not in seen:
            seen[name] = set()
            lines = run("systemd-analyze", "syscall-filter", name).stdout.splitlines()
            members = [line.strip() for line in lines[1:] if line.strip() and not line.strip().startswith("#")]
            seen[name] = syscall_group(members, seen)
        result |= seen[name]
    return result


def stop_traced(traced: Logged) -> int:
    """SIGTERM to the daemon under strace (strace itself would detach and leave it running)."""
    pid = traced.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children")
    daemons = [int(child) for child in children.read_text().split()] if children.exists() else []
    for child in daemons:
        os.kill(child, signal.SIGTERM)
    try:
        return traced.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        for child in daemons:
            os.kill(child, signal.SIGKILL)
        traced.process.kill()
        traced.process.wait(timeout=10)
        raise
    finally:
        traced.reader.join(timeout=10)


# Calls the unit denies (they fail with EPERM) that the daemon survives, and why.
DENIED_BUT_HARMLESS = {
    # libdispatch's worker threads set their QoS as a nice value; it ignores the result,
    # and the unprivileged blefleet user could not lower its nice value anyway.
    "setpriority",
}


def test_daemon_makes_only_the_system_calls_and_sockets_its_unit_allows(tree, testbed):
    # The seccomp filter and RestrictAddressFamilies= only bite under systemd; here the
    # daemon runs under strace through a scan and an LED switch, and every system call it
    # made must pass the unit's SystemCallFilter=, every socket it opened be of a family
    # its RestrictAddressFamilies= allows (on a testbed's private bus: AF_UNIX only, since
    # no kernel of this machine is behind that BlueZ).
    if not shutil.which("strace"):
        pytest.fail("strace is not installed (apt-get install strace)")
    allowed: set[str] = set()
    for entry in unit_settings(tree / SERVICE)["SystemCallFilter"]:
        names = entry.removeprefix("~").split()
        allowed = allowed - syscall_group(names) if entry.startswith("~") else allowed | syscall_group(names)
    assert "read" in allowed and "reboot" not in allowed
    with tempfile.TemporaryDirectory(prefix="blefleet-pkg-") as tmp:
        work = Path(tmp)
        notify = NotifySocket(work / "notify")
        env = dict(os.environ, NOTIFY_SOCKET=str(work / "notify"))
        trace = work / "trace"
        # strace traces from the exec on: what systemd would already have set up is not counted.
        traced = Logged(["strace", "-f", "-qq", "-o", str(trace), *daemon_command(tree, work, testbed)], env=env)
        try:
            notify.wait_for("READY=1", traced, 120)
            scan_finds_every_board(tree, work / "blefleetd.sock")
            result = blectl(tree, work / "blefleetd.sock", "led", "on", "--all")
            assert result.returncode == 0, result.stderr
        finally:
            status = stop_traced(traced)
            notify.close()
        assert status == 0, traced.log
        text = trace.read_text()
        used = set(re.findall(r"^\d+ +(\w+)\(", text, re.MULTILINE))
        # A stop whose system call number is negative is no call (the kernel runs none for
        # it): strace names it `syscall_0xffff...`, as it did once on a loaded machine.
        used = {name for name in used if not re.fullmatch(r"syscall_0x[89a-f][0-9a-f]{15}", name)}
        assert used and used - allowed - DENIED_BUT_HARMLESS == set()
        families = set(re.findall(r"^\d+ +socket\((AF_\w+)", text, re.MULTILINE))
        assert families and families <= set(" ".join(unit_settings(tree / SERVICE)["RestrictAddressFamilies"]).split())
