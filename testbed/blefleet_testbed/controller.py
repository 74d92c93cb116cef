"""The testbed's controller process: owns the private dbus-daemon and BlueZoo, runs the
board simulator, and answers `scripts/testbed` subcommands on a Unix socket in the run
directory. It tears everything down on SIGTERM, on a `stop`, or when --owner-pid exits."""

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
from .rundir import (BUS_CONFIG, BUS_SOCKET, CONTROL_SOCKET, RunDir, TestbedError, record,
                     terminate_recorded)

log = logging.getLogger("blefleet.testbed.controller")

BUS_CONFIG_TEXT = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
  <limit name="max_connections_per_user">4096</limit>
  <limit name="max_match_rules_per_connection">100000</limit>
  <limit name="max_replies_per_connection">100000</limit>
</busconfig>
"""

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
        self.server: asyncio.AbstractServer | None = None

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
        self.run.write_pids(entries)

    async def _terminate(self, role: str, grace: float = 3.0) -> None:
        proc = self.procs.pop(role, None)
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
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

    async def start_bus(self) -> None:
        self.run.file(BUS_CONFIG).write_text(BUS_CONFIG_TEXT.format(socket=self.run.file(BUS_SOCKET)))
        proc = self._spawn("dbus-daemon", ["dbus-daemon", "--nofork", "--nopidfile",
                                           f"--config-file={self.run.file(BUS_CONFIG)}"])
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                raise TestbedError(f"dbus-daemon exited at start: {self._log_tail('dbus-daemon')}")
            with socket.socket(socket.AF_UNIX) as s:
                try:
                    s.connect(str(self.run.file(BUS_SOCKET)))
                    return
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise TestbedError("dbus-daemon did not open its socket within 10 s")
            await asyncio.sleep(0.01)

    async def start_bluez(self) -> None:
        a = self.args
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.run.bus_address, PYTHONUNBUFFERED="1")
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
        proc = self._spawn("bluezoo", argv, env=env)
        deadline = time.monotonic() + 20
        from .simulator import get_property
        while True:
            if proc.poll() is not None:
                raise TestbedError(f"BlueZoo exited at start: {self._log_tail('bluezoo')}")
            try:
                await get_property(self.bus, "/org/bluez/hci0", "org.bluez.Adapter1", "Address")
                return
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise TestbedError("BlueZoo did not own org.bluez within 20 s")
            await asyncio.sleep(0.02)

    # -- lifecycle ---------------------------------------------------------------------

    async def setup(self) -> None:
        await self.start_bus()
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = self.run.bus_address
        import sdbus

        from .simulator import Simulator
        self.bus = sdbus.sd_bus_open_system()
        sdbus.set_default_bus(self.bus)
        a = self.args
        self.sim = Simulator(self.bus, a.boards, profile.TemperaturePattern.parse(a.temperature),
                             a.latency_ms, a.jitter_ms, a.notify_interval)
        self.sim.export()
        await self.start_bluez()
        await self.sim.provision_all()
        self.sim.start_ticking()
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

    async def teardown(self, remove_state: bool = True) -> None:
        if self.server is not None:
            self.server.close()
        if self.sim is not None and self.sim.tick_task is not None:
            self.sim.tick_task.cancel()
        await self._terminate("bluezoo")
        await self._terminate("dbus-daemon")
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
                response = {"ok": False, "error": str(e)}
            except Exception as e:  # report, never crash the controller
                log.exception("command failed")
                response = {"ok": False, "error": f"the testbed could not do that: {e}"}
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

    async def central(self) -> dict:
        from .simulator import get_property
        powered = False
        try:
            powered = bool(await asyncio.wait_for(
                get_property(self.bus, "/org/bluez/hci0", "org.bluez.Adapter1", "Powered"), 2))
        except Exception:
            pass
        return {"name": profile.CENTRAL_NAME, "address": profile.CENTRAL_ADDRESS, "powered": powered}

    async def handle(self, request: dict):
        op = request.get("op")
        if op == "state":
            return {"central": await self.central(), "boards": [b.state() for b in self.sim.boards]}
        if op == "stop":
            self.stopping.set()
            return None
        async with self.busy:
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
                await self._terminate("bluezoo")
                await self.sim.bluez_lost()
                await self.start_bluez()
                await self.sim.provision_all()
                return None
            if op == "adapter":
                from .simulator import set_property
                await set_property(self.bus, "/org/bluez/hci0", "org.bluez.Adapter1", "Powered", "b",
                                   bool(request["powered"]))
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
