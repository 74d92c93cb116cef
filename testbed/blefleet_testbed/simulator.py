"""The board simulator: N Nano 33 BLE Sense boards running the LED + temperature sketch.

Each board is one controller of the lane (an emulated BlueZoo adapter, or a btvirt
controller under a real bluetoothd) that registers one LE advertisement (LED service
UUID, local name, Discoverable=true) and one GATT application (shared/BOARD-PROFILE.md).
The boards' GATT objects are served from this process; BlueZ serves them to the central
over the link when it connects."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from typing import Any

import sdbus
from sdbus import DbusInterfaceCommonAsync, DbusUnprivilegedFlag, dbus_method_async, dbus_property_async

from . import profile

log = logging.getLogger("blefleet.testbed.simulator")

BLUEZ = "org.bluez"


class BluezFailedError(sdbus.DbusFailedError):
    dbus_error_name = "org.bluez.Error.Failed"


class BluezNotPermittedError(sdbus.DbusFailedError):
    dbus_error_name = "org.bluez.Error.NotPermitted"


class BluezInvalidValueLengthError(sdbus.DbusFailedError):
    dbus_error_name = "org.bluez.Error.InvalidValueLength"


class Radio:
    """Per-operation latency and jitter standing in for BLE connection intervals."""

    def __init__(self, latency_ms: float, jitter_ms: float, seed: int = 0):
        self.latency = latency_ms / 1000.0
        self.jitter = jitter_ms / 1000.0
        self.rng = random.Random(seed)

    async def delay(self, cut: asyncio.Event) -> None:
        """One operation's time on the air, over at once when the board loses power (`cut`)."""
        if self.latency <= 0 and self.jitter <= 0:
            return
        seconds = max(0.0, self.latency + self.rng.uniform(-self.jitter, self.jitter))
        try:
            await asyncio.wait_for(cut.wait(), seconds)
        except TimeoutError:
            pass


class GattService(DbusInterfaceCommonAsync, interface_name="org.bluez.GattService1"):
    def __init__(self, uuid: str, handle: int):
        super().__init__()
        self.uuid = uuid
        self.handle = handle

    @dbus_property_async("s")
    def UUID(self) -> str:
        return self.uuid

    @dbus_property_async("b")
    def Primary(self) -> bool:
        return True

    @dbus_property_async("q")
    def Handle(self) -> int:
        return self.handle

    @Handle.setter
    def _handle_setter(self, value: int) -> None:
        # A firmware's handles are fixed (it keeps its own); a server that asked BlueZ to
        # choose (handle 0, as on the real lane) is told the handle it got.
        if self.handle == 0:
            self.handle = value


class GattCharacteristic(DbusInterfaceCommonAsync, interface_name="org.bluez.GattCharacteristic1"):
    """A characteristic of the board's GATT table.

    Deliberately has no WriteAcquired/NotifyAcquired properties and no Acquire* methods:
    the sketch uses ordinary ATT writes and notifications."""

    def __init__(self, board: "Board", uuid: str, service_path: str, flags: list[str], handle: int):
        super().__init__()
        self.board = board
        self.uuid = uuid
        self.service_path = service_path
        self.flags = flags
        self.handle = handle
        self.value = b""
        self.notifying = False

    @dbus_method_async(input_signature="a{sv}", result_signature="ay", flags=DbusUnprivilegedFlag)
    async def ReadValue(self, options: dict[str, tuple[str, Any]]) -> bytes:
        return await self.board.read(self, options)

    @dbus_method_async(input_signature="aya{sv}", flags=DbusUnprivilegedFlag)
    async def WriteValue(self, value: bytes, options: dict[str, tuple[str, Any]]) -> None:
        await self.board.write(self, bytes(value), options)

    @dbus_method_async(flags=DbusUnprivilegedFlag)
    async def StartNotify(self) -> None:
        await self.board.start_notify(self)

    @dbus_method_async(flags=DbusUnprivilegedFlag)
    async def StopNotify(self) -> None:
        await self.board.stop_notify(self)

    @dbus_method_async(flags=DbusUnprivilegedFlag)
    async def Confirm(self) -> None:
        # BlueZoo calls Confirm after every value change it forwards; notifications
        # need no confirmation, so there is nothing to do.
        return None

    @dbus_property_async("s")
    def UUID(self) -> str:
        return self.uuid

    @dbus_property_async("o")
    def Service(self) -> str:
        return self.service_path

    @dbus_property_async("ay")
    def Value(self) -> bytes:
        return self.value

    @Value.setter_private
    def _value_setter(self, value: bytes) -> None:
        self.value = value

    @dbus_property_async("b")
    def Notifying(self) -> bool:
        return self.notifying

    @Notifying.setter_private
    def _notifying_setter(self, value: bool) -> None:
        self.notifying = value

    @dbus_property_async("as")
    def Flags(self) -> list[str]:
        return self.flags

    @dbus_property_async("q")
    def Handle(self) -> int:
        return self.handle

    @Handle.setter
    def _handle_setter(self, value: int) -> None:
        if self.handle == 0:
            self.handle = value


