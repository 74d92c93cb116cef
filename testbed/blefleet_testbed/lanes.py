"""The testbed's two lanes: where org.bluez comes from.

- BlueZooLane: a private dbus-daemon and BlueZoo (Samsung's BlueZ mock) with the project's
  fidelity fixes; boards are BlueZoo adapters created at run time. Fast.
- RealLane: the kernel's Bluetooth stack, the patched btvirt and a real bluetoothd in a VM
  (real/vm.py); boards are btvirt controllers; the guest's system bus and its kernel's
  Bluetooth management interface (what btmgmt speaks) are bridged to Unix sockets in the
  run directory. What users run.

Both give the controller the same things: a bus socket at run.bus_address, org.bluez with
--centrals central adapters (hci0, hci1, ...), one adapter per board, a way to stop and
start BlueZ, the signal each central hears each board with, and one more central that can
be plugged in and pulled out (a USB dongle)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from . import profile
from .busconfig import bus_config
from .rundir import BUS_CONFIG, BUS_SOCKET, MGMT_SOCKET, PRIVATE_VM_DIR, TestbedError

ADAPTERS_TIMEOUT = 60.0


def crash_lines(vm_dir: Path) -> list[str]:
    """The crashes of a VM's bluetoothd, as its supervisor wrote them (real/guest_agent.sh)."""
    try:
        text = (vm_dir / "bluetoothd.crashes").read_text(errors="replace")
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines() if line.strip()]


ASKED_MARK = "(asked for:"
BLUETOOTHD = "/usr/libexec/bluetooth/bluetoothd"
# bluez/bluez#2447: bluetoothd as a GATT server answers an app's late write on the ATT
# channel its link freed when it ended. In the real lane bluetoothd is the boards' GATT
# server as well as the fleet's central (a gateway's bluetoothd serves no board), so a crash
# on this path is the testbed's board side, whatever the central did.
GATT_SERVER_ANSWERS = ("write_complete_cb", "read_complete_cb")


def bluetoothd_with_symbols() -> str | None:
    """Debian's bluetoothd built with its symbols (testbed/bluez-symbols/build, `scripts/setup
    --symbols`): the same code at the same addresses, so gdb names each frame. None when it
    was not built."""
    import subprocess
    try:
        version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "bluez"], capture_output=True,
                                 text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = cache / "blefleet-testbed" / f"bluetoothd-{version}" / "bluetoothd"
    return str(path) if version and path.is_file() else None


def crash_site(report: str) -> str | None:
    """Where a crash report's backtrace places the crash, when the project knows the site."""
    if "src/shared/gatt-server.c" in report and any(frame in report for frame in GATT_SERVER_ANSWERS):
        return ("bluetoothd as a GATT server (the testbed's boards) answered a request on the ATT "
                "channel of a link that had ended (bluez/bluez#2447)")
    return None


def unasked(lines: list[str]) -> list[str]:
    """The crashes nobody asked for: a test that crashes bluetoothd on purpose (`bluez
    segfault`) has its crash marked "(asked for: ...)"; `bluez restart --crash` writes none."""
    return [line for line in lines if ASKED_MARK not in line]


