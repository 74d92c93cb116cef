"""The testbed's two lanes: where org.bluez comes from.

- BlueZooLane: a private dbus-daemon and BlueZoo (Samsung's BlueZ mock) with the project's
  fidelity fixes; boards are BlueZoo adapters created at run time. Fast.
- RealLane: the kernel's Bluetooth stack, the patched btvirt and a real bluetoothd in a VM
  (real/vm.py); boards are btvirt controllers; the guest's system bus is bridged to a Unix
  socket in the run directory. What users run.

Both give the controller the same things: a bus socket at run.bus_address, org.bluez with
a central adapter, one adapter per board, and a way to stop and start BlueZ."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from . import profile
from .busconfig import bus_config
from .rundir import BUS_CONFIG, BUS_SOCKET, PRIVATE_VM_DIR, TestbedError

ADAPTERS_TIMEOUT = 60.0


def make_lane(controller):
    return RealLane(controller) if controller.args.real else BlueZooLane(controller)


class BlueZooLane:
    central_name = profile.CENTRAL_NAME
    central_path = f"/org/bluez/{profile.CENTRAL_NAME}"
    central_address = profile.CENTRAL_ADDRESS
    fixed_handles = True
    advertises_while_off = True  # a powered-off BlueZoo adapter sends nothing anyway

    def __init__(self, controller):
        self.c = controller

    def adapter_index(self, board: int) -> int:
        return board

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
                "--central", profile.CENTRAL_ADDRESS,
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
                await get_property(self.c.bus, self.central_path, "org.bluez.Adapter1", "Address")
                return
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise TestbedError("BlueZoo did not own org.bluez within 20 s")
            await asyncio.sleep(0.02)

    async def stop_bluez(self) -> None:
        await self.c._terminate("bluezoo")

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


class RealLane:
    """Real bluetoothd in a VM. The VM is either shared (--vm DIR: booted once by
    `scripts/testbed vm start`, leased by the CLI with an flock() this process inherits)
    or private to this testbed (booted here, stopped with it)."""

    central_name = "hci0"
    central_path = "/org/bluez/hci0"
    fixed_handles = False
    advertises_while_off = False

    def __init__(self, controller):
        self.c = controller
        self.vm = None
        self.private_vm: Path | None = None
        self.central_address = ""

    def adapter_index(self, board: int) -> int:
        return self.vm.board_index(board)

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
                None, lambda: vmmod.start(self.private_vm, centrals=1, boards=a.boards, owner_pid=os.getpid()))
            self.c._write_pids()
        if a.boards > self.vm.boards:
            raise TestbedError(f"the testbed VM in {self.vm.path} has {self.vm.boards} board controllers; "
                               f"{a.boards} were asked for")
        run = self.c.run
        proc = self.c._spawn("bridge", [sys.executable, "-m", "blefleet_testbed", "_bridge",
                                        "--listen", str(run.file(BUS_SOCKET)), "--port", str(self.vm.bus_port)])
        await self.c.wait_for_socket("bridge", proc, run.file(BUS_SOCKET), "the bus bridge to the VM")

    async def start_bluez(self, fresh: bool) -> None:
        """bluetoothd (re)starts; `fresh`: every controller powered off and the device cache
        wiped first, so no link or device of an earlier testbed survives."""
        self.vm.write_main_conf(self.c.args.temporary_timeout)
        await self.vm.agent_async("bluez-reset" if fresh else "bluez-start")
        adapters = await self._wait_for_adapters()
        used = {self.vm.central_index(0)} | {self.adapter_index(b.index) for b in self.c.sim.boards}
        from .simulator import set_property
        for index in range(self.vm.controllers):
            if index not in used and adapters[index]["Powered"]:
                await set_property(self.c.bus, f"/org/bluez/hci{index}", "org.bluez.Adapter1", "Powered", "b", False)
        self.central_address = adapters[self.vm.central_index(0)]["Address"]
        for board in self.c.sim.boards:
            board.address = adapters[board.adapter_index]["Address"]

    async def _wait_for_adapters(self) -> dict[int, dict]:
        from .simulator import managed_objects
        deadline = time.monotonic() + ADAPTERS_TIMEOUT
        found: dict[int, dict] = {}
        while True:
            try:
                objects = await managed_objects(self.c.bus)
                found = {int(path.rsplit("hci", 1)[1]): {k: v[1] for k, v in ifaces["org.bluez.Adapter1"].items()}
                         for path, ifaces in objects.items() if "org.bluez.Adapter1" in ifaces}
                # bluetoothd powers every controller on at start (AutoEnable); until it has,
                # setting Powered answers org.bluez.Error.Busy.
                if len(found) >= self.vm.controllers and all(a["Powered"] for a in found.values()):
                    return found
            except Exception:
                pass
            if time.monotonic() > deadline:
                missing = sorted(set(range(self.vm.controllers)) - set(found))
                off = sorted(i for i, a in found.items() if not a["Powered"])
                raise TestbedError(
                    f"bluetoothd in the VM shows {len(found)} of {self.vm.controllers} controllers after "
                    f"{ADAPTERS_TIMEOUT:.0f} s (missing: {', '.join(f'hci{i}' for i in missing) or 'none'}; "
                    f"not powered: {', '.join(f'hci{i}' for i in off) or 'none'}); kernel: {await self._dmesg()}")
            await asyncio.sleep(0.1)

    async def _dmesg(self) -> str:
        try:
            return (await self.vm.agent_async("dmesg", timeout=10))[-300:]
        except Exception as e:
            return f"(unavailable: {e})"

    async def stop_bluez(self) -> None:
        await self.vm.agent_async("bluez-stop")

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
        then its host side is powered off too so that it stays quiet."""
        await self.vm.agent_async(f"power-cut {board.adapter_index}")
        await sim.advertise(board, False)
        await sim.power(board, False)
        board.present = False

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
