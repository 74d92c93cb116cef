"""``BleakClientBlefleet``: bleak's client over blefleetd's ``device.*`` calls (issue 37)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from bleak.backends.characteristic import BleakGATTCharacteristic
from bleak.backends.client import BaseBleakClient, NotifyCallback
from bleak.backends.descriptor import BleakGATTDescriptor
from bleak.backends.device import BLEDevice
from bleak.backends.service import BleakGATTService, BleakGATTServiceCollection
from bleak.exc import BleakDBusError, BleakDeviceNotFoundError, BleakError
from bleak.uuids import normalize_uuid_str

from ..fleet import DaemonUnreachable, Fleet, FleetError
from ._errors import (ABORT_BY_LOCAL, NOT_HEARD, PAIRING_FAILED, TIMEOUT, BleakFleetPairingError, out_of_slots, to_bleak,
                      unreachable)
from ._errors import socket_path as _socket_path

if TYPE_CHECKING:
    from bleak.args import SizedBuffer
    from bleak.assigned_numbers import CharacteristicPropertyName

_logger = logging.getLogger(__name__)

# A call's answer is awaited this much longer than the daemon's own timeout, so that the
# daemon's -32003 (a sentence) comes first.
_MARGIN = 10.0
_CALL_TIMEOUT = 60.0
# A read or write waits as long as BlueZ lets an ATT request wait (its 30 s transaction
# timeout), not the daemon's 10 s default: a slow device answers through the fleet as it
# does through bleak's BlueZ backend.
_GATT_TIMEOUT_MS = 30_000
# The longest connect the daemon takes in one call (device.connect's timeoutMs): a longer
# timeout of bleak's is served by connects one after another until it runs out.
_CONNECT_LIMIT = 600.0

# Tasks that close a connection after the device went away, kept from the garbage collector.
_closing: set[asyncio.Task[None]] = set()

# How long a pairing may take (device.pair's timeoutMs): a passkey typed on the device by a
# person included. bleak's BlueZ backend gives Device1.Pair no limit of its own.
_PAIR_TIMEOUT = 60.0


def build_services(services: list[Mapping[str, Any]], mtu: Callable[[], int],
                   wanted: set[str] | None = None) -> BleakGATTServiceCollection:
    """bleak's service tree from the daemon's ``services`` (``device.connect``/``device.services``):
    integer handles, normalized 128-bit UUIDs, BlueZ's flag names as properties; each object's
    ``obj`` is the daemon's entry. ``wanted`` keeps only those services (bleak's ``services=``)."""
    collection = BleakGATTServiceCollection()
    for entry in services:
        uuid = normalize_uuid_str(str(entry["uuid"]))
        if wanted is not None and uuid not in wanted:
            continue
        service = BleakGATTService(entry, int(entry["handle"]), uuid)
        collection.add_service(service)
        for char_entry in entry.get("characteristics") or []:
            properties = cast("list[CharacteristicPropertyName]", [str(p) for p in char_entry.get("properties") or []])
            characteristic = BleakGATTCharacteristic(char_entry, int(char_entry["handle"]),
                                                     normalize_uuid_str(str(char_entry["uuid"])), properties,
                                                     lambda: max(mtu() - 3, 20), service)
            collection.add_characteristic(characteristic)
            for desc_entry in char_entry.get("descriptors") or []:
                collection.add_descriptor(BleakGATTDescriptor(desc_entry, int(desc_entry["handle"]),
                                                              normalize_uuid_str(str(desc_entry["uuid"])),
                                                              characteristic))
    return collection


class BleakClientBlefleet(BaseBleakClient):
    """bleak's client through blefleetd: ``BleakClient(address, backend=BleakClientBlefleet)``.

    Each client has its own connection to the daemon's socket, which holds the device's lease
    while connected: ``disconnect()``, the end of the script or a closed socket ends it. The
    socket is the keyword ``socket_path=`` (passed on by ``BleakClient``), else
    $BLEFLEET_SOCKET, else /run/blefleet/blefleetd.sock. The daemon chooses the adapter
    (``bluez={"adapter": ...}`` is ignored). ``pair()``, ``unpair()`` and ``pair=True`` are
    the daemon's ``device.pair`` and ``device.unpair``: BlueZ keeps the bond."""

    def __init__(self, address_or_ble_device: BLEDevice | str, services: set[str] | None = None, *,
                 disconnected_callback: Callable[[], None] | None, timeout: float,
                 socket_path: str | None = None, **kwargs: Any) -> None:
        super().__init__(address_or_ble_device, disconnected_callback=disconnected_callback, timeout=timeout)
        self.address = self.address.upper()
        self.socket_path = _socket_path(socket_path)
        self._requested_services = None if services is None else {normalize_uuid_str(u) for u in services}
        self._fleet: Fleet | None = None
        self._connected = False
        self._mtu: int | None = None
        self._name: str | None = None
        self._adapter: str | None = None
        self._notify_callbacks: dict[int, NotifyCallback] = {}
        self._unhook: list[Callable[[], None]] = []

    # -- the connection ------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The device's name as the daemon knows it (its address with dashes when it has none)."""
        if self._name:
            return self._name
        return self.address.replace(":", "-")

    @property
    def adapter(self) -> str | None:
        """The adapter (``hci0``) the daemon connected through, once connected."""
        return self._adapter

    @property
    def mtu_size(self) -> int:
        """The ATT MTU of the link, as ``device.connect`` answered (23 before)."""
        return self._mtu if self._mtu is not None else 23

    @property
    def is_connected(self) -> bool:
        return self._connected

    async def connect(self, pair: bool, **kwargs: Any) -> None:
        """``device.connect``: takes the device's lease on a connection of its own and builds the
        service tree from the answer. ``timeout`` (seconds, bleak's) becomes ``timeoutMs``."""
        if self._connected:
            raise BleakError("Client is already connected")
        timeout = float(kwargs.get("timeout", self._timeout))
        await self._drop_connection()
        try:
            fleet = await Fleet.connect(self.socket_path)
        except DaemonUnreachable as e:
            raise unreachable(e, self.socket_path) from None
        self._fleet = fleet
        self._unhook = [fleet.on_notification("device.value", self._on_value),
                        fleet.on_notification("device.disconnected", self._on_device_disconnected),
                        fleet.on_close(self._on_connection_end)]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            remaining = timeout
            while True:
                attempt = min(remaining, _CONNECT_LIMIT)
                params = {"address": self.address, "timeoutMs": max(int(attempt * 1000), 1)}
                try:
                    reply = await fleet.call("device.connect", params, timeout=attempt + _MARGIN)
                    break
                except FleetError as e:
                    # As bleak's BlueZ backend: a connect the controller gave up at once is
                    # tried again while the connect's time lasts; so is a connect whose one
                    # call could not be given all of it.
                    longer = e.code == TIMEOUT and attempt < remaining and not out_of_slots(e)
                    if not (ABORT_BY_LOCAL in e.message or longer) or deadline - loop.time() < 0.1:
                        raise
                    if longer:  # the daemon waited its part: the rest of the timeout is next
                        remaining -= attempt
                        continue
                    _logger.debug("retry due to %s", ABORT_BY_LOCAL)
                    await asyncio.sleep(0.1)
                    remaining = deadline - loop.time()
            self._mtu = int(reply.get("mtu") or 23)
            self._name = reply.get("name") or None
            self._adapter = reply.get("adapter")
            self.services = build_services(list(reply.get("services") or []), lambda: self.mtu_size,
                                           self._requested_services)
            self._connected = True
            if pair:  # as bleak's BlueZ backend: paired on connect unless paired already
                await self._pair(fleet, {})
        except FleetError as e:
            await self._drop_connection()
            raise to_bleak(e, self.socket_path, address=self.address, connecting=True) from None
        except BaseException:
            await self._drop_connection()
            raise
        if fleet.closed is not None:  # the connection ended while the answer was read
            self._on_connection_end(fleet.closed)

    async def disconnect(self) -> None:
        """``device.disconnect`` (the lease ends; the daemon drops the link unless someone else
        holds it), then the connection to the daemon closes. The disconnected callback is called
        (once) as with bleak's own backends."""
        fleet = self._fleet
        if fleet is None:
            return
        if self._connected and fleet.closed is None:
            try:
                await fleet.call("device.disconnect", {"address": self.address}, timeout=_CALL_TIMEOUT)
            except (FleetError, TimeoutError) as e:
                # Closing the connection ends the lease all the same.
                _logger.debug("device.disconnect of %s: %s", self.address, e)
        try:
            self._on_disconnected("disconnect() was called")
        finally:
            await self._drop_connection()

    async def pair(self, *args: Any, **kwargs: Any) -> None:
        """``device.pair``: pairs with the connected device and BlueZ keeps the bond, as bleak's
        BlueZ backend pairs (trusted, then ``Device1.Pair``; a paired device is left as it
        is). The daemon's agent accepts Just Works; ``passkey=`` (an int) is the passkey the
        device shows, entered or compared when it asks for one; a passkey to type on the device
        is logged as a warning. ``timeout=`` in seconds (default 60)."""
        fleet = self._fleet
        if fleet is None or not self._connected:
            raise BleakError("Not connected")
        try:
            await self._pair(fleet, kwargs)
        except DaemonUnreachable as e:
            if self._connected:
                raise to_bleak(e, self.socket_path, address=self.address) from None
            # The link went down in the middle of the pairing, and this connection with it
            # (its lease had no more use): BlueZ's failed Pair, as bleak's BlueZ backend has it.
            raise BleakFleetPairingError(
                f"Pairing with {self.address} failed: the device disconnected while pairing (Authentication Failed).",
                PAIRING_FAILED) from None
        except FleetError as e:
            raise to_bleak(e, self.socket_path, address=self.address) from None

    async def _pair(self, fleet: Fleet, options: Mapping[str, Any]) -> None:
        params: dict[str, Any] = {"address": self.address}
        if options.get("passkey") is not None:
            params["passkey"] = int(options["passkey"])
        timeout = float(options.get("timeout") or _PAIR_TIMEOUT)
        params["timeoutMs"] = max(int(timeout * 1000), 1)

        def shown(notification: dict[str, Any]) -> None:
            if not self._ours(notification):
                return
            kind = notification.get("kind")
            if kind == "display-passkey":
                _logger.warning("pairing with %s: type the passkey %06d on the device", self.address,
                                int(notification.get("passkey") or 0))
            elif kind == "display-pin-code":
                _logger.warning("pairing with %s: type the PIN code %s on the device", self.address,
                                notification.get("pinCode"))
            elif kind == "confirm-passkey":
                _logger.info("pairing with %s: passkey %06d accepted", self.address,
                             int(notification.get("passkey") or 0))

        unhook = fleet.on_notification("device.pairing", shown)
        try:
            reply = await fleet.call("device.pair", params, timeout=timeout + _MARGIN)
        finally:
            unhook()
        if reply.get("alreadyPaired"):
            _logger.debug("BLE device @ %s is already paired", self.address)

    async def unpair(self) -> None:
        """``device.unpair``: BlueZ forgets the device on every adapter that knows it (its
        pairing and bond go, its link drops), as bleak's BlueZ backend removes it; this client
        is disconnected. ``BleakDeviceNotFoundError`` when no adapter knows it."""
        fleet = self._fleet
        own = fleet is None or fleet.closed is not None
        try:
            if own:
                try:
                    fleet = await Fleet.connect(self.socket_path)
                except DaemonUnreachable as e:
                    raise unreachable(e, self.socket_path) from None
            assert fleet is not None
            try:
                await fleet.call("device.unpair", {"address": self.address}, timeout=_CALL_TIMEOUT)
            except FleetError as e:
                if e.code == NOT_HEARD:
                    raise BleakDeviceNotFoundError(self.address,
                                                   f"Device with address {self.address} was not found.") from None
                raise to_bleak(e, self.socket_path, address=self.address) from None
        finally:
            if own and fleet is not None:
                await fleet.close()
        # As bleak's BlueZ backend: the client is disconnected (the link went with the device).
        self._on_disconnected("unpair() was called")
        await self._drop_connection()

    # -- GATT ----------------------------------------------------------------------------

    async def _call(self, method: str, params: dict[str, Any], handle: int | None = None) -> Any:
        fleet = self._fleet
        if fleet is None or not self._connected:
            raise BleakError("Not connected")
        try:
            return await fleet.call(method, {"address": self.address, **params}, timeout=_CALL_TIMEOUT)
        except FleetError as e:
            raise to_bleak(e, self.socket_path, address=self.address, handle=handle) from None

    async def read_gatt_char(self, characteristic: BleakGATTCharacteristic, *, use_cached: bool = False,
                             **kwargs: Any) -> bytearray:
        """``device.read`` of the characteristic's handle; ``use_cached`` is the value BlueZ holds
        (the last read or notified, empty if none) without asking the device, as bleak's BlueZ
        backend answers it."""
        params: dict[str, Any] = {"handle": characteristic.handle, "timeoutMs": _GATT_TIMEOUT_MS}
        if use_cached:
            params["cached"] = True
        reply = await self._call("device.read", params, characteristic.handle)
        return bytearray.fromhex(str(reply["value"]))

    async def read_gatt_descriptor(self, descriptor: BleakGATTDescriptor, *, use_cached: bool = False,
                                   **kwargs: Any) -> bytearray:
        params: dict[str, Any] = {"handle": descriptor.handle, "descriptor": True, "timeoutMs": _GATT_TIMEOUT_MS}
        if use_cached:
            params["cached"] = True
        reply = await self._call("device.read", params)
        return bytearray.fromhex(str(reply["value"]))

    async def write_gatt_char(self, characteristic: BleakGATTCharacteristic, data: SizedBuffer,
                              response: bool) -> None:
        """``device.write``: ``response`` is ``withResponse`` (a write request, else a command)."""
        await self._call("device.write", {"handle": characteristic.handle, "value": bytes(data).hex(),
                                          "withResponse": bool(response), "timeoutMs": _GATT_TIMEOUT_MS},
                         characteristic.handle)

    async def write_gatt_descriptor(self, descriptor: BleakGATTDescriptor, data: SizedBuffer) -> None:
        await self._call("device.write", {"handle": descriptor.handle, "value": bytes(data).hex(),
                                          "descriptor": True, "timeoutMs": _GATT_TIMEOUT_MS})

    async def start_notify(self, characteristic: BleakGATTCharacteristic, callback: NotifyCallback,
                           **kwargs: Any) -> None:
        """``device.notify`` on: each ``device.value`` of the handle is given to ``callback``
        (bleak's ``bluez=``/``cb=`` arguments are ignored)."""
        handle = characteristic.handle
        if not {"notify", "indicate"} & set(characteristic.properties):
            # What BlueZ answers StartNotify on such a characteristic, as bleak raises it.
            error = BleakDBusError("org.bluez.Error.NotSupported", ["Operation is not supported"])
            error.add_note(f"characteristic {handle} of {self.address} neither notifies nor indicates")
            raise error
        self._notify_callbacks[handle] = callback
        try:
            await self._call("device.notify", {"handle": handle, "on": True}, handle)
        except BaseException:
            self._notify_callbacks.pop(handle, None)
            raise

    async def stop_notify(self, characteristic: BleakGATTCharacteristic) -> None:
        handle = characteristic.handle
        await self._call("device.notify", {"handle": handle, "on": False}, handle)
        self._notify_callbacks.pop(handle, None)

    # -- what the daemon sends -----------------------------------------------------------

    def _ours(self, params: Mapping[str, Any]) -> bool:
        return str(params.get("address", "")).upper() == self.address

    def _on_value(self, params: dict[str, Any]) -> None:
        if not self._ours(params):
            return
        try:
            callback = self._notify_callbacks.get(int(params["handle"]))
            value = bytearray.fromhex(str(params["value"]))
        except (KeyError, TypeError, ValueError):
            _logger.debug("a device.value without a handle or a hex value: %r", params)
            return
        if callback is not None:
            callback(value)

    def _on_device_disconnected(self, params: dict[str, Any]) -> None:
        if not self._ours(params):
            return
        # The link is down: this connection's lease has no more use.
        fleet = self._fleet
        if fleet is not None and self._connected:
            task = asyncio.get_running_loop().create_task(self._drop_connection(fleet))
            _closing.add(task)
            task.add_done_callback(_closing.discard)
        self._on_disconnected(str(params.get("reason") or "the device disconnected"))

    def _on_connection_end(self, reason: str) -> None:
        self._on_disconnected(f"the connection to blefleetd ended: {reason}")

    def _on_disconnected(self, reason: str) -> None:
        """Once per connection: no more connected, no services, no notifications, and the
        disconnected callback."""
        if not self._connected:
            return
        _logger.debug("%s disconnected: %s", self.address, reason)
        self._connected = False
        self.services = None
        self._notify_callbacks.clear()
        if self._disconnected_callback is not None:
            self._disconnected_callback()

    async def _drop_connection(self, fleet: Fleet | None = None) -> None:
        """Closes the connection to the daemon (``fleet``, else the current one)."""
        if fleet is None:
            fleet = self._fleet
        if fleet is None:
            return
        if fleet is self._fleet:
            for unhook in self._unhook:
                unhook()
            self._unhook = []
            self._fleet = None
        await fleet.close()