def crash_report(vm_dir: Path, line: str) -> str:
    """One crash as a test's failure names it: its line, bluetoothd's last log lines before
    it, and the backtrace of its core (gdb on the host, which shares the VM's root file
    system: the same bluetoothd and libraries). Debian's bluetoothd is stripped: its own
    frames are addresses, unless its build with symbols is there (`scripts/setup --symbols`),
    which names them, and the site when it is one the project knows (`crash_site`)."""
    import re
    import shutil
    import subprocess
    parts = [line]
    pid = re.search(r"\(pid (\d+)\)", line)
    try:
        log = (vm_dir / "bluetoothd.log").read_text(errors="replace").splitlines()
    except FileNotFoundError:
        log = []
    if pid:
        # The supervisor's line about this death names its pid; bluetoothd's own lines are
        # those before it, back to the supervisor's previous line.
        marker = f"--- bluetoothd (pid {pid.group(1)}) "
        end = next((i for i, text in enumerate(log) if text.startswith(marker)), None)
        if end is not None:
            begin = max((i for i in range(end) if log[i].startswith("---")), default=-1)
            tail = log[begin + 1:end]
            if tail:
                parts.append("bluetoothd's last lines: " + " | ".join(dict.fromkeys(tail[-6:])))
    core = re.search(r"core: (\S+)", line)
    if core and (vm_dir / core.group(1)).exists() and shutil.which("gdb"):
        try:
            binary = bluetoothd_with_symbols() or BLUETOOTHD
            out = subprocess.run(["gdb", "-batch", "-nx", "-ex", "bt 24", binary, str(vm_dir / core.group(1))],
                                 capture_output=True, text=True, timeout=120).stdout
            frames = list(dict.fromkeys(x.strip() for x in out.splitlines() if x.startswith("#")))
            backtrace = " / ".join(frames) if frames else "(gdb found no frames)"
            if binary == BLUETOOTHD:
                backtrace += " (addresses: `scripts/setup --symbols` names them)"
            parts.append("backtrace: " + backtrace)
            site = crash_site(backtrace)
            if site:
                parts.append("site: " + site)
        except (OSError, subprocess.TimeoutExpired) as e:
            parts.append(f"backtrace: (gdb failed: {e})")
    return "\n  ".join(parts)


def make_lane(controller):
    return RealLane(controller) if controller.args.real else BlueZooLane(controller)


