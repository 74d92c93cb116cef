"""Test helpers: run `scripts/testbed`, and a small BlueZ D-Bus client (dbus_fast) that
is independent of the testbed's own code."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Awaitable, Callable

from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "testbed"

LED_SERVICE = "cd48409a-f3cc-11ed-a05b-0242ac120003"
LED_STATUS = "cd48409b-f3cc-11ed-a05b-0242ac120003"
SENSOR_SERVICE = "d888a9c2-f3cc-11ed-a05b-0242ac120003"
TEMPERATURE = "d888a9c3-f3cc-11ed-a05b-0242ac120003"
CENTRAL = "/org/bluez/hci0"

# The lab's Nano sketch with relative humidity (the testbed's --humidity), as a profile file
# for blefleetd (blefleet-profile(5)): the clients' tests give it to the daemon they start.
HUMIDITY_PROFILE = """\
name: nano-humidity
extends: nano
sensors:
  humidity:
    service: d888a9c2-f3cc-11ed-a05b-0242ac120003
    characteristic: d888a9c4-f3cc-11ed-a05b-0242ac120003
    format: uint16
    scale: 0.01
    unit: "%"
    access: [read, notify]
    device-class: humidity
"""


def fail_on_unasked_crashes(item, nextitem, vm_dir: Callable[[], Path | None]) -> bool:
    """pytest_runtest_protocol of the real lane's tests: runs `item` and fails it when the VM's
    bluetoothd died during it without being asked to (its supervisor writes every death down;
    `bluez segfault` marks its own as asked for), naming each crash, bluetoothd's last lines
    and its core's backtrace (`scripts/testbed vm crashes`)."""
    from _pytest.runner import runtestprotocol
    from blefleet_testbed.lanes import crash_lines, crash_report, unasked
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    before_dir = vm_dir()
    before = len(crash_lines(before_dir)) if before_dir else 0
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    path = vm_dir()
    died = unasked(crash_lines(path)[before if before_dir else 0:]) if path else []
    if died:
        message = (f"bluetoothd died {len(died)} time(s) during {item.nodeid} on the real lane, unasked:\n  "
                   + "\n  ".join(crash_report(path, line) for line in died))
        report = next((r for r in reports if r.when == "call"), reports[-1])
        if report.failed:
            report.sections.append(("bluetoothd died unasked", message))
        else:
            report.outcome = "failed"
            report.longrepr = message
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def run_cli(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    result = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"scripts/testbed {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


LANES = [lane for lane in os.environ.get("BLEFLEET_LANES", "bluezoo,real").split(",") if lane]
assert set(LANES) <= {"bluezoo", "real"}, f"BLEFLEET_LANES={os.environ.get('BLEFLEET_LANES')}: bluezoo and/or real"


class Testbed:
    def __init__(self, run_dir: Path, options: list[str], lane: str = "bluezoo"):
        self.run_dir = run_dir
        self.lane = lane
        out = run_cli("start", "--run-dir", str(run_dir), *options, timeout=600).stdout
        self.exports = dict(line.removeprefix("export ").split("=", 1) for line in out.splitlines())
        self.bus_address = self.exports["DBUS_SYSTEM_BUS_ADDRESS"].strip("'")
        # The real lane's bridge to the VM kernel's Bluetooth management interface.
        mgmt = self.exports.get("BLEFLEET_MGMT_SOCKET")
        self.mgmt_socket = shlex.split(mgmt)[0] if mgmt else None
        self.stopped = False

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run_cli(*args, "--run-dir", str(self.run_dir), check=check)

    def state(self) -> dict:
        return json.loads(self.cli("state").stdout)

    def control(self, message: dict):
        """One request to the running testbed's controller, in this process: what `cli` does
        without starting an interpreter (a check whose timing matters uses it)."""
        # Imported here: other suites use this module without the testbed's package on the path.
        from blefleet_testbed.cli import request
        from blefleet_testbed.rundir import RunDir
        return request(RunDir(self.run_dir), message)

    def board(self, name: str) -> dict:
        return next(b for b in self.state()["boards"] if b["name"] == name)

    def address(self, name: str) -> str:
        """A board's address as this lane gives it (BlueZoo: CA:FE:…, real: btvirt's)."""
        return self.board(name)["address"]

    def scale(self, seconds: float) -> float:
        """A wait scaled for the lane: the real lane's VM runs under software emulation."""
        return seconds * 4 if self.lane == "real" else seconds

    def pids(self) -> list[dict]:
        return json.loads((self.run_dir / "pids.json").read_text())["processes"]

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            run_cli("stop", "--run-dir", str(self.run_dir), check=False)


@contextmanager
def testbeds(base: Path, real_vm=None, default_lane: str = "bluezoo"):
    """Yields a factory of testbeds; every testbed it made is stopped at the end, pass or fail.
    `real_vm()` gives the directory of the VM the real lane's testbeds use."""
    made: list[Testbed] = []

    def make(*options: str, name: str | None = None, lane: str | None = None) -> Testbed:
        lane = lane or default_lane
        run_dir = base / (name or f"tb{len(made)}")
        extra = ["--real", "--vm", real_vm()] if lane == "real" else []
        tb = Testbed(run_dir, list(options) + extra, lane)
        made.append(tb)
        return tb
    try:
        yield make
    finally:
        for tb in made:
            tb.stop()


def device_path(address: str) -> str:
    return f"{CENTRAL}/dev_{address.replace(':', '_')}"


class BluezError(Exception):
    def __init__(self, name: str, text: str):
        super().__init__(f"{name}: {text}")
        self.name = name
        self.text = text


class Client:
    """One D-Bus client of org.bluez (its own unique name, like a separate application)."""

    def __init__(self, bus: MessageBus):
        self.bus = bus
        self.changed = asyncio.Event()
        self.signals: list[Message] = []
        bus.add_message_handler(self._on_message)

    @classmethod
    async def connect(cls, address: str) -> "Client":
        bus = await MessageBus(bus_address=address).connect()
        client = cls(bus)
        await client.call("/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", "s",
                          ["type='signal',sender='org.bluez'"], destination="org.freedesktop.DBus")
        await client.call("/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", "s",
                          ["type='signal',member='NameOwnerChanged',arg0='org.bluez'"],
                          destination="org.freedesktop.DBus")
        return client

    def _on_message(self, message: Message) -> bool:
        if message.message_type == MessageType.SIGNAL:
            self.signals.append(message)
            self.changed.set()
        return False

    def close(self) -> None:
        self.bus.disconnect()

    async def call(self, path: str, interface: str, member: str, signature: str = "",
                   body: list | None = None, destination: str = "org.bluez", timeout: float = 30) -> list:
        reply = await asyncio.wait_for(self.bus.call(Message(
            destination=destination, path=path, interface=interface, member=member,
            signature=signature, body=body or [])), timeout)
        if reply.message_type == MessageType.ERROR:
            raise BluezError(reply.error_name, reply.body[0] if reply.body else "")
        return reply.body

    async def get(self, path: str, interface: str, name: str) -> Any:
        body = await self.call(path, "org.freedesktop.DBus.Properties", "Get", "ss", [interface, name])
        return body[0].value

    async def set(self, path: str, interface: str, name: str, signature: str, value: Any) -> None:
        await self.call(path, "org.freedesktop.DBus.Properties", "Set", "ssv",
                        [interface, name, Variant(signature, value)])

    async def objects(self) -> dict[str, dict[str, dict[str, Any]]]:
        body = await self.call("/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        return {path: {iface: {k: v.value for k, v in props.items()} for iface, props in ifaces.items()}
                for path, ifaces in body[0].items()}

    async def wait_until(self, condition: Callable[[], Awaitable[Any]], timeout: float) -> Any:
        """Re-evaluates `condition` whenever a signal arrives (and at least every 0.25 s)
        until it is truthy; returns its value, or None at the deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            self.changed.clear()
            value = await condition()
            if value:
                return value
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            try:
                await asyncio.wait_for(self.changed.wait(), min(0.25, remaining))
            except asyncio.TimeoutError:
                pass

    # -- BlueZ conveniences ---------------------------------------------------------------

    async def devices(self) -> dict[str, dict[str, Any]]:
        """Devices on the central adapter only (the boards' emulated controllers are not ours)."""
        return {p: ifs["org.bluez.Device1"] for p, ifs in (await self.objects()).items()
                if "org.bluez.Device1" in ifs and ifs["org.bluez.Device1"]["Adapter"] == CENTRAL}

    async def discover(self, addresses: list[str], timeout: float = 10) -> bool:
        await self.call(CENTRAL, "org.bluez.Adapter1", "SetDiscoveryFilter", "a{sv}",
                        [{"UUIDs": Variant("as", [LED_SERVICE]), "Transport": Variant("s", "le")}])
        await self.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")
        try:
            async def all_seen():
                known = {d["Address"] for d in (await self.devices()).values()}
                return set(addresses) <= known
            return bool(await self.wait_until(all_seen, timeout))
        finally:
            await self.call(CENTRAL, "org.bluez.Adapter1", "StopDiscovery")

    async def connect_device(self, address: str, timeout: float = 10) -> bool:
        path = device_path(address)
        await self.call(path, "org.bluez.Device1", "Connect", timeout=timeout)

        async def resolved():
            return await self.get(path, "org.bluez.Device1", "ServicesResolved")
        return bool(await self.wait_until(resolved, timeout))

    async def gatt(self, address: str) -> dict[str, str]:
        """UUID -> object path of the GATT services and characteristics under the device."""
        prefix = device_path(address) + "/"
        found = {}
        for path, ifaces in (await self.objects()).items():
            if not path.startswith(prefix):
                continue
            for iface in ("org.bluez.GattService1", "org.bluez.GattCharacteristic1"):
                if iface in ifaces:
                    uuid = ifaces[iface]["UUID"]
                    if uuid in found:
                        found[uuid + "#duplicate"] = path
                    found[uuid] = path
        return found

    async def read_temperature(self, address: str) -> int:
        path = (await self.gatt(address))[TEMPERATURE]
        value = await self.call(path, "org.bluez.GattCharacteristic1", "ReadValue", "a{sv}", [{}])
        return int.from_bytes(bytes(value[0]), "little", signed=True)

    async def write_led(self, address: str, value: bytes) -> None:
        path = (await self.gatt(address))[LED_STATUS]
        await self.call(path, "org.bluez.GattCharacteristic1", "WriteValue", "aya{sv}",
                        [value, {"type": Variant("s", "request")}])


# The kernel's Bluetooth management interface (what btmgmt speaks; BlueZ's doc/mgmt-api.txt):
# packets of a 6-byte header (opcode or event code, controller index, parameter length, each
# little-endian 16 bits) and the parameters.
MGMT_OP_DISCONNECT = 0x0014
MGMT_EV_CMD_COMPLETE = 0x0001
MGMT_EV_CMD_STATUS = 0x0002
MGMT_EV_DEVICE_DISCONNECTED = 0x000C
MGMT_STATUS_SUCCESS = 0x00
MGMT_STATUS_NOT_CONNECTED = 0x02
MGMT_STATUS_DISCONNECTED = 0x0E
MGMT_ADDRESS_TYPES = {"public": 1, "random": 2}  # BlueZ's AddressType -> BDADDR_LE_PUBLIC/RANDOM


def mgmt_address(address: str, address_type: str) -> bytes:
    """struct mgmt_addr_info: the address's bytes least significant first, then its type."""
    return bytes(reversed(bytes.fromhex(address.replace(":", "")))) + bytes([MGMT_ADDRESS_TYPES[address_type]])


class Mgmt:
    """A client of the kernel's Bluetooth management interface through the real lane's
    BLEFLEET_MGMT_SOCKET: plain packets over a Unix stream socket (one control channel
    of the VM's kernel per connection), independent of the testbed's own code."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer
        self.events: list[tuple[int, int, bytes]] = []  # what command() skipped

    @classmethod
    async def connect(cls, path: str) -> "Mgmt":
        return cls(*await asyncio.open_unix_connection(path))

    def close(self) -> None:
        self.writer.close()

    async def packet(self, timeout: float = 10) -> tuple[int, int, bytes]:
        """The next packet: (event code, controller index, parameters)."""
        header = await asyncio.wait_for(self.reader.readexactly(6), timeout)
        code, index, length = int.from_bytes(header[:2], "little"), int.from_bytes(header[2:4], "little"), \
            int.from_bytes(header[4:6], "little")
        return code, index, await asyncio.wait_for(self.reader.readexactly(length), timeout)

    async def command(self, opcode: int, index: int, params: bytes = b"", timeout: float = 10) -> tuple[int, bytes]:
        """Sends one command; returns the status and return parameters of its Command
        Complete (or Command Status) event. Other events on the way are kept in .events."""
        self.writer.write(opcode.to_bytes(2, "little") + index.to_bytes(2, "little")
                          + len(params).to_bytes(2, "little") + params)
        await self.writer.drain()
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            code, at, data = await self.packet(max(0.0, deadline - asyncio.get_running_loop().time()))
            if (code in (MGMT_EV_CMD_COMPLETE, MGMT_EV_CMD_STATUS) and at == index
                    and int.from_bytes(data[:2], "little") == opcode):
                return data[2], data[3:]
            self.events.append((code, at, data))

    async def disconnect(self, index: int, address: str, address_type: str) -> int:
        """MGMT_OP_DISCONNECT of an LE device on controller hci`index`: the status."""
        status, _ = await self.command(MGMT_OP_DISCONNECT, index, mgmt_address(address, address_type))
        return status


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


def env_with_bus(address: str) -> dict:
    return dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