class Advertisement(DbusInterfaceCommonAsync, interface_name="org.bluez.LEAdvertisement1"):
    def __init__(self, name: str):
        super().__init__()
        self.name = name

    @dbus_method_async(flags=DbusUnprivilegedFlag)
    async def Release(self) -> None:
        return None

    @dbus_property_async("s")
    def Type(self) -> str:
        return "peripheral"

    @dbus_property_async("as")
    def ServiceUUIDs(self) -> list[str]:
        return [profile.LED_SERVICE_UUID]

    @dbus_property_async("s")
    def LocalName(self) -> str:
        return self.name

    @dbus_property_async("b")
    def Discoverable(self) -> bool:
        return True


class BoardSideAgent(DbusInterfaceCommonAsync, interface_name="org.bluez.Agent1"):
    """The boards' side of a pairing on real BlueZ (the VM's bluetoothd serves the centrals and
    the boards alike): a Nano 33 BLE has no display and no keys, so it pairs Just Works. Its
    bluetoothd asks the default agent to authorize an incoming pairing; this one, registered
    NoInputNoOutput, says yes. Pairings a central starts (blefleetd's Device1.Pair) go to that
    central's own agent."""

    @dbus_method_async(flags=DbusUnprivilegedFlag)
    async def Release(self) -> None:
        return None

    @dbus_method_async(input_signature="ou", flags=DbusUnprivilegedFlag)
    async def RequestConfirmation(self, device: str, passkey: int) -> None:
        return None

    @dbus_method_async(input_signature="o", flags=DbusUnprivilegedFlag)
    async def RequestAuthorization(self, device: str) -> None:
        return None

    @dbus_method_async(input_signature="os", flags=DbusUnprivilegedFlag)
    async def AuthorizeService(self, device: str, uuid: str) -> None:
        return None

    @dbus_method_async(flags=DbusUnprivilegedFlag)
    async def Cancel(self) -> None:
        return None


