"""BlueZ fidelity fixes for BlueZoo 1.0.2.

BlueZoo is a mock of BlueZ's D-Bus API. Seven of its behaviours differ from what BlueZ
documents (doc/org.bluez.Device.rst, doc/org.bluez.Adapter.rst,
doc/org.bluez.GattCharacteristic.rst, src/main.conf) in ways a BLE client notices.
`apply()` replaces the affected BlueZoo classes with the subclasses below before BlueZoo
starts; `bluezoo_launcher --stock` skips it so tests can show each defect.

  1. Disconnect leaves ServicesResolved true and a second Connect fails (EEXIST);
     RemoveDevice leaves GATT objects behind.
  2. A board that vanishes stays Connected; Connect to an absent board "succeeds";
     a returning board gets duplicate GATT objects under new handles.
  3. Devices never expire (BlueZ removes temporary devices after TemporaryTimeout).
  4. RSSI is always 0 and never changes (BlueZ: from advertising reports while
     discovering, invalidated when discovery stops).
  5. Discovery is not a per-client session; no InProgress / "No discovery started".
  6. SetDiscoveryFilter UUIDs and Pattern are ignored.
  7. Notification sessions are not per client (second subscriber fails, one StopNotify
     stops all) and Confirm is sent for notifications as if they were indications. A
     client whose session outlived the link (BlueZ re-registers it when the device is
     back) gets InProgress for another StartNotify until then, as bluetoothd 5.66 does.
  8. A board's GATT error reaches the central verbatim; over the air it is an ATT error
     code, which the central's bluetoothd turns into its own D-Bus error.
  9. Pairing: Device1.Pair needs the default agent to be NoInputNoOutput (else it fails),
     never answers AlreadyExists or InProgress, and Bonded stays false; a characteristic
     that needs an encrypted link (encrypt-read, encrypt-write) is read and written without
     one; RemoveDevice of a device the adapter does not have succeeds (BlueZ: DoesNotExist).

Each fix is marked "Fix N" at the methods that implement it. Besides them, the knobs the
testbed controller turns through org.blefleet.Testbed1 (TestbedKnobs): the RSSI each central
hears each board with, and radio faults (`scripts/testbed fault`: connects that fail with an
HCI status or complete late, links lost with a supervision timeout).
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass
from typing import Any, Optional

import sdbus
from bluezoo import bluezoo as bz_main
from bluezoo import device as bz_device
from bluezoo import events
from bluezoo.adapter import Adapter
from bluezoo.device import Device
from bluezoo.exceptions import (DBusBluezAlreadyExistsError, DBusBluezDoesNotExistError,
                                DBusBluezFailedError, DBusBluezInProgressError,
                                DBusBluezInvalidArgumentsError, DBusBluezNotAuthorizedError,
                                DBusBluezNotPermittedError, DBusBluezNotReadyError,
                                DBusBluezNotSupportedError)
from bluezoo.gatt import (GattCharacteristicClient, GattCharacteristicClientLink,
                          GattDescriptorClient, GattDescriptorClientLink, GattServiceClient,
                          GattServiceClientLink)
from bluezoo.utils import (BluetoothUUID, NoneTask, create_background_task,
                           dbus_method_async_except_logging, dbus_property_async_except_logging)

log = logging.getLogger("blefleet.testbed.fixes")

DEVICE_IFACE = "org.bluez.Device1"
CHRC_IFACE = "org.bluez.GattCharacteristic1"

REASON_LOCAL = ("org.bluez.Reason.Local", "Connection terminated by local host")
REASON_TIMEOUT = ("org.bluez.Reason.Timeout", "Connection timed out")


@dataclass
class Settings:
    temporary_timeout: float = 30.0   # BlueZ main.conf TemporaryTimeout
    connect_timeout: float = 2.0      # how long an LE connection attempt waits for the peer
    latency: float = 0.0              # seconds added to connect and service resolution
    jitter: float = 0.0
    # A connected board stops advertising (the controller leaves the advertising state on
    # CONNECT_IND; ArduinoBLE advertises again after the disconnect). True models
    # peripherals that keep advertising while connected.
    advertise_while_connected: bool = False


SETTINGS = Settings()
_rng = random.Random(0)


async def radio_delay() -> None:
    if SETTINGS.latency > 0 or SETTINGS.jitter > 0:
        await asyncio.sleep(max(0.0, SETTINGS.latency + _rng.uniform(-SETTINGS.jitter, SETTINGS.jitter)))


def emit_changed(obj, interface: str, name: str, signature: str, value: Any) -> None:
    obj.properties_changed.emit((interface, {name: (signature, value)}, []))


class FixedDevice(Device):
    """A remote device as BlueZ's src/device.c presents it."""

    def __init__(self, peer_adapter, **kwargs):
        super().__init__(peer_adapter, **kwargs)
        self.resolve_task: asyncio.Task | NoneTask = NoneTask()
        self.expiry: Optional[asyncio.TimerHandle] = None
        self.link_reason = REASON_LOCAL
        self.links = 0  # links made so far (a testbed fault ends the one it was meant for)
        self.up_at = 0.0

    async def cleanup(self):
        """The device object goes (RemoveDevice, expiry): its GATT objects go with it."""
        self.cancel_expiry()
        self.resolve_task.cancel()
        await self._remove_services()
        await super().cleanup()

    # -- Fix 3: temporary devices expire ------------------------------------------------

    def is_temporary(self) -> bool:
        return not (self.paired or self.bonded or self.trusted)

    def cancel_expiry(self) -> None:
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None

    def arm_expiry(self) -> None:
        """Fix 3 — main.conf TemporaryTimeout: "How long to keep temporary devices around"
        (default 30 s). BlueZ restarts the timer each time the device is seen and when it
        disconnects, and removes a temporary, unconnected device when it fires."""
        self.cancel_expiry()
        if SETTINGS.temporary_timeout <= 0 or self.connected or not self.is_temporary():
            return
        adapter = self.adapter

        def fire():
            self.expiry = None
            if adapter.devices.get(self.get_object_path()) is self and not self.connected \
                    and self.connecting_task.done() and self.is_temporary():
                log.info("%s expired from %s (TemporaryTimeout)", self, adapter)
                create_background_task(adapter.del_device(self))
        self.expiry = asyncio.get_running_loop().call_later(SETTINGS.temporary_timeout, fire)

    # -- Fix 9: pairing -----------------------------------------------------------------

    async def pair(self) -> None:
        """Fix 9 — Device1.Pair as src/device.c pair_device does it: AlreadyExists when the
        device is bonded, InProgress while a pairing of it is under way, an LE device
        connected first. The testbed's boards have neither keys nor a display: Just Works,
        which needs nothing of an agent on the side that starts it. Paired and Bonded become
        true on both sides, and a paired device is no longer temporary (Fix 3)."""
        if self.paired:
            raise DBusBluezAlreadyExistsError("Already Exists")
        if not self.pairing_task.done():
            raise DBusBluezInProgressError("In Progress")

        async def task() -> None:
            if not self.connected:
                await self.connect()
            await radio_delay()
            if self.peer is not None:
                self.peer.paired = self.peer.bonded = True
            self.bonded = True  # BlueZoo's Bonded setter writes another attribute
            await self.Paired.set_async(True)
            emit_changed(self, DEVICE_IFACE, "Bonded", "b", True)
            self.cancel_expiry()
            log.info("%s paired and bonded on %s", self, self.adapter)

        self.pairing_task = asyncio.create_task(task())
        await self.pairing_task

    # -- Fix 4: RSSI from advertising reports -------------------------------------------

    def seen(self, rssi: int) -> None:
        """Fix 4 — Device1.RSSI: "Received Signal Strength Indicator of the remote device
        (inquiry or advertising)". BlueZ updates it from every advertising report while
        discovering and signals the change (PropertiesChanged)."""
        if rssi != self.rssi:
            self.rssi = rssi
            emit_changed(self, DEVICE_IFACE, "RSSI", "n", rssi)
        self.arm_expiry()

    # -- Fix 1 and 2: connections --------------------------------------------------------

    def peer_reachable(self) -> bool:
        peer = self.peer_adapter
        return (peer.powered and bool(peer.advertisements)
                and peer.mock.adapters.get(peer.id) is peer)

    async def connect(self, uuid: Optional[str] = None) -> None:
        """Fix 1 and 2 — Device1.Connect as BlueZ's dev_connect does it:
        connecting a connected LE device succeeds at once (no second set of GATT objects);
        a Connect while one is pending fails with org.bluez.Error.InProgress; on a powered
        off adapter with org.bluez.Error.NotReady; a peer that does not advertise is not
        reached and the attempt ends with org.bluez.Error.Failed
        "le-connection-abort-by-local". The reply comes once the link is up; services are
        resolved afterwards (ServicesResolved turns true later, Device.rst)."""
        if not self.adapter.powered:
            raise DBusBluezNotReadyError("Resource Not Ready")
        if self.connected:
            return
        if not self.connecting_task.done():
            raise DBusBluezInProgressError("In Progress")
        self.connecting_task = asyncio.create_task(self._establish())
        await asyncio.wait({self.connecting_task})
        if self.connecting_task.cancelled():
            raise DBusBluezFailedError("le-connection-abort-by-local")
        error = self.connecting_task.exception()
        if error is not None:
            raise error

    async def _establish(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTINGS.connect_timeout
        while not self.peer_reachable():
            if loop.time() >= deadline:
                raise DBusBluezFailedError("le-connection-abort-by-local")
            await asyncio.sleep(0.05)
        await radio_delay()
        # Testbed faults (`scripts/testbed fault slow|connect`): the connect completes late,
        # or ends with the controller's status as real BlueZ reports it.
        if slow := FAULTS.slow.get(self.peer_adapter.id):
            await asyncio.sleep(slow)
        if not self.peer_reachable():
            raise DBusBluezFailedError("le-connection-abort-by-local")
        status = FAULTS.connect_outcome(self.peer_adapter.id)
        self.cancel_expiry()
        # The central as the board sees it: reuse the board's current view, or a fresh one
        # (an object that was removed cannot be exported again).
        path = f"{self.peer_adapter.get_object_path()}/dev_{self.adapter.address.replace(':', '_')}"
        existing = self.peer_adapter.devices.get(path)
        if existing is not None:
            self.peer = existing
        else:
            self.peer = FixedDevice(self.adapter)
            await self.peer_adapter.add_device(self.peer)
        await self.peer.Connected.set_async(True)
        await self.Connected.set_async(True)
        self.resolve_task = asyncio.create_task(self._resolve())
        self.links += 1
        self.up_at = asyncio.get_running_loop().time()
        if status:
            create_background_task(self._fail_connect(status, self.links))

    async def _fail_connect(self, status: int, link: int) -> None:
        """A testbed fault: the link that just came up is lost (as on the real lane, whose
        controller reports Disconnection Complete with `status` as its reason)."""
        await asyncio.sleep(CONNECT_FAULT_LOST_AFTER)
        if link != self.links or not self.connected:
            return  # that link went already
        log.info("%s: link lost %.1f s after it came up, HCI status %#04x (testbed fault)",
                 self, CONNECT_FAULT_LOST_AFTER, status)
        await self.link_lost()

    async def _resolve(self) -> None:
        await radio_delay()
        if self.services:
            # Reconnected: BlueZ keeps a device's attribute database and its objects (same
            # paths, no duplicate), and registers its clients' notification sessions again.
            for link in self.services.values():
                if isinstance(link, FixedCharacteristicLink):
                    await link.resume_sessions()
        else:
            await self._export_services()
        await self.peer.ServicesResolved.set_async(True)
        await self.ServicesResolved.set_async(True)

    async def _export_services(self) -> None:
        mock = self.peer_adapter.mock
        for app in list(self.peer_adapter.gatt_apps.values()):
            links = {}
            for obj_path, obj in sorted(app.objects.items(), key=lambda x: x[0]):
                if isinstance(obj, GattServiceClient):
                    link = GattServiceClientLink(obj, self)
                elif isinstance(obj, GattCharacteristicClient):
                    link = FixedCharacteristicLink(obj, links[obj.Service.get()])
                elif isinstance(obj, GattDescriptorClient):
                    link = GattDescriptorClientLink(obj, links[obj.Characteristic.get()])
                else:
                    continue
                mock.export_object(link.get_object_path(), link)
                self.services[link.get_object_path()] = link
                links[obj_path] = link

    async def _remove_services(self) -> None:
        mock = self.peer_adapter.mock
        # Children first, as BlueZ removes characteristics before their service.
        for path in sorted(self.services, key=len, reverse=True):
            link = self.services.pop(path)
            if isinstance(link, FixedCharacteristicLink):
                await link.end_sessions()
            try:
                mock.remove_object(link)
            except KeyError:
                pass

    async def disconnect(self, uuid: Optional[str] = None, reason=REASON_LOCAL) -> None:
        """Fix 1 — Device1.Disconnect / link loss as BlueZ 5.66 handles them: ServicesResolved
        and Connected turn false and the device can be connected again. The remote GATT
        objects stay exported, and the clients' notification sessions stay open (BlueZ keeps
        the device's attribute database, src/gatt-client.c btd_gatt_client_disconnected,
        and registers the sessions again on reconnect); the board itself forgets its
        subscription with the link. 5.66 sends no Disconnected signal (that came later).
        A temporary device then starts its TemporaryTimeout (Fix 3)."""
        pending = not self.connecting_task.done()
        self.connecting_task.cancel()
        self.resolve_task.cancel()
        was_connected = self.connected
        for link in list(self.services.values()):
            if isinstance(link, FixedCharacteristicLink):
                await link.suspend_sessions()
        if self.services_resolved:
            await self.ServicesResolved.set_async(False)
        if self.peer is not None and self.peer.services_resolved:
            await self.peer.ServicesResolved.set_async(False)
        if self.peer is not None and self.peer.connected:
            await self.peer.Connected.set_async(False)
            self.peer.arm_expiry() if isinstance(self.peer, FixedDevice) else None
        if was_connected:
            await self.Connected.set_async(False)
            log.info("%s disconnected: %s", self, reason[0])
        if was_connected or pending:
            self.arm_expiry()

    async def link_lost(self) -> None:
        """Fix 2 — the peer vanished (powered off, rebooted, its GATT server gone): BlueZ
        learns it from the controller's supervision timeout and reports a disconnection
        with reason org.bluez.Reason.Timeout, exactly as for Disconnect."""
        if self.connected or not self.connecting_task.done():
            await self.disconnect(reason=REASON_TIMEOUT)


def att_error_code(name: str, message: str, not_permitted: int) -> int:
    """What the board's bluetoothd sends over the air for a GATT app's D-Bus error
    (src/gatt-database.c dbus_error_to_att_ecode)."""
    if name == "org.bluez.Error.Failed":
        try:
            code = int(message, 0)
        except ValueError:
            return 0x80
        return code if 0x80 <= code <= 0x9F else 0x0E
    return {"org.bluez.Error.NotSupported": 0x06, "org.bluez.Error.NotAuthorized": 0x08,
            "org.bluez.Error.InvalidValueLength": 0x0D, "org.bluez.Error.InvalidOffset": 0x07,
            "org.bluez.Error.InProgress": 0xFE, "org.bluez.Error.NotPermitted": not_permitted,
            }.get(name, 0x0E)


def central_error(code: int) -> Exception:
    """What the central's bluetoothd answers its client for an ATT error code
    (src/gatt-client.c create_gatt_dbus_error)."""
    if code == 0x02:
        return DBusBluezNotPermittedError("Read not permitted")
    if code == 0x03:
        return DBusBluezNotPermittedError("Write not permitted")
    if code in (0x05, 0x0C, 0x0F):
        return DBusBluezNotPermittedError("Not paired")
    if code == 0x07:
        return DBusBluezInvalidArgumentsError("Invalid offset")
    if code == 0x0D:
        return DBusBluezInvalidArgumentsError("Invalid Length")
    if code == 0x08:
        return DBusBluezNotAuthorizedError("Operation Not Authorized")
    if code == 0x06:
        return DBusBluezNotSupportedError("Operation is not supported")
    return DBusBluezFailedError(f"Operation failed with ATT error: 0x{code:02x}")


def over_the_air(error: sdbus.SdBusBaseError, not_permitted: int) -> Exception:
    """Fix 8 — a board's error as the central's client sees it."""
    name = getattr(error, "dbus_error_name", None) or (error.args[0] if error.args else "")
    message = str(error.args[-1]) if error.args else ""
    return central_error(att_error_code(str(name), message, not_permitted))


class FixedCharacteristicLink(GattCharacteristicClientLink):
    """A remote characteristic with BlueZ's per-client notification sessions (Fix 7) and
    its errors as they arrive over the air (Fix 8)."""

    def _link_gone(self, during: bool = False) -> Exception | None:
        """What the central's bluetoothd answers when the link is not there (real BlueZ
        5.66, fidelity check 8): a call made after the link went fails with "Not connected"
        (src/gatt-client.c); a call whose link is lost while it waits for the board's answer
        fails with ATT error 0x0e, since bluetoothd fails every pending ATT request with no
        PDU (src/shared/att.c disc_att_send_op), which its GATT client reads as "Unlikely
        Error" (src/shared/gatt-client.c process_error). No answer gets over a lost link."""
        if self.service.device.connected:
            return None
        return central_error(0x0E) if during else DBusBluezFailedError("Not connected")

    @sdbus.dbus_method_async_override()
    @dbus_method_async_except_logging
    async def ReadValue(self, options: dict[str, tuple[str, Any]]) -> bytes:
        if gone := self._link_gone():
            raise gone
        self._require_encryption("read")
        try:
            value = await self.client.ReadValue(self._GattCharacteristicClientLink__prepare_options(options))
        except sdbus.SdBusBaseError as e:
            raise (self._link_gone(during=True) or over_the_air(e, 0x02)) from None
        if gone := self._link_gone(during=True):
            raise gone
        return value

    @sdbus.dbus_method_async_override()
    @dbus_method_async_except_logging
    async def WriteValue(self, value: bytes, options: dict[str, tuple[str, Any]]) -> None:
        if gone := self._link_gone():
            raise gone
        self._require_encryption("write")
        try:
            await self.client.WriteValue(value, self._GattCharacteristicClientLink__prepare_options(options))
        except sdbus.SdBusBaseError as e:
            raise (self._link_gone(during=True) or over_the_air(e, 0x03)) from None
        if gone := self._link_gone(during=True):
            raise gone

    def _require_encryption(self, access: str) -> None:
        """Fix 9 — an attribute that needs an encrypted link (flags encrypt-read,
        encrypt-authenticated-read, secure-read, and their write kin): the board answers
        Insufficient Encryption (or Authentication) without one, and the central's bluetoothd
        turns that into "Not paired" (src/gatt-client.c create_gatt_dbus_error). The link of
        a paired device is encrypted."""
        needs = {f"encrypt-{access}", f"encrypt-authenticated-{access}", f"secure-{access}"}
        if needs & set(self._flags()) and not self.service.device.paired:
            raise DBusBluezNotPermittedError("Not paired")

    def __init__(self, client, service):
        super().__init__(client, service)
        self.notify_clients: dict[str, events.Subscription] = {}
        # The link went with sessions open: BlueZ keeps them (notify_id 0) until the device's
        # GATT client is back, and answers such a client's StartNotify InProgress meanwhile.
        self.suspended = False

    def _flags(self) -> list[str]:
        return self.client.Flags.get([]) or []

    async def _forward(self, properties: dict[str, Any]) -> None:
        if "Value" in properties and self.notify_clients:
            await self.Value.set_async(properties["Value"])
            if "indicate" in self._flags():
                # Only an indication is confirmed (GattCharacteristic1.Confirm).
                await self.client.Confirm()

    @sdbus.dbus_method_async_override()
    @dbus_method_async_except_logging
    async def StartNotify(self) -> None:
        """Fix 7 — GattCharacteristic1.StartNotify: "Starts a notification session from
        this characteristic"; sessions are per D-Bus client: a client already subscribed
        gets success, further clients share the one subscription to the device, and
        Notifying turns true with the first session."""
        sender = sdbus.get_current_message().sender
        flags = self._flags()
        if "notify" not in flags and "indicate" not in flags:
            raise DBusBluezNotSupportedError("Operation is not supported")
        if sender in self.notify_clients:
            if self.suspended:  # gatt-client.c: client->notify_id ? success : InProgress
                raise DBusBluezInProgressError("Operation already in progress")
            return
        first = not self.notify_clients

        async def on_sender_lost():
            await self._end_session(sender)
        self.notify_clients[sender] = events.subscribe(f"service:lost:{sender}", on_sender_lost, once=True)
        if first:
            self.client_props_changed_subscription = events.subscribe(
                f"properties:changed:{id(self.client)}", self._forward)
            try:
                await self.client.StartNotify()
            except sdbus.SdBusBaseError:
                self.notify_clients.pop(sender).unsubscribe()
                self.client_props_changed_subscription.unsubscribe()
                raise
            emit_changed(self, CHRC_IFACE, "Notifying", "b", True)

    @sdbus.dbus_method_async_override()
    @dbus_method_async_except_logging
    async def StopNotify(self) -> None:
        """Fix 7 — GattCharacteristic1.StopNotify: "Stops or cancel session previously
        created by StartNotify"; it ends only the caller's session ("No notify session
        started" if it has none); the subscription to the device ends with the last one."""
        sender = sdbus.get_current_message().sender
        if sender not in self.notify_clients:
            raise DBusBluezFailedError("No notify session started")
        await self._end_session(sender)

    async def _end_session(self, sender: str) -> None:
        subscription = self.notify_clients.pop(sender, None)
        if subscription is None:
            return
        subscription.unsubscribe()
        if not self.notify_clients:
            self.client_props_changed_subscription.unsubscribe()
            try:
                await self.client.StopNotify()
            except sdbus.SdBusBaseError:
                pass
            emit_changed(self, CHRC_IFACE, "Notifying", "b", False)

    async def suspend_sessions(self) -> None:
        """The link went: the board forgets its subscription; the clients' sessions stay."""
        if self.notify_clients:
            self.suspended = True
            self.client_props_changed_subscription.unsubscribe()
            try:
                await asyncio.wait_for(self.client.StopNotify(), 1.0)
            except (sdbus.SdBusBaseError, asyncio.TimeoutError):
                pass

    async def resume_sessions(self) -> None:
        """Reconnected with sessions open: subscribe on the board again."""
        self.suspended = False
        if self.notify_clients:
            self.client_props_changed_subscription = events.subscribe(
                f"properties:changed:{id(self.client)}", self._forward)
            try:
                await self.client.StartNotify()
            except sdbus.SdBusBaseError:
                log.warning("could not subscribe again to %s", self.get_object_path())

    async def end_sessions(self) -> None:
        """The object goes: every session ends; the board forgets its subscription."""
        had = bool(self.notify_clients)
        for subscription in self.notify_clients.values():
            subscription.unsubscribe()
        self.notify_clients.clear()
        self.client_props_changed_subscription.unsubscribe()
        if had:
            try:
                await asyncio.wait_for(self.client.StopNotify(), 1.0)
            except (sdbus.SdBusBaseError, asyncio.TimeoutError):
                pass

    @sdbus.dbus_property_async_override()
    @dbus_property_async_except_logging
    def Notifying(self) -> bool:
        return bool(self.notify_clients)


class FixedAdapter(Adapter):
    """A controller as BlueZ's src/adapter.c presents it."""

    def __init__(self, mock, id: int, address: str):
        self.discovery_clients: dict[str, events.Subscription] = {}
        self.discovery_filters: dict[str, dict[str, Any]] = {}
        self._powered = False
        super().__init__(mock, id, address)

    # -- power ---------------------------------------------------------------------------

    @property
    def powered(self) -> bool:
        return self._powered

    @powered.setter
    def powered(self, value: bool) -> None:
        was = self._powered
        self._powered = value
        if was and not value:
            create_background_task(self._powered_off())

    async def _powered_off(self) -> None:
        """Fix 2 and 5 — Adapter1.Powered false: every connection of this controller ends,
        its discovery sessions end, temporary devices are removed; for the boards whose
        controller this is, the peers see the link time out."""
        for client in list(self.discovery_clients):
            self.discovery_clients.pop(client).unsubscribe()
        for device in list(self.devices.values()):
            if isinstance(device, FixedDevice):
                if device.connected or not device.connecting_task.done():
                    await device.disconnect(reason=REASON_LOCAL)
        for device in list(self.devices.values()):
            if isinstance(device, FixedDevice) and not device.connected and device.is_temporary():
                await self.del_device(device)
        await self.mock.links_lost(self)

    # -- Fix 2: GATT server gone; handles reusable --------------------------------------

    async def _GattManager__del_gatt_application(self, app) -> None:
        """Fix 2 — a GATT application that goes away takes its handles with it (a board
        that registers again gets the same handles, hence the same object paths, not a
        duplicate set), and links to it drop as a vanished peer's would."""
        for obj in app.objects.values():
            self.gatt_handles.discard(obj.Handle.get())
        self.gatt_apps.pop((app.get_client(), app.get_object_path()), None)
        await app.cleanup()
        await self.update_uuids()
        await self.mock.links_lost(self)

    # -- Fix 9: RemoveDevice ------------------------------------------------------------

    @sdbus.dbus_method_async_override()
    @dbus_method_async_except_logging
    async def RemoveDevice(self, device: str) -> None:
        """Fix 9 — Adapter1.RemoveDevice: "Possible errors: org.bluez.Error.InvalidArguments,
        org.bluez.Error.Failed"; src/adapter.c answers DoesNotExist for a device it has not."""
        if device not in self.devices:
            raise DBusBluezDoesNotExistError("Does Not Exist")
        await self.del_device(self.devices[device])

    # -- Fix 3 and 4: device bookkeeping -------------------------------------------------

    async def add_device(self, device):
        await super().add_device(device)
        current = self.devices.get(device.get_object_path())
        if isinstance(current, FixedDevice):
            current.arm_expiry()

    # -- Fix 5: discovery sessions -------------------------------------------------------

    @sdbus.dbus_method_async_override()
    @dbus_method_async_except_logging
    async def StartDiscovery(self) -> None:
        """Fix 5 — Adapter1.StartDiscovery: "This process will start creating Device
        objects as new devices are discovered"; discovery is a per-client session: a client
        that already started gets org.bluez.Error.InProgress, a powered-off adapter
        org.bluez.Error.NotReady, and one scan serves every client."""
        sender = sdbus.get_current_message().sender
        if not self.powered:
            raise DBusBluezNotReadyError("Resource Not Ready")
        if sender in self.discovery_clients:
            raise DBusBluezInProgressError("Operation already in progress")

        async def on_sender_lost():
            self.discovery_filters.pop(sender, None)
            await self._end_discovery(sender)
        self.discovery_clients[sender] = events.subscribe(f"service:lost:{sender}", on_sender_lost, once=True)
        if self.discovering_task.done():
            self.discovering_task = asyncio.create_task(self._scan())
        if not self.discovering:
            await self.Discovering.set_async(True)

    @sdbus.dbus_method_async_override()
    @dbus_method_async_except_logging
    async def StopDiscovery(self) -> None:
        """Fix 5 — Adapter1.StopDiscovery: "Note that a discovery procedure is shared
        between all discovery sessions thus calling StopDiscovery will only release a
        single session"; a client without a session gets org.bluez.Error.Failed
        "No discovery started"."""
        sender = sdbus.get_current_message().sender
        if not self.powered:
            raise DBusBluezNotReadyError("Resource Not Ready")
        if sender not in self.discovery_clients:
            raise DBusBluezFailedError("No discovery started")
        await self._end_discovery(sender)

    async def _end_discovery(self, sender: str) -> None:
        subscription = self.discovery_clients.pop(sender, None)
        if subscription is not None:
            subscription.unsubscribe()
        if not self.discovery_clients:
            self.discovering_task.cancel()
            if self.discovering:
                await self.Discovering.set_async(False)
            # Fix 4 — src/adapter.c discovery_cleanup: the RSSI of the devices found is
            # invalidated when discovery stops (signalled as an invalidated property).
            for device in list(self.devices.values()):
                if isinstance(device, FixedDevice) and device.rssi:
                    device.rssi = 0
                    device.properties_changed.emit((DEVICE_IFACE, {}, ["RSSI"]))

    # -- Fix 6: discovery filters --------------------------------------------------------

    @sdbus.dbus_method_async_override()
    @dbus_method_async_except_logging
    async def SetDiscoveryFilter(self, properties: dict[str, tuple[str, Any]]) -> None:
        """Fix 6 — Adapter1.SetDiscoveryFilter: the filter belongs to the calling client;
        "UUIDs: filtered service UUIDs", "Pattern: Discover devices where the pattern
        matches either the prefix of the address or device name", RSSI threshold and
        Transport; an empty filter clears it. Devices are reported when they match the
        filter of at least one discovering client (filters of clients are merged)."""
        sender = sdbus.get_current_message().sender
        allowed = {"UUIDs", "RSSI", "Pathloss", "Transport", "DuplicateData", "Discoverable", "Pattern"}
        unknown = set(properties) - allowed
        if unknown:
            raise DBusBluezInvalidArgumentsError("Invalid arguments in method call")
        parsed: dict[str, Any] = {}
        try:
            if "UUIDs" in properties:
                parsed["uuids"] = {BluetoothUUID(u) for u in properties["UUIDs"][1]}
            if "RSSI" in properties:
                parsed["rssi"] = int(properties["RSSI"][1])
            if "Transport" in properties:
                if properties["Transport"][1] not in ("auto", "le", "bredr"):
                    raise ValueError
                parsed["transport"] = properties["Transport"][1]
            if "Pattern" in properties:
                parsed["pattern"] = str(properties["Pattern"][1])
            if "Discoverable" in properties:
                parsed["discoverable"] = bool(properties["Discoverable"][1])
        except ValueError:
            raise DBusBluezInvalidArgumentsError("Invalid arguments in method call") from None
        if parsed:
            self.discovery_filters[sender] = parsed
        else:
            self.discovery_filters.pop(sender, None)

    @staticmethod
    def _filter_matches(flt: Optional[dict], device: FixedDevice, rssi: int) -> bool:
        if not flt:
            return True
        if flt.get("transport") == "bredr":
            return False
        if flt.get("uuids") and not (flt["uuids"] & {BluetoothUUID(u) for u in device.uuids}):
            return False
        if "rssi" in flt and rssi < flt["rssi"]:
            return False
        pattern = flt.get("pattern")
        if pattern and not (device.address.upper().startswith(pattern.upper())
                            or device.name.startswith(pattern)):
            return False
        return True

    def _wanted(self, device: FixedDevice, rssi: int) -> bool:
        return any(self._filter_matches(self.discovery_filters.get(c), device, rssi)
                   for c in self.discovery_clients)

    async def _scan(self) -> None:
        """One scan serves all discovery sessions: every scan interval, every powered board
        that advertises (Discoverable) is reported, with a fresh RSSI (Fix 4), if it passes
        at least one client's filter (Fix 6); each report restarts its expiry (Fix 3)."""
        while True:
            for peer in list(self.mock.adapters.values()):
                if peer is self or not peer.powered or not peer.advertisements:
                    continue
                adv = next(iter(peer.advertisements.values()))
                if not adv.Discoverable.get(peer.discoverable):
                    continue
                device = FixedDevice(peer, is_le=True)
                device.name_ = adv.LocalName.get(peer.name)
                device.appearance = adv.Appearance.get(0)
                device.uuids = [BluetoothUUID(x) for x in adv.ServiceUUIDs.get([])]
                device.manufacturer_data = adv.ManufacturerData.get({})
                device.service_data = {BluetoothUUID(k): v for k, v in adv.ServiceData.get({}).items()}
                device.tx_power = adv.TxPower.get()
                rssi = SIGNALS.get((self.id, peer.id))
                if rssi is None:
                    rssi = -40 - (peer.id * 7) % 40 + _rng.randint(-4, 4)
                if not self._wanted(device, rssi):
                    continue
                device.rssi = rssi
                path = f"{self.get_object_path()}/dev_{device.address.replace(':', '_')}"
                existing = self.devices.get(path)
                if (isinstance(existing, FixedDevice) and existing.connected
                        and not SETTINGS.advertise_while_connected):
                    continue  # connected: the board does not advertise (BLE Core Vol 6 B 4.4.2)
                await self.add_device(device)
                if isinstance(existing, FixedDevice):
                    existing.seen(rssi if rssi != existing.rssi else rssi - 1)
            await asyncio.sleep(self.mock.scan_interval)


# -- Testbed knob: radio faults (`scripts/testbed fault`) ----------------------------------

# A connect that fails comes up and is lost this long after (the real lane's btvirt: 1 s
# after the link came up, the way Debian's kernel and bluetoothd survive a failed connect;
# Connect itself answers success there, measured, and Connected turns false with the link).
CONNECT_FAULT_LOST_AFTER = 1.0
LINK_MIN_AGE = 1.0  # no fault ends a younger link (the real lane's btvirt, knob 10)


class ConnectFault:
    """The next `count` connects fail with `status`, or (count 0) each with probability
    `rate`, from a seeded sequence."""

    def __init__(self, status: int, count: int, rate: float, seed: int):
        self.status = status
        self.count = count
        self.rate = rate
        self.rng = random.Random(seed)

    def outcome(self) -> int:
        if self.count > 0:
            self.count -= 1
            return self.status
        return self.status if self.rate > 0 and self.rng.random() < self.rate else 0

    def spent(self) -> bool:
        return self.count == 0 and self.rate == 0


class Faults:
    """The faults per board adapter id."""

    def __init__(self):
        self.connect: dict[int, ConnectFault] = {}
        self.slow: dict[int, float] = {}
        self.drops: dict[int, asyncio.Task] = {}

    def connect_outcome(self, adapter_id: int) -> int:
        fault = self.connect.get(adapter_id)
        if fault is None:
            return 0
        status = fault.outcome()
        if fault.spent():
            del self.connect[adapter_id]
        return status

    def stop_drops(self, adapter_id: int | None = None) -> None:
        for key in [adapter_id] if adapter_id is not None else list(self.drops):
            task = self.drops.pop(key, None)
            if task is not None:
                task.cancel()

    def clear(self) -> None:
        self.connect.clear()
        self.slow.clear()
        self.stop_drops()


FAULTS = Faults()


async def drop_links(adapter_id: int) -> None:
    """Every link to the board on adapter `adapter_id` is lost (supervision timeout); the
    board stays powered and advertising. As on the real lane, a link younger than a second
    is lost when it is a second old."""
    mock = bz_main.startup.service
    peer = mock.adapters.get(adapter_id)
    if peer is None:
        return
    loop = asyncio.get_running_loop()
    for adapter in list(mock.adapters.values()):
        for device in list(adapter.devices.values()) if adapter is not peer else []:
            if not isinstance(device, FixedDevice) or device.peer_adapter is not peer or not device.connected:
                continue
            young = LINK_MIN_AGE - (loop.time() - device.up_at)
            if young <= 0:
                await device.link_lost()
            else:
                link = device.links

                async def later(device=device, link=link, delay=young):
                    await asyncio.sleep(delay)
                    if device.links == link and device.connected:
                        await device.link_lost()
                create_background_task(later())


# -- Testbed knob: the signal each central hears each board with ---------------------------

# (scanner adapter id, advertiser adapter id) -> dBm; unset pairs use the default formula.
SIGNALS: dict[tuple[int, int], int] = {}


class TestbedKnobs(sdbus.DbusInterfaceCommonAsync, interface_name="org.blefleet.Testbed1"):
    """Exported by the launcher at /org/blefleet/testbed: what the testbed controller may
    change in the emulated radio."""

    @sdbus.dbus_method_async(input_signature="yyn", input_args_names=["scanner", "advertiser", "rssi"],
                             flags=sdbus.DbusUnprivilegedFlag)
    async def SetSignal(self, scanner: int, advertiser: int, rssi: int) -> None:
        """The RSSI adapter `scanner` hears adapter `advertiser` with from now on."""
        SIGNALS[(scanner, advertiser)] = rssi

    @sdbus.dbus_method_async(input_signature="yyudu",
                             input_args_names=["advertiser", "status", "count", "rate", "seed"],
                             flags=sdbus.DbusUnprivilegedFlag)
    async def FaultConnect(self, advertiser: int, status: int, count: int, rate: float, seed: int) -> None:
        """The next `count` connects to adapter `advertiser` fail with HCI `status` (count 0:
        each with probability `rate`, seeded); replaces its last; count and rate 0 end it."""
        fault = ConnectFault(status, count, rate, seed)
        if fault.spent():
            FAULTS.connect.pop(advertiser, None)
        else:
            FAULTS.connect[advertiser] = fault

    @sdbus.dbus_method_async(input_signature="y", input_args_names=["advertiser"],
                             flags=sdbus.DbusUnprivilegedFlag)
    async def FaultDrop(self, advertiser: int) -> None:
        """The links to adapter `advertiser` are lost now (supervision timeout)."""
        await drop_links(advertiser)

    @sdbus.dbus_method_async(input_signature="ydu", input_args_names=["advertiser", "seconds", "seed"],
                             flags=sdbus.DbusUnprivilegedFlag)
    async def FaultDropEvery(self, advertiser: int, seconds: float, seed: int) -> None:
        """Its links are lost at random intervals of seconds/2 … 3*seconds/2 (0: no more)."""
        FAULTS.stop_drops(advertiser)
        if seconds <= 0:
            return
        rng = random.Random(seed)

        async def again() -> None:
            while True:
                await asyncio.sleep(seconds * rng.uniform(0.5, 1.5))
                await drop_links(advertiser)
        FAULTS.drops[advertiser] = asyncio.create_task(again())

    @sdbus.dbus_method_async(input_signature="yd", input_args_names=["advertiser", "seconds"],
                             flags=sdbus.DbusUnprivilegedFlag)
    async def FaultSlow(self, advertiser: int, seconds: float) -> None:
        """Connects to adapter `advertiser` complete `seconds` later (0: no more)."""
        if seconds > 0:
            FAULTS.slow[advertiser] = seconds
        else:
            FAULTS.slow.pop(advertiser, None)

    @sdbus.dbus_method_async(flags=sdbus.DbusUnprivilegedFlag)
    async def FaultClear(self) -> None:
        FAULTS.clear()


class FixedMockService(bz_main.BluezMockService):

    async def links_lost(self, peer_adapter) -> None:
        """Fix 2: every device (on any other controller) that is a view of `peer_adapter`
        and is connected loses its link."""
        for adapter in list(self.adapters.values()):
            if adapter is peer_adapter:
                continue
            for device in list(adapter.devices.values()):
                if isinstance(device, FixedDevice) and device.peer_adapter is peer_adapter:
                    await device.link_lost()

    async def del_adapter(self, id: int):
        """Fix 2: a controller that is removed is a peer that vanished for everyone else."""
        adapter = self.adapters.get(id)
        if adapter is not None:
            await self.links_lost(adapter)
        await super().del_adapter(id)


def apply(settings: Settings) -> None:
    """Installs the fixes into BlueZoo; call before bluezoo.bluezoo.startup()."""
    SETTINGS.temporary_timeout = settings.temporary_timeout
    SETTINGS.connect_timeout = settings.connect_timeout
    SETTINGS.latency = settings.latency
    SETTINGS.jitter = settings.jitter
    SETTINGS.advertise_while_connected = settings.advertise_while_connected
    bz_main.Adapter = FixedAdapter
    bz_main.Device = FixedDevice
    bz_main.BluezMockService = FixedMockService
    bz_device.Device = FixedDevice