class BlueZooLane:
    fixed_handles = True
    advertises_while_off = True  # a powered-off BlueZoo adapter sends nothing anyway
    controllers_can_hang = False  # no controller below the D-Bus API (`fault hang`)
    restarts_bluez = False  # a BlueZoo that dies stays dead: the testbed says so

    def crashes(self) -> list[str]:
        return []

    def __init__(self, controller):
        self.c = controller
        self.centrals = controller.args.centrals
        self.plugged: int | None = None

    def adapter_index(self, board: int) -> int:
        """Boards follow the centrals: hci{centrals}, ..."""
        return self.centrals + board - 1

    def central_addresses(self) -> dict[int, str]:
        """Every central (and a plugged-in one) by hci index."""
        found = {i: profile.central_address(i) for i in range(self.centrals)}
        if self.plugged is not None:
            found[self.plugged] = profile.central_address(self.plugged)
        return found

    async def set_signal(self, central: int, board, rssi: int) -> None:
        from .simulator import call
        await call(self.c.bus, "/org/blefleet/testbed", "org.blefleet.Testbed1", "SetSignal", "yyn",
                   central, board.adapter_index, rssi)

    async def plug(self) -> int:
        """One more central adapter appears (after the boards' adapters)."""
        from .simulator import call
        if self.plugged is None:
            index = self.centrals + len(self.c.sim.boards)
            await call(self.c.bus, "/org/bluezoo", "org.bluezoo.Manager1", "AddAdapter", "ys",
                       index, profile.central_address(index))
            self.plugged = index
        return self.plugged

    async def unplug(self) -> None:
        from .simulator import call
        if self.plugged is not None:
            await call(self.c.bus, "/org/bluezoo", "org.bluezoo.Manager1", "RemoveAdapter", "y", self.plugged)
            self.plugged = None

    # -- faults (fixes.py: org.blefleet.Testbed1 in the BlueZoo process) -----------------

    async def _knob(self, member: str, signature: str = "", *args) -> None:
        from .simulator import call
        await call(self.c.bus, "/org/blefleet/testbed", "org.blefleet.Testbed1", member, signature, *args)

    async def fault_connect(self, board, status: int, count: int, rate: float, seed: int) -> None:
        await self._knob("FaultConnect", "yyudu", board.adapter_index, status, count, rate, seed)

    async def fault_drop(self, board) -> None:
        await self._knob("FaultDrop", "y", board.adapter_index)

    async def fault_drop_every(self, board, seconds: float, seed: int) -> None:
        await self._knob("FaultDropEvery", "ydu", board.adapter_index, seconds, seed)

    async def fault_slow(self, board, seconds: float) -> None:
        await self._knob("FaultSlow", "yd", board.adapter_index, seconds)

    async def fault_hang(self, central: int, seconds: float | None, links_live: bool = False) -> None:
        raise TestbedError("fault hang is the real lane's alone: BlueZoo emulates no controller that "
                           "could stop answering (start the testbed with --real)")

    async def fault_clear(self) -> None:
        await self._knob("FaultClear")

    def extra_records(self) -> list[dict]:
        return []

    async def start_bus(self) -> None:
        run = self.c.run
        run.file(BUS_CONFIG).write_text(bus_config(f"unix:path={run.file(BUS_SOCKET)}"))
        proc = self.c._spawn("dbus-daemon", ["dbus-daemon", "--nofork", "--nopidfile",
                                             f"--config-file={run.file(BUS_CONFIG)}"])
        await self.c.wait_for_socket("dbus-daemon", proc, run.file(BUS_SOCKET), "dbus-daemon")

    async def start_bluez(self, fresh: bool) -> None:
        a = self.c.args
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.c.run.bus_address, PYTHONUNBUFFERED="1")
        argv = [sys.executable, "-m", "blefleet_testbed.bluezoo_launcher",
                *[arg for i in range(self.centrals) for arg in ("--central", profile.central_address(i))],
                "--scan-interval", str(a.scan_interval),
                "--temporary-timeout", str(a.temporary_timeout),
                "--connect-timeout", str(a.connect_timeout),
                "--latency-ms", str(a.latency_ms), "--jitter-ms", str(a.jitter_ms)]
        if a.advertise_while_connected:
            argv.append("--advertise-while-connected")
        if a.stock_bluezoo:
            argv.append("--stock")
        proc = self.c._spawn("bluezoo", argv, env=env)
        deadline = time.monotonic() + 20
        from .simulator import get_property
        while True:
            if proc.poll() is not None:
                raise TestbedError(f"BlueZoo exited at start: {self.c._log_tail('bluezoo')}")
            try:
                await get_property(self.c.bus, "/org/bluez/hci0", "org.bluez.Adapter1", "Address")
                self.plugged = None  # a fresh BlueZoo has only the adapters it was started with
                return
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise TestbedError("BlueZoo did not own org.bluez within 20 s")
            await asyncio.sleep(0.02)

    async def segfault_bluez(self, unasked: bool = False) -> None:
        raise TestbedError("bluez segfault is the real lane's alone: a BlueZoo that dies is not restarted "
                           "(start the testbed with --real)")

    async def stop_bluez(self, crash: bool = False) -> None:
        """BlueZoo stops (`crash`: SIGKILL, no cleanup; its links go with it either way)."""
        await self.c._terminate("bluezoo", grace=0 if crash else 3.0)

    async def cause_of_failure(self) -> str | None:
        proc = self.c.procs.get("bluezoo")
        if proc is not None and proc.poll() is not None:
            return f"BlueZoo exited ({proc.returncode}): {self.c._log_tail('bluezoo')}"
        return None

    async def prepare(self, board) -> None:
        """A board's controller exists once BlueZoo is told to emulate it."""
        from .simulator import call
        await call(self.c.bus, "/org/bluezoo", "org.bluezoo.Manager1", "AddAdapter", "ys",
                   board.adapter_index, board.address)

    async def switch_off(self, sim, board) -> None:
        """Power is cut: the link drops; what reached the board before was done."""
        await sim.power(board, False)
        board.present = False

    async def switch_on(self, sim, board) -> None:
        board.present = True
        await sim.power(board, True)

    async def stop(self) -> None:
        await self.c._terminate("bluezoo")
        await self.c._terminate("dbus-daemon")


# Where the boards' side's agent is exported on the testbed's bus connection to the VM.
BOARD_AGENT_PATH = "/org/blefleet/testbed/agent"