class Board:
    """One simulated board and what the testbed reports about it."""

    def __init__(self, index: int, adapter_index: int, pattern: profile.TemperaturePattern, count: int,
                 radio: Radio, fixed_handles: bool = True, humidity: bool = False, secret: bool = False):
        self.index = index
        self.name = profile.board_name(index)
        self.address = profile.board_address(index)  # the lane may learn the real one later
        self.adapter_index = adapter_index
        self.adapter_path = f"/org/bluez/hci{adapter_index}"
        self.app_path = f"/org/blefleet/testbed/{self.name.replace('-', '_')}"
        self.sensor = profile.TemperatureSource(pattern, index, count)
        self.radio = radio
        self._present = True
        self._off = asyncio.Event()  # set by a power cut that ends every wait (power_cut)
        self._busy = 0               # GATT requests being answered
        self._idle = asyncio.Event()
        self._idle.set()
        self.led: int | None = None
        self.led_writes = 0

        self.manager = sdbus.DbusObjectManagerInterfaceAsync()
        # Fixed handles where the lane's BlueZ has the peripheral's whole table (BlueZoo);
        # a real bluetoothd serves its own GAP/GATT services on the same adapter and
        # assigns ours (handle 0 = "choose"), the same ones at every registration.
        def handle(fixed: int) -> int:
            return fixed if fixed_handles else 0
        self.led_service = GattService(profile.LED_SERVICE_UUID, handle(profile.LED_SERVICE_HANDLE))
        self.sensor_service = GattService(profile.SENSOR_SERVICE_UUID, handle(profile.SENSOR_SERVICE_HANDLE))
        self.led_status = GattCharacteristic(
            self, profile.LED_STATUS_UUID, f"{self.app_path}/service0", ["write"],
            handle(profile.LED_STATUS_HANDLE))
        self.temperature = GattCharacteristic(
            self, profile.TEMPERATURE_UUID, f"{self.app_path}/service1", ["read", "notify"],
            handle(profile.TEMPERATURE_HANDLE))
        self.temperature.value = profile.encode_celsius(self.sensor.celsius)
        # The lab's variant with humidity (`start --humidity`): read + notify, uint16.
        self.humidity = None
        if humidity:
            self.humidity = GattCharacteristic(
                self, profile.HUMIDITY_UUID, f"{self.app_path}/service1", ["read", "notify"],
                handle(profile.HUMIDITY_HANDLE))
            self.humidity.value = profile.encode_humidity(profile.humidity_hundredths(index))
        # `start --encrypted`: readable over an encrypted link only (BlueZ enforces it, and
        # asks this app only once the link is encrypted).
        self.secret = None
        if secret:
            self.secret = GattCharacteristic(
                self, profile.SECRET_UUID, f"{self.app_path}/service1", ["encrypt-read"],
                handle(profile.SECRET_HANDLE))
            self.secret.value = profile.SECRET_VALUE
        self.advertisement = Advertisement(self.name)

    def export(self) -> None:
        self.manager.export_to_dbus(self.app_path)
        self.manager.export_with_manager(f"{self.app_path}/service0", self.led_service)
        self.manager.export_with_manager(f"{self.app_path}/service0/char0", self.led_status)
        self.manager.export_with_manager(f"{self.app_path}/service1", self.sensor_service)
        self.manager.export_with_manager(f"{self.app_path}/service1/char0", self.temperature)
        if self.humidity is not None:
            self.manager.export_with_manager(f"{self.app_path}/service1/char1", self.humidity)
        if self.secret is not None:
            self.manager.export_with_manager(f"{self.app_path}/service1/char2", self.secret)
        self.advertisement.export_to_dbus(f"{self.app_path}/advertisement0")

    @property
    def notifying(self) -> bool:
        return self.temperature.notifying

    @property
    def present(self) -> bool:
        return self._present

    @present.setter
    def present(self, on: bool) -> None:
        self._present = on
        if on:
            self._off.clear()

    async def power_cut(self) -> None:
        """Power is cut: every request still waiting for its time on the air is answered at
        once ("Not connected"); returns once all are (their replies are on the bus, ahead of
        anything sent after this)."""
        self._present = False
        self._off.set()
        await self._idle.wait()

    @contextlib.asynccontextmanager
    async def _request(self):
        self._busy += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._busy -= 1
            if self._busy == 0:
                self._idle.set()

    def state(self) -> dict:
        return {
            "name": self.name,
            "address": self.address,
            "present": self.present,
            "led": self.led,
            "led_writes": self.led_writes,
            "temperature": self.sensor.celsius,
            "notifying": self.notifying,
            **({"humidity": profile.humidity_hundredths(self.index) / 100} if self.humidity is not None else {}),
        }

    # -- what the sketch does -------------------------------------------------------

    def _require_present(self) -> None:
        if not self.present:
            raise BluezFailedError("Not connected")

    async def read(self, chrc: GattCharacteristic, options: dict) -> bytes:
        self._require_present()
        if "read" not in chrc.flags and "encrypt-read" not in chrc.flags:
            raise BluezNotPermittedError("Read not permitted")
        async with self._request():
            await self.radio.delay(self._off)
            self._require_present()
        if chrc is self.secret:
            return profile.SECRET_VALUE
        if chrc is self.humidity:
            return profile.encode_humidity(profile.humidity_hundredths(self.index))
        return profile.encode_celsius(self.sensor.celsius)

    async def write(self, chrc: GattCharacteristic, value: bytes, options: dict) -> None:
        self._require_present()
        if "write" not in chrc.flags:
            raise BluezNotPermittedError("Write not permitted")
        kind = options.get("type", ("s", "request"))[1]
        if kind == "command":
            raise BluezNotPermittedError("Write without response not permitted")
        if len(value) != 1:
            raise BluezInvalidValueLengthError("Invalid value length")
        async with self._request():
            await self.radio.delay(self._off)
            self._require_present()
            self.led = value[0]
            self.led_writes += 1
        log.info("%s: LED <- 0x%02x", self.name, value[0])

    async def start_notify(self, chrc: GattCharacteristic) -> None:
        self._require_present()
        if "notify" not in chrc.flags:
            raise BluezNotPermittedError("Notify not permitted")
        async with self._request():
            await self.radio.delay(self._off)
            self._require_present()
        if not chrc.notifying:
            await chrc.Notifying.set_async(True)

    async def stop_notify(self, chrc: GattCharacteristic) -> None:
        if chrc.notifying:
            await chrc.Notifying.set_async(False)

    async def tick(self) -> None:
        """One pass of the sketch's loop: reread the sensor, notify a subscriber."""
        self.sensor.tick()
        value = profile.encode_celsius(self.sensor.celsius)
        if self.present and self.temperature.notifying:
            await self.temperature.Value.set_async(value)
        else:
            self.temperature.value = value
        if self.humidity is not None:
            humidity = profile.encode_humidity(profile.humidity_hundredths(self.index))
            if self.present and self.humidity.notifying:
                await self.humidity.Value.set_async(humidity)
            else:
                self.humidity.value = humidity

    async def rebooted(self) -> None:
        """After a power cycle: LED off, no subscription (CCCD is not kept by the sketch)."""
        self.led = None
        await self.link_lost()

    async def link_lost(self) -> None:
        for chrc in (self.temperature, self.humidity):
            if chrc is not None and chrc.notifying:
                await chrc.Notifying.set_async(False)


