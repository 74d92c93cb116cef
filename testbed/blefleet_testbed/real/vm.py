"""The real-BlueZ lane's VM: the kernel's Bluetooth stack, the project's patched btvirt
(virtual LE controllers with real links between them), a system bus and bluetoothd,
booted under qemu (TCG: this machine's KVM cannot run a stock kernel) by virtme-ng with
this machine's root filesystem shared read-only.

One VM serves one testbed at a time (one bluetoothd owns every controller); a VM can
outlive its testbeds, so a test suite boots it once (`scripts/testbed vm start`) and each
`scripts/testbed start --real` takes it, resets bluetoothd and uses its controllers.

The VM directory (shared read-write with the guest at the same path) holds:
  vm.json        what the VM offers: controllers, centrals, forwarded ports (the guest's
                 bus, its agent, its kernel's Bluetooth management interface)
  pids.json      the host processes (keeper, qemu)
  lock           flock()ed by the testbed that uses the VM
  console.log    qemu's and the guest init's output; guest.log, btvirt.log, bluetoothd.log
  guest.status   "ready", or "failed: <sentence>" written by the guest
The keeper process owns qemu: it stops it on SIGTERM, on `vm stop`, or when --owner-pid exits.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..busconfig import bus_config
from ..rundir import TestbedError, is_alive, record, terminate_recorded, wait_gone

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
BTVIRT_BUILD = REPO / "testbed" / "btvirt" / "build"
GUEST_INIT = HERE / "guest_init.sh"
BUS_PORT_GUEST = 7001
AGENT_PORT_GUEST = 7002
MGMT_PORT_GUEST = 7003  # mgmt_relay.py: the kernel's Bluetooth management interface
# A boot takes 1-2 minutes here while Swift builds beside it (TCG, 2 cores). The guest
# bounds each of its own steps (btvirt's controllers: 60 s, then one more start), so this
# only catches a guest that stalls outright; it leaves room for a machine slower than ours.
BOOT_TIMEOUT = 600.0
AGENT_TIMEOUT = 60.0
MAX_CONTROLLERS = 64  # the patched btvirt's MAX_BTDEV_ENTRIES


# bluetoothd as the lane runs it. Plain ATT like the Nano (no EATT), the testbed's device
# expiry; everything else is BlueZ's default.
MAIN_CONF = """[General]
TemporaryTimeout = {temporary_timeout}

[GATT]
Channels = 1

