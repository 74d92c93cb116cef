"""The testbed's controller process: owns its lane's BlueZ (a private dbus-daemon and
BlueZoo, or a real bluetoothd in a VM, see lanes.py), runs the board simulator, and answers
`scripts/testbed` subcommands on a Unix socket in the run directory. It tears everything
down on SIGTERM, on a `stop`, or when --owner-pid exits."""

from __future__ import annotations

import asyncio
import ctypes
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from . import profile
from .rundir import CONTROL_SOCKET, RunDir, TestbedError, record

log = logging.getLogger("blefleet.testbed.controller")


PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Child side of fork: get SIGTERM if the controller dies, whatever kills it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:
        os._exit(1)


class Controller:
    def __init__(self, args):
        self.args = args
        self.run = RunDir(Path(args.run_dir))
        self.procs: dict[str, subprocess.Popen] = {}
        self.sim = None
        self.bus = None
        self.stopping = asyncio.Event()
        self.busy = asyncio.Lock()
        # The standing faults asked for since the last `fault clear`, for `state`.
        self.faults: list[dict] = []
        self.server: asyncio.AbstractServer | None = None
        # bluetoothd's crashes (the lane restarts it) seen while this testbed ran, each one
        # line "TIME bluetoothd (pid N) REASON", and the task that follows them.
        self.crashes: list[str] = []
        self.crashes_known = 0  # crashes in the lane's record when last looked at
        self.crash_watch: asyncio.Task | None = None
        # Why the boards could not be registered again after a crash (None: they were).
        self.recovery_error: str | None = None
        from .lanes import make_lane
        self.lane = make_lane(self)

    # -- child processes ---------------------------------------------------------------

    def _spawn(self, role: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        logfile = open(self.run.file(f"{role}.log"), "ab")
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logfile, stderr=logfile,
                                    env=env, preexec_fn=_die_with_parent, close_fds=True)
        finally:
            logfile.close()
        self.procs[role] = proc
        self._write_pids()
        return proc

    def _write_pids(self) -> None:
        entries = [record("controller", os.getpid())]
        entries += [record(role, p.pid) for role, p in self.procs.items() if p.poll() is None]
        entries += self.lane.extra_records()
        self.run.write_pids(entries)

    async def _terminate(self, role: str, grace: float = 3.0) -> None:
        """Stops process `role`: SIGTERM, SIGKILL after `grace` seconds (at once when 0)."""
        proc = self.procs.pop(role, None)
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate() if grace > 0 else proc.kill()
            deadline = time.monotonic() + grace
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self._write_pids()

    def _log_tail(self, role: str) -> str:
        try:
            lines = self.run.file(f"{role}.log").read_text(errors="replace").strip().splitlines()
        except FileNotFoundError:
            return ""
        return " | ".join(lines[-5:])

    async def wait_for_socket(self, role: str, proc: subprocess.Popen, path: Path, what: str) -> None:
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                raise TestbedError(f"{what} exited at start: {self._log_tail(role)}")
            with socket.socket(socket.AF_UNIX) as s:
                try:
                    s.connect(str(path))
                    return
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise TestbedError(f"{what} did not open its socket within 10 s")
            await asyncio.sleep(0.01)

    # -- lifecycle ---------------------------------------------------------------------

    async def setup(self) -> None:
        await self.lane.start_bus()
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self.run.bus_address
        import sdbus

        from .simulator import Simulator
        self.bus = sdbus.sd_bus_open_system()
        sdbus.set_default_bus(self.bus)
        a = self.args
        self.sim = Simulator(self.bus, self.lane, a.boards, profile.TemperaturePattern.parse(a.temperature),
                             a.latency_ms, a.jitter_ms, a.notify_interval, humidity=a.humidity,
                             encrypted=a.encrypted)
        self.sim.export()
        await self.lane.start_bluez(fresh=True)
        await self.sim.provision_all()
        self.sim.start_ticking()
        if self.lane.restarts_bluez:
            self.crashes_known = len(self.lane.crashes())
            self.crash_watch = asyncio.create_task(self.follow_crashes())
        self.server = await asyncio.start_unix_server(self.serve, path=str(self.run.file(CONTROL_SOCKET)))

    def watch_owner(self, pid: int) -> None:
        loop = asyncio.get_running_loop()
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            log.info("owner %d is already gone", pid)
            self.stopping.set()
            return
        loop.add_reader(fd, lambda: (log.info("owner %d exited", pid), self.stopping.set()))

    async def follow_crashes(self) -> None:
        """bluetoothd crashed and its lane restarted it (the real lane's VM does, as systemd
        does on a gateway with the package's drop-in). The lane writes each crash down as it
        happens; this looks at that record five times a second."""
        while True:
            await asyncio.sleep(0.2)
            if len(self.lane.crashes()) > self.crashes_known:
                async with self.busy:
                    await self.recover_from_crashes()

    async def recover_from_crashes(self) -> None:
        """(`self.busy` held.) The crashes written down since the last look: each logged in one
        line with its reason and kept for `state`; the new bluetoothd knows none of the boards'
        advertisements and GATT applications, so they are registered again, as after
        `bluez restart`."""
        lines = self.lane.crashes()
        new = lines[self.crashes_known:]
        if not new:
            return
        self.crashes_known = len(lines)
        self.crashes += new
        for line in new:
            log.warning("bluetoothd crashed: %s; it is restarted, the boards are registered again", line)
        try:
            await self.sim.bluez_lost()
            await self.lane.start_bluez(fresh=False)
            await self.sim.provision_all()
            self.recovery_error = None
        except Exception as e:  # said by every command from now on
            log.exception("the boards could not be registered again after a crash")
            self.recovery_error = f"after bluetoothd crashed ({new[-1]}) the boards could not be registered again: {e}"

    async def teardown(self, remove_state: bool = True) -> None:
        if self.crash_watch is not None:
            self.crash_watch.cancel()
        if self.server is not None:
            self.server.close()
        if self.sim is not None and self.sim.tick_task is not None:
            self.sim.tick_task.cancel()
        await self.lane.stop()
        if remove_state:
            self.run.remove_state()

    # -- commands ----------------------------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            try:
                request = json.loads(line)
                result = await self.handle(request)
                response = {"ok": True, "result": result}
            except TestbedError as e:
                response = {"ok": False, "error": await self.lane.cause_of_failure() or str(e)}
            except Exception as e:  # report, never crash the controller
                log.exception("command failed")
                cause = await self.lane.cause_of_failure()
                response = {"ok": False, "error": cause or f"the testbed could not do that: {e}"}
            writer.write(json.dumps(response).encode() + b"\n")
            await writer.drain()
        finally:
            writer.close()

    def _boards(self, name: str):
        if name == "all":
            return list(self.sim.boards)
        board = self.sim.by_name.get(name)
        if board is None:
            names = self.sim.boards[0].name + (f" … {self.sim.boards[-1].name}" if len(self.sim.boards) > 1 else "")
            raise TestbedError(f"there is no board named '{name}' (this testbed has {names})")
        return [board]

    async def centrals(self) -> list[dict]:
        from .simulator import get_property
        found = []
        for index, address in sorted(self.lane.central_addresses().items()):
            powered = False
            try:
                powered = bool(await asyncio.wait_for(
                    get_property(self.bus, f"/org/bluez/hci{index}", "org.bluez.Adapter1", "Powered"), 2))
            except Exception:
                pass
            found.append({"name": f"hci{index}", "address": address, "powered": powered,
                          "plugged": index == self.lane.plugged})
        return found

    def _central(self, name: str | None) -> int:
        """hci index of central `name` (default hci0)."""
        centrals = self.lane.central_addresses()
        name = name or "hci0"
        index = int(name[3:]) if name.startswith("hci") and name[3:].isdigit() else None
        if index not in centrals:
            known = ", ".join(f"hci{i}" for i in sorted(centrals))
            raise TestbedError(f"there is no central adapter named '{name}' (this testbed has {known})")
        return index

    async def fault(self, request: dict) -> None:
        """`scripts/testbed fault ...`: the lane injects it (lanes.py)."""
        kind = request.get("kind")
        if kind == "clear":
            await self.lane.fault_clear()
            self.faults = []
            return None
        if kind == "hang":
            if not self.lane.controllers_can_hang:
                await self.lane.fault_hang(0, None)  # says why not
            seconds = request.get("seconds")
            if seconds is not None and not 0 < float(seconds) <= 3600:
                raise TestbedError(f"a hang of {seconds} s is not between 0 and an hour")
            links_live = bool(request.get("linksLive"))
            await self.lane.fault_hang(self._central(request.get("adapter")),
                                       None if seconds is None else float(seconds), links_live)
            self.faults.append({"kind": "hang", "adapter": request.get("adapter"), "linksLive": links_live,
                                "until": "reset" if seconds is None else
                                time.strftime("%H:%M:%S", time.localtime(time.time() + float(seconds)))})
            return None
        boards = self._boards(request["board"])
        for board in boards:
            if kind == "connect":
                status = int(request["status"])
                if not 0 < status <= 0xFF:
                    raise TestbedError(f"{status:#x} is not an HCI error status (0x01…0xff)")
                rate = float(request.get("rate", 0.0))
                if not 0.0 <= rate <= 1.0:
                    raise TestbedError(f"{rate} is not a fraction (0…1)")
                await self.lane.fault_connect(board, status, int(request.get("count", 0)), rate,
                                              int(request.get("seed", 0)))
                self.faults.append({"kind": "connect", "board": board.name, "status": f"{status:#04x}",
                                    **({"rate": rate, "seed": int(request.get("seed", 0))} if rate
                                       else {"count": int(request.get("count", 0))})})
            elif kind == "drop":
                every = request.get("every")
                if every is None:
                    await self.lane.fault_drop(board)
                    await board.link_lost()
                else:
                    await self.lane.fault_drop_every(board, float(every), int(request.get("seed", 0)))
                    self.faults.append({"kind": "drop", "board": board.name, "every": float(every),
                                        "seed": int(request.get("seed", 0))})
            elif kind == "slow":
                delay = float(request["delay"])
                if not 0.0 <= delay <= 60.0:
                    raise TestbedError(f"a delay of {delay} s is not between 0 and 60 s")
                await self.lane.fault_slow(board, delay)
                self.faults = [f for f in self.faults if not (f["kind"] == "slow" and f["board"] == board.name)]
                if delay > 0:
                    self.faults.append({"kind": "slow", "board": board.name, "delay": delay})
            else:
                raise TestbedError(f"unknown fault '{kind}'")
        return None

    async def handle(self, request: dict):
        op = request.get("op")
        if op == "state":
            centrals = await self.centrals()
            return {"central": centrals[0], "centrals": centrals, "boards": [b.state() for b in self.sim.boards],
                    "faults": self.faults, "bluez_crashes": self.crashes}
        if op == "stop":
            self.stopping.set()
            return None
        async with self.busy:
            if self.lane.restarts_bluez:
                await self.recover_from_crashes()  # one written down but not yet looked at
            if self.recovery_error is not None:
                raise TestbedError(self.recovery_error)
            if op == "bluez-segfault":
                await self.lane.segfault_bluez(bool(request.get("unasked")))
                await self.recover_from_crashes()
                return None
            if op == "bluez-wait":
                # Every crash written down is recovered from; bluetoothd runs.
                if cause := await self.lane.cause_of_failure():
                    raise TestbedError(cause)
                return None
            if op in ("drop", "restore", "reset"):
                for board in self._boards(request["board"]):
                    await getattr(self.sim, op)(board)
                return None
            if op == "temp":
                celsius = int(request["celsius"])
                if not profile.MIN_CELSIUS <= celsius <= profile.MAX_CELSIUS:
                    raise TestbedError(f"{celsius} °C is outside what one signed byte holds (-128…127)")
                for board in self._boards(request["board"]):
                    self.sim.set_temperature(board, celsius)
                return None
            if op == "bluez-restart":
                await self.lane.stop_bluez(crash=bool(request.get("crash")))
                await self.sim.bluez_lost()
                await self.lane.start_bluez(fresh=False)
                await self.sim.provision_all()
                return None
            if op == "adapter":
                from .simulator import set_property
                index = self._central(request.get("adapter"))
                await set_property(self.bus, f"/org/bluez/hci{index}", "org.bluez.Adapter1", "Powered", "b",
                                   bool(request["powered"]))
                return None
            if op == "plug":
                return f"hci{await self.lane.plug()}"
            if op == "unplug":
                await self.lane.unplug()
                return None
            if op == "fault":
                return await self.fault(request)
            if op == "signal":
                rssi = int(request["rssi"])
                if not -127 <= rssi <= 20:
                    raise TestbedError(f"{rssi} dBm is not a signal a controller reports (-127…20)")
                index = self._central(request.get("adapter"))
                for board in self._boards(request["board"]):
                    await self.lane.set_signal(index, board, rssi)
                return None
        raise TestbedError(f"unknown testbed command '{op}'")


async def amain(args, ready_fd: int) -> int:
    controller = Controller(args)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, controller.stopping.set)
    try:
        if args.owner_pid:
            controller.watch_owner(args.owner_pid)
        await controller.setup()
    except BaseException as e:
        message = str(e) if isinstance(e, TestbedError) else f"the testbed failed to start: {e!r}"
        log.exception("start failed")
        await controller.teardown(remove_state=False)
        _report(ready_fd, {"ok": False, "error": message})
        return 1
    if controller.stopping.is_set():
        await controller.teardown(remove_state=False)
        _report(ready_fd, {"ok": False, "error": "the owner process exited before the testbed was ready"})
        return 1
    _report(ready_fd, {"ok": True})
    await controller.stopping.wait()
    await controller.teardown()
    return 0


def _report(fd: int, message: dict) -> None:
    try:
        os.write(fd, json.dumps(message).encode() + b"\n")
        os.close(fd)
    except OSError:
        pass


def main(args) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    return asyncio.run(amain(args, args.ready_fd))