async def call(bus: sdbus.SdBus, path: str, interface: str, member: str,
               signature: str = "", *args: Any, destination: str = BLUEZ) -> tuple:
    message = bus.new_method_call_message(destination, path, interface, member)
    if signature:
        message.append_data(signature, *args)
    reply = await bus.call_async(message)
    return reply.get_contents()


async def set_property(bus: sdbus.SdBus, path: str, interface: str, name: str,
                       signature: str, value: Any) -> None:
    message = bus.new_property_set_message(BLUEZ, path, interface, name)
    message.append_data("v", (signature, value))
    await bus.call_async(message)


async def managed_objects(bus: sdbus.SdBus) -> dict:
    message = bus.new_method_call_message(BLUEZ, "/", "org.freedesktop.DBus.ObjectManager",
                                          "GetManagedObjects")
    reply = await bus.call_async(message)
    return reply.get_contents()


async def get_property(bus: sdbus.SdBus, path: str, interface: str, name: str) -> Any:
    message = bus.new_property_get_message(BLUEZ, path, interface, name)
    reply = await bus.call_async(message)
    return reply.get_contents()[1]


class Simulator:
    """All boards of one testbed, provisioned on whatever currently owns org.bluez."""

    def __init__(self, bus: sdbus.SdBus, lane, count: int, pattern: profile.TemperaturePattern,
                 latency_ms: float, jitter_ms: float, notify_interval: float, humidity: bool = False,
                 encrypted: bool = False):
        self.bus = bus
        self.lane = lane
        self.notify_interval = notify_interval
        self.boards = [Board(i, lane.adapter_index(i), pattern, count, Radio(latency_ms, jitter_ms, seed=i),
                             fixed_handles=lane.fixed_handles, humidity=humidity, secret=encrypted and i == count)
                       for i in range(1, count + 1)]
        self.by_name = {b.name: b for b in self.boards}
        self.tick_task: asyncio.Task | None = None

    def export(self) -> None:
        for board in self.boards:
            board.export()

    def start_ticking(self) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(self.notify_interval)
                for board in self.boards:
                    try:
                        await board.tick()
                    except Exception:  # keep ticking whatever one board does
                        log.exception("tick failed for %s", board.name)
        self.tick_task = asyncio.create_task(loop())

    async def provision(self, board: Board) -> None:
        """Readies the board's controller (powered as the board is) and registers its
        advertisement and GATT app."""
        await self.lane.prepare(board)
        await self.power(board, board.present)
        await call(self.bus, board.adapter_path, "org.bluez.GattManager1", "RegisterApplication",
                   "oa{sv}", board.app_path, {})
        if board.present or self.lane.advertises_while_off:
            await self.advertise(board, True)

    async def advertise(self, board: Board, on: bool) -> None:
        if on:
            await call(self.bus, board.adapter_path, "org.bluez.LEAdvertisingManager1",
                       "RegisterAdvertisement", "oa{sv}", f"{board.app_path}/advertisement0", {})
        else:
            await call(self.bus, board.adapter_path, "org.bluez.LEAdvertisingManager1",
                       "UnregisterAdvertisement", "o", f"{board.app_path}/advertisement0")

    async def provision_all(self) -> None:
        limit = asyncio.Semaphore(16)

        async def one(board: Board) -> None:
            async with limit:
                await self.provision(board)
        await asyncio.gather(*(one(b) for b in self.boards))

    async def bluez_lost(self) -> None:
        """org.bluez went away: every link is gone."""
        for board in self.boards:
            await board.link_lost()

    async def power(self, board: Board, on: bool) -> None:
        if bool(await get_property(self.bus, board.adapter_path, "org.bluez.Adapter1", "Powered")) != on:
            await set_property(self.bus, board.adapter_path, "org.bluez.Adapter1", "Powered", "b", on)

    async def drop(self, board: Board) -> None:
        if not board.present:
            return
        await self.lane.switch_off(self, board)
        await board.link_lost()

    async def restore(self, board: Board) -> None:
        if board.present:
            return
        await board.rebooted()
        await self.lane.switch_on(self, board)

    async def reset(self, board: Board) -> None:
        """The board reboots: its link drops, it comes back advertising with the LED off."""
        was_present = board.present
        if was_present:
            await self.lane.switch_off(self, board)
        await board.rebooted()
        if was_present:
            await self.lane.switch_on(self, board)

    def set_temperature(self, board: Board, celsius: int) -> None:
        board.sensor.override = celsius
        board.temperature.value = profile.encode_celsius(celsius)