class RealLane:
    """Real bluetoothd in a VM. The VM is either shared (--vm DIR: booted once by
    `scripts/testbed vm start`, leased by the CLI with an flock() this process inherits)
    or private to this testbed (booted here, stopped with it)."""

    fixed_handles = False
    advertises_while_off = False
    controllers_can_hang = True
    # The VM's bluetoothd runs under a supervisor that restarts it when it dies unasked
    # (bluetoothd 5.66 segfaults now and then under faults), as systemd's Restart= does.
    restarts_bluez = True

    def crashes(self) -> list[str]:
        """Every crash of the VM's bluetoothd since the VM booted, one line each."""
        return crash_lines(self.vm.path)

    def __init__(self, controller):
        self.c = controller
        self.vm = None
        self.private_vm: Path | None = None
        self.centrals = controller.args.centrals
        self.addresses: dict[int, str] = {}
        self.plugged: int | None = None
        self.board_agent = None

    def central_addresses(self) -> dict[int, str]:
        found = {i: self.addresses.get(i, "") for i in range(self.centrals)}
        if self.plugged is not None:
            found[self.plugged] = self.addresses.get(self.plugged, "")
        return found

    async def set_signal(self, central: int, board, rssi: int) -> None:
        """The patched btvirt reports this RSSI in the central's advertising reports."""
        await self.vm.agent_async(f"rssi {central} {board.adapter_index} {rssi}")

    async def plug(self) -> int:
        """The patched btvirt opens one more controller (the next free hci index)."""
        if self.plugged is None:
            index = int(await self.vm.agent_async("hotplug on"))
            from .simulator import get_property
            deadline = time.monotonic() + ADAPTERS_TIMEOUT
            while True:
                try:
                    self.addresses[index] = str(await get_property(
                        self.c.bus, f"/org/bluez/hci{index}", "org.bluez.Adapter1", "Address"))
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise TestbedError(f"bluetoothd did not show the plugged-in hci{index} within "
                                           f"{ADAPTERS_TIMEOUT:.0f} s") from None
                    await asyncio.sleep(0.1)
            # As a dongle plugged into a machine whose bluetoothd enables new adapters.
            await self._power(index, True)
            self.plugged = index
        return self.plugged

    async def unplug(self) -> None:
        if self.plugged is not None:
            await self.vm.agent_async("hotplug off")
            self.plugged = None

    def adapter_index(self, board: int) -> int:
        return self.vm.board_index(board)

    # -- faults: the patched btvirt injects them (its knob 10, guest_agent.sh `fault`) --------

    async def fault_connect(self, board, status: int, count: int, rate: float, seed: int) -> None:
        await self.vm.agent_async(f"fault connect {board.adapter_index} {status} {count} "
                                  f"{round(rate * 1_000_000)} {seed}")

    async def fault_drop(self, board) -> None:
        await self.vm.agent_async(f"fault drop {board.adapter_index}")

    async def fault_drop_every(self, board, seconds: float, seed: int) -> None:
        await self.vm.agent_async(f"fault drop-every {board.adapter_index} {round(seconds * 1000)} {seed}")

    async def fault_slow(self, board, seconds: float) -> None:
        await self.vm.agent_async(f"fault slow {board.adapter_index} {round(seconds * 1000)}")

    async def fault_hang(self, central: int, seconds: float | None, links_live: bool = False) -> None:
        """`seconds` None: until the controller gets an HCI_Reset. `links_live`: its transport
        stalls while its link layer keeps its links up at the boards (btvirt's `stall`)."""
        ms = 0 if seconds is None else max(1, round(seconds * 1000))
        await self.vm.agent_async(f"fault {'stall' if links_live else 'hang'} {central} {ms}")

    async def fault_clear(self) -> None:
        await self.vm.agent_async("fault clear")

    def extra_records(self) -> list[dict]:
        if self.private_vm is None:
            return []
        from .real import vm as vmmod
        return [e for e in vmmod._read_pids(self.private_vm) if e["role"] == "vm-keeper"]

    async def start_bus(self) -> None:
        from .real import vm as vmmod
        a = self.c.args
        loop = asyncio.get_running_loop()
        if a.vm:
            self.vm = vmmod.load(Path(a.vm))
        else:
            self.private_vm = self.c.run.file(PRIVATE_VM_DIR)
            self.vm = await loop.run_in_executor(
                None, lambda: vmmod.start(self.private_vm, centrals=self.centrals, boards=a.boards,
                                          owner_pid=os.getpid()))
            self.c._write_pids()
        if a.boards > self.vm.boards:
            raise TestbedError(f"the testbed VM in {self.vm.path} has {self.vm.boards} board controllers; "
                               f"{a.boards} were asked for")
        if self.centrals > self.vm.centrals:
            raise TestbedError(f"the testbed VM in {self.vm.path} has {self.vm.centrals} central controllers; "
                               f"{self.centrals} were asked for (`testbed vm start --centrals N`)")
        run = self.c.run
        argv = [sys.executable, "-m", "blefleet_testbed", "_bridge",
                "--listen", str(run.file(BUS_SOCKET)), "--port", str(self.vm.bus_port)]
        if self.vm.mgmt_port is not None:
            # The kernel's management interface: one control-channel socket in the guest
            # per connection (real/mgmt_relay.py).
            argv += ["--listen", str(run.file(MGMT_SOCKET)), "--port", str(self.vm.mgmt_port)]
        proc = self.c._spawn("bridge", argv)
        await self.c.wait_for_socket("bridge", proc, run.file(BUS_SOCKET), "the bus bridge to the VM")
        if self.vm.mgmt_port is not None:
            await self.c.wait_for_socket("bridge", proc, run.file(MGMT_SOCKET),
                                         "the management interface bridge to the VM")

    async def start_bluez(self, fresh: bool) -> None:
        """bluetoothd (re)starts; `fresh`: every controller powered off and the device cache
        wiped first, so no link or device of an earlier testbed survives."""
        self.vm.write_main_conf(self.c.args.temporary_timeout)
        await self.vm.agent_async("bluez-reset" if fresh else "bluez-start")
        if fresh:
            self.plugged = None  # bluez-reset pulls a plugged-in controller out
        adapters = await self._wait_for_adapters()
        boards = {self.adapter_index(b.index) for b in self.c.sim.boards}
        used = {self.vm.central_index(i) for i in range(self.centrals)} | boards
        if self.plugged is not None:
            used.add(self.plugged)
        # bluetoothd powers no controller by itself here (AutoEnable = false: powering all of
        # the VM's controllers on, then the unused ones off, took seconds per testbed); the
        # ones this testbed uses go on, the others stay off, all at once.
        await asyncio.gather(*(
            self._power(index, index in used)
            for index in range(self.vm.controllers) if adapters[index]["Powered"] != (index in used)))
        # The boards register their advertisements and GATT applications on their controllers
        # next: bluetoothd adds those managers to an adapter only once it has read the
        # controller's features, a moment after the adapter itself (at once when a crashed
        # bluetoothd left the controllers powered).
        await self._wait_for_adapters(managers_on=boards)
        self.addresses = {index: adapter["Address"] for index, adapter in adapters.items()}
        for board in self.c.sim.boards:
            board.address = adapters[board.adapter_index]["Address"]
        await self._register_board_agent()

    async def _register_board_agent(self) -> None:
        """The boards pair Just Works: a NoInputNoOutput default agent for the boards' side
        (simulator.BoardSideAgent), registered again with each bluetoothd that starts."""
        from .simulator import BoardSideAgent, call
        if self.board_agent is None:
            self.board_agent = BoardSideAgent()
            self.board_agent.export_to_dbus(BOARD_AGENT_PATH, self.c.bus)
        await call(self.c.bus, "/org/bluez", "org.bluez.AgentManager1", "RegisterAgent", "os",
                   BOARD_AGENT_PATH, "NoInputNoOutput")
        await call(self.c.bus, "/org/bluez", "org.bluez.AgentManager1", "RequestDefaultAgent", "o", BOARD_AGENT_PATH)

    async def _power(self, index: int, on: bool) -> None:
        """Powers controller hciN on or off through bluetoothd (a controller bluetoothd is
        still setting up answers Busy for a moment)."""
        from .simulator import set_property
        deadline = time.monotonic() + ADAPTERS_TIMEOUT
        while True:
            try:
                await set_property(self.c.bus, f"/org/bluez/hci{index}", "org.bluez.Adapter1", "Powered", "b", on)
                return
            except Exception as e:
                if "Busy" not in str(e) or time.monotonic() > deadline:
                    raise TestbedError(f"bluetoothd could not power hci{index} {'on' if on else 'off'}: {e}") from None
                await asyncio.sleep(0.1)

    async def _wait_for_adapters(self, managers_on: set[int] = frozenset()) -> dict[int, dict]:
        """Every controller of the VM as bluetoothd shows it (index → Adapter1 properties),
        once all are there and those in `managers_on` also have their advertising and GATT
        managers."""
        from .simulator import managed_objects
        managers = ("org.bluez.LEAdvertisingManager1", "org.bluez.GattManager1")
        deadline = time.monotonic() + ADAPTERS_TIMEOUT
        found: dict[int, dict] = {}
        while True:
            try:
                objects = await managed_objects(self.c.bus)
                found = {int(path.rsplit("hci", 1)[1]): {k: v[1] for k, v in ifaces["org.bluez.Adapter1"].items()}
                         for path, ifaces in objects.items() if "org.bluez.Adapter1" in ifaces}
                ready = {int(path.rsplit("hci", 1)[1]) for path, ifaces in objects.items()
                         if "org.bluez.Adapter1" in ifaces and all(m in ifaces for m in managers)}
                if len(found) >= self.vm.controllers and managers_on <= ready:
                    return found
            except Exception:
                ready = set()
            if time.monotonic() > deadline:
                if len(found) >= self.vm.controllers:
                    unready = ", ".join(f"hci{i}" for i in sorted(managers_on - ready))
                    raise TestbedError(f"bluetoothd in the VM shows no advertising or GATT manager on {unready} "
                                       f"after {ADAPTERS_TIMEOUT:.0f} s; kernel: {await self._dmesg(*unready.split(', '))}")
                missing = sorted(set(range(self.vm.controllers)) - set(found))
                raise TestbedError(
                    f"bluetoothd in the VM shows {len(found)} of {self.vm.controllers} controllers after "
                    f"{ADAPTERS_TIMEOUT:.0f} s (missing: {', '.join(f'hci{i}' for i in missing) or 'none'}); "
                    f"kernel: {await self._dmesg(*(f'hci{i}' for i in missing))}")
            await asyncio.sleep(0.1)

    async def _dmesg(self, *controllers: str) -> str:
        """The kernel's lines naming `controllers`, or its last lines."""
        try:
            return (await self.vm.agent_async(" ".join(["dmesg", *controllers]), timeout=10))[-600:]
        except Exception as e:
            return f"(unavailable: {e})"

    async def stop_bluez(self, crash: bool = False) -> None:
        """bluetoothd stops; `crash`: it is killed (as when it segfaults), so its controllers
        stay powered and the kernel keeps their links."""
        await self.vm.agent_async("bluez-crash" if crash else "bluez-stop")

    async def segfault_bluez(self, unasked: bool = False) -> None:
        """bluetoothd dies of SIGSEGV, as 5.66 does by itself under faults: the VM's
        supervisor writes the crash down (marked as asked for unless `unasked`) and restarts
        it; `follow_crashes` registers the boards again."""
        await self.vm.agent_async("bluez-segfault unasked" if unasked else "bluez-segfault")

    async def cause_of_failure(self) -> str | None:
        """A command failed: is it because bluetoothd or the VM went away?"""
        try:
            await self.vm.agent_async("bluez-status", timeout=10)
        except TestbedError as e:
            return str(e).replace("the VM could not 'bluez-status': ", "")
        except OSError:
            return f"the testbed VM does not answer (is it still running? see {self.vm.path / 'console.log'})"
        return None

    async def prepare(self, board) -> None:
        """btvirt made every controller when the VM booted. The board's GAP Device Name,
        which the central reads on connect, is its name, as on a Nano (ArduinoBLE uses the
        local name for both)."""
        from .simulator import set_property
        await set_property(self.c.bus, board.adapter_path, "org.bluez.Adapter1", "Alias", "s", board.name)

    async def switch_off(self, sim, board) -> None:
        """Power is cut: the board's controller goes silent at once (the central's link ends
        with a supervision timeout, no advertisement follows, no last ATT answer gets out),
        then its host side is powered off too so that it stays quiet. A request the board
        was still answering is answered first ("Not connected", into a link that is gone):
        bluetoothd 5.66 segfaults when a GATT server's answer comes after its adapter went
        off, and the central of the VM is served by that same bluetoothd."""
        await self.vm.agent_async(f"power-cut {board.adapter_index}")
        await board.power_cut()
        await sim.advertise(board, False)
        await sim.power(board, False)

    async def switch_on(self, sim, board) -> None:
        board.present = True
        await sim.power(board, True)
        await sim.advertise(board, True)

    async def stop(self) -> None:
        await self.c._terminate("bridge")
        if self.private_vm is not None:
            from .real import vm as vmmod
            try:
                await asyncio.get_running_loop().run_in_executor(None, vmmod.stop, self.private_vm)
            except TestbedError:
                pass