[Policy]
AutoEnable = false
"""


@dataclass(frozen=True)
class VMInfo:
    """What a booted VM offers (vm.json)."""

    path: Path
    centrals: int
    boards: int
    bus_port: int
    agent_port: int
    mgmt_port: int | None  # None: a VM booted by a testbed that had no management relay
    owner_pid: int = 0     # the VM stops when this process exits (0: only on `vm stop`)

    @property
    def controllers(self) -> int:
        return self.centrals + self.boards

    def central_index(self, i: int) -> int:
        return i

    def board_index(self, board: int) -> int:
        """hci index of board number `board` (1-based): boards follow the centrals."""
        return self.centrals + board - 1

    def agent(self, command: str, timeout: float = AGENT_TIMEOUT) -> str:
        """Runs one guest agent command; returns what follows "ok", raises on "error"."""
        reply = _agent_request(self.agent_port, command, timeout)
        if reply.startswith("ok"):
            return reply[2:].strip()
        message = reply.removeprefix("error").strip() or "the VM's agent gave no answer"
        raise TestbedError(f"the VM could not '{command}': {message}")

    async def agent_async(self, command: str, timeout: float = AGENT_TIMEOUT) -> str:
        return await asyncio.get_running_loop().run_in_executor(None, self.agent, command, timeout)

    def write_main_conf(self, temporary_timeout: float) -> None:
        (self.path / "main.conf").write_text(MAIN_CONF.format(temporary_timeout=int(temporary_timeout)))

    def log_tail(self, name: str, lines: int = 5) -> str:
        return _tail(self.path / name, lines)

    def boot_progress(self) -> str:
        """Where a boot that takes too long is: the guest's last step (with its uptime),
        btvirt's last progress lines and the kernel's last lines."""
        parts = [f"console: {self.log_tail('console.log', 2) or 'nothing'}"]
        try:
            steps = [line for line in (self.path / "guest.log").read_text(errors="replace").splitlines()
                     if line.startswith("== ")]
        except FileNotFoundError:
            steps = []
        parts.append(f"guest: {steps[-1].removeprefix('== ') if steps else 'nothing yet'}")
        for name, label in (("btvirt.log", "btvirt"), ("dmesg.log", "kernel")):
            if tail := self.log_tail(name, 3):
                parts.append(f"{label}: {tail}")
        return "; ".join(parts)


def _agent_request(port: int, command: str, timeout: float) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(command.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace").strip()


def load(path: Path) -> VMInfo:
    try:
        raw = json.loads((path / "vm.json").read_text())
    except FileNotFoundError:
        raise TestbedError(f"no testbed VM is running in {path}") from None
    except ValueError:
        raise TestbedError(f"the VM description {path / 'vm.json'} is unreadable") from None
    info = VMInfo(path=path, centrals=raw["centrals"], boards=raw["boards"],
                  bus_port=raw["bus_port"], agent_port=raw["agent_port"], mgmt_port=raw.get("mgmt_port"),
                  owner_pid=raw.get("owner_pid", 0))
    pids = _read_pids(path)
    if not pids or not all(is_alive(e) for e in pids):
        raise TestbedError(f"the testbed VM in {path} is not running (see {path / 'console.log'})")
    return info


def _read_pids(path: Path) -> list[dict]:
    try:
        return json.loads((path / "pids.json").read_text())["processes"]
    except (FileNotFoundError, ValueError, KeyError):
        return []


def _write_pids(path: Path, entries: list[dict]) -> None:
    tmp = path / "pids.json.tmp"
    tmp.write_text(json.dumps({"processes": entries}))
    os.replace(tmp, path / "pids.json")


# -- what the VM needs from this machine ---------------------------------------------------

def find_kernel() -> tuple[Path, str]:
    """The newest installed Debian kernel that has the Bluetooth modules (hci_vhci), or
    $BLEFLEET_TESTBED_KERNEL."""
    override = os.environ.get("BLEFLEET_TESTBED_KERNEL")
    if override:
        if not Path(override).is_file():
            raise TestbedError(f"BLEFLEET_TESTBED_KERNEL={override}: no such file")
        return Path(override), "custom"
    candidates = []
    for image in Path("/boot").glob("vmlinuz-*"):
        version = image.name.removeprefix("vmlinuz-")
        modules = Path("/lib/modules") / version / "kernel" / "drivers" / "bluetooth"
        if any(modules.glob("hci_vhci.ko*")):
            candidates.append((image, version))
    if not candidates:
        raise TestbedError("no kernel with Bluetooth modules in /boot: install linux-image-amd64 (scripts/setup)")
    newest = sorted(candidates, key=lambda c: c[0].stat().st_mtime)[-1]
    if not os.access(newest[0], os.R_OK):
        raise TestbedError(f"{newest[0]} is not readable")
    return newest


def find_vng() -> str:
    venv_bin = Path(sys.executable).parent
    for candidate in (venv_bin / "vng", shutil.which("vng")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    raise TestbedError("virtme-ng (vng) is not installed: run scripts/setup")


def find_btvirt() -> str:
    """The patched btvirt (testbed/btvirt/build compiles it once and caches it)."""
    override = os.environ.get("BLEFLEET_BTVIRT")
    if override:
        return override
    result = subprocess.run([str(BTVIRT_BUILD)], capture_output=True, text=True)
    if result.returncode != 0:
        last = result.stderr.strip().splitlines()[-1:] or ["no output"]
        raise TestbedError(f"the patched btvirt could not be built: {last[0]}")
    return result.stdout.strip()


def _free_ports(count: int) -> list[int]:
    """`count` different free ports (all held open while they are picked)."""
    held = [socket.socket() for _ in range(count)]
    try:
        for s in held:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


# -- the keeper: boots qemu, reports, keeps it until told to stop --------------------------

def boot_argv(path: Path, controllers: int, bus_port: int, agent_port: int, mgmt_port: int,
              cpus: int = 2, memory: str = "1G") -> list[str]:
    kernel, _ = find_kernel()
    btvirt = find_btvirt()
    netdev = (f"-netdev user,id=tb0,restrict=on,"
              f"hostfwd=tcp:127.0.0.1:{bus_port}-10.0.2.15:{BUS_PORT_GUEST},"
              f"hostfwd=tcp:127.0.0.1:{agent_port}-10.0.2.15:{AGENT_PORT_GUEST},"
              f"hostfwd=tcp:127.0.0.1:{mgmt_port}-10.0.2.15:{MGMT_PORT_GUEST} "
              f"-device virtio-net-pci,netdev=tb0")
    return [find_vng(), "--run", str(kernel), "--disable-kvm", "--cpus", str(cpus), "--memory", memory,
            "--rwdir", str(path), f"--qemu-opts={netdev}",
            "--exec", f"{GUEST_INIT} {path} {controllers} {btvirt}"]


def _die_with_parent() -> None:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:
        os._exit(1)


def keeper_main(args) -> int:
    """`_vm_keeper`: boots the VM, reports {"ok": ...} on --ready-fd, then waits."""
    path = Path(args.vm_dir)
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)

    def report(message: dict) -> None:
        try:
            os.write(args.ready_fd, json.dumps(message).encode() + b"\n")
            os.close(args.ready_fd)
        except OSError:
            pass

    bus_port, agent_port, mgmt_port = _free_ports(3)
    # Host clients reach the guest's bus through socat (root in the guest): EXTERNAL works
    # for root on the host, other users fall back to ANONYMOUS. The VM is a test fixture.
    (path / "guest-bus.conf").write_text(bus_config("unix:path=/run/dbus/system_bus_socket", anonymous=True))
    info = VMInfo(path, args.centrals, args.boards, bus_port, agent_port, mgmt_port)
    info.write_main_conf(30)
    for name in ("guest.status", "guest.log", "btvirt.log", "bluetoothd.log", "dmesg.log"):
        (path / name).unlink(missing_ok=True)
    try:
        argv = boot_argv(path, info.controllers, bus_port, agent_port, mgmt_port)
    except TestbedError as e:
        report({"ok": False, "error": str(e)})
        return 1
    with open(path / "console.log", "wb") as console:
        # vng runs virtme-run from its own bin directory, through a shell, and virtme-run
        # starts qemu: a process group of their own, stopped as one.
        env = dict(os.environ, PATH=f"{Path(argv[0]).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        qemu = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=console, stderr=console, env=env,
                                preexec_fn=_die_with_parent, close_fds=True, start_new_session=True)
    _write_pids(path, [record("vm-keeper", os.getpid()), record("qemu", qemu.pid)])

    owner_fd = None
    if args.owner_pid:
        try:
            owner_fd = os.pidfd_open(args.owner_pid)
        except ProcessLookupError:
            stopping = True

    def owner_gone() -> bool:
        return owner_fd is not None and bool(select.select([owner_fd], [], [], 0)[0])

    # Boot: wait for the guest's "ready" and the agent's answer.
    deadline = time.monotonic() + args.boot_timeout
    error = None
    while error is None:
        if stopping or owner_gone():
            error = "the VM was stopped while it booted"
            break
        status = _read_status(path)
        if status.startswith("failed:"):
            error = "the VM booted but " + status.removeprefix("failed:").strip()
        elif qemu.poll() is not None:
            error = f"the VM did not boot (qemu exited with {qemu.returncode}): {info.log_tail('console.log', 3)}"
        elif status == "ready":
            try:
                if info.agent("ping", timeout=5) == "pong":
                    break
            except (OSError, TestbedError):
                pass
        elif time.monotonic() > deadline:
            error = f"the VM did not come up within {args.boot_timeout:.0f} s ({info.boot_progress()})"
        time.sleep(0.2)
    if error is not None:
        _stop_qemu(qemu)
        report({"ok": False, "error": error})
        return 1

    (path / "vm.json").write_text(json.dumps({"centrals": info.centrals, "boards": info.boards,
                                              "bus_port": bus_port, "agent_port": agent_port,
                                              "mgmt_port": mgmt_port, "owner_pid": args.owner_pid}))
    report({"ok": True})
    while not stopping and qemu.poll() is None and not owner_gone():
        time.sleep(0.2)
    _stop_qemu(qemu)
    (path / "vm.json").unlink(missing_ok=True)
    return 0


def _read_status(path: Path) -> str:
    try:
        lines = (path / "guest.status").read_text().strip().splitlines()
    except FileNotFoundError:
        return ""
    failed = [line for line in lines if line.startswith("failed:")]
    return failed[0] if failed else (lines[-1] if lines else "")


def _stop_qemu(qemu: subprocess.Popen) -> None:
    """Stops vng and everything it started (its process group: sh, virtme-run, qemu)."""
    def signal_group(sig: int) -> None:
        try:
            os.killpg(qemu.pid, sig)
        except ProcessLookupError:
            pass
    signal_group(signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _group_alive(qemu.pid):
        qemu.poll()
        time.sleep(0.05)
    signal_group(signal.SIGKILL)
    qemu.wait()


def _group_alive(pgid: int) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid and _state(entry) not in ("Z", "X"):
                    return True
            except (ProcessLookupError, PermissionError):
                continue
    return False


def _state(proc: Path) -> str:
    try:
        stat = (proc / "stat").read_text()
    except OSError:
        return "X"
    return stat[stat.rindex(")") + 2:].split()[0]


# -- for the CLI and the testbed controller ------------------------------------------------

def start(path: Path, centrals: int, boards: int, owner_pid: int = 0,
          boot_timeout: float = BOOT_TIMEOUT) -> VMInfo:
    """Boots a VM in `path` (blocking, up to `boot_timeout`) and returns what it offers."""
    if centrals + boards > MAX_CONTROLLERS:
        raise TestbedError(f"a testbed VM holds at most {MAX_CONTROLLERS} controllers (centrals + boards)")
    path.mkdir(parents=True, exist_ok=True)
    if any(is_alive(e) for e in _read_pids(path)):
        raise TestbedError(f"a testbed VM is already running in {path}")
    read_end, write_end = os.pipe()
    argv = [sys.executable, "-m", "blefleet_testbed", "_vm_keeper", "--vm-dir", str(path),
            "--ready-fd", str(write_end), "--centrals", str(centrals), "--boards", str(boards),
            "--owner-pid", str(owner_pid), "--boot-timeout", str(boot_timeout)]
    with open(path / "keeper.log", "ab") as log:
        keeper = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                  pass_fds=(write_end,), start_new_session=True)
    os.close(write_end)
    data = b""
    while True:
        chunk = os.read(read_end, 4096)
        if not chunk:
            break
        data += chunk
    os.close(read_end)
    try:
        reply = json.loads(data) if data.strip() else None
    except ValueError:
        reply = None
    if reply is None or not reply.get("ok"):
        keeper.wait()
        message = reply["error"] if reply else f"the VM keeper exited: {_tail(path / 'keeper.log') or 'no output'}"
        raise TestbedError(message)
    return load(path)


def stop(path: Path) -> None:
    entries = _read_pids(path)
    if not entries:
        raise TestbedError(f"no testbed VM is running in {path}")
    keeper = [e for e in entries if e["role"] == "vm-keeper"]
    terminate_recorded(keeper, grace=15.0)
    # The keeper stops qemu's whole process group; if the keeper could not, do it here
    # (the "qemu" entry leads the group: vng, its shell, virtme-run and qemu).
    groups = [e["pid"] for e in entries if e["role"] == "qemu"]
    for pgid in groups:
        if _group_alive(pgid):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    terminate_recorded(entries, grace=3.0)
    deadline = time.monotonic() + 10
    while any(_group_alive(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = wait_gone(entries, 1.0) + [{"pid": g} for g in groups if _group_alive(g)]
    for name in ("vm.json", "pids.json"):
        (path / name).unlink(missing_ok=True)
    if left:
        raise TestbedError(f"VM processes {', '.join(str(e['pid']) for e in left)} did not stop")


TAINT_DIE = 128  # the kernel's taint flag for an oops (a BUG or a fault inside the kernel)


def reboot_if_oopsed(info: VMInfo) -> VMInfo:
    """A VM whose kernel oopsed (the Bluetooth stack of Linux 6.1 does, now and then, in
    hci_chan_del when a socket closes) is unreliable from then on: every later testbed on it
    may fail for that. Such a VM is booted again, the same, its kernel log kept first as
    oops-TIME.log. Returns the VM to use."""
    try:
        tainted = int(info.agent("tainted", timeout=5))
    except (OSError, TestbedError, ValueError):
        return info  # an agent from before this question: nothing known
    if not tainted & TAINT_DIE:
        return info
    kept = info.path / f"oops-{time.strftime('%Y%m%d-%H%M%S')}.log"
    try:
        info.agent("dmesg-save", timeout=10)
        (info.path / "dmesg-now.log").rename(kept)
        told = f"its log is in {kept}"
    except (OSError, TestbedError):
        told = "its log could not be saved"
    print(f"testbed: the VM's kernel oopsed during an earlier testbed ({told}); booting the VM again",
          file=sys.stderr, flush=True)
    stop(info.path)
    return start(info.path, info.centrals, info.boards, owner_pid=info.owner_pid)


def _tail(file: Path, count: int = 3) -> str:
    """The last non-empty lines of a log, joined on one line, white space folded."""
    try:
        lines = [" ".join(line.split()) for line in file.read_text(errors="replace").splitlines()]
    except FileNotFoundError:
        return ""
    return " | ".join([line for line in lines if line][-count:])


class Lease:
    """Exclusive use of a running VM by one testbed: an flock() on its lock file, held by
    an open file description that the testbed controller inherits and keeps."""

    def __init__(self, info: VMInfo, fd: int):
        self.info = info
        self.fd = fd

    @staticmethod
    def acquire(path: Path, wait: float, holder: str = "") -> "Lease":
        """Waits up to `wait` s for the VM; `holder` (the testbed's run dir) is written in
        the lock file, so that a testbed waiting for the VM can say whom it waits for."""
        info = load(path)
        fd = os.open(path / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        start = time.monotonic()
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.ftruncate(fd, 0)
                os.pwrite(fd, holder.encode(), 0)
                return Lease(info, fd)
            except BlockingIOError:
                waited = time.monotonic() - start
                if waited > wait:
                    os.close(fd)
                    raise TestbedError(f"the testbed VM in {path} stayed busy with another testbed for {wait:.0f} s")
                if not told and waited > 2:
                    told = True
                    other = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another testbed"
                    print(f"testbed: waiting for the VM in {path}, in use by the testbed in {other} "
                          f"(up to {wait:.0f} s; `scripts/testbed stop --run-dir {other}` ends that one)",
                          file=sys.stderr, flush=True)
                load(path)  # still running?
                time.sleep(0.1)
