"""``BleakScannerBlefleet``: bleak's scanner over blefleetd's ``devices.watch`` (issue 37)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Literal

from bleak.backends.scanner import AdvertisementData, AdvertisementDataCallback, BaseBleakScanner
from bleak.exc import BleakError
from bleak.uuids import normalize_uuid_str

from ..fleet import DaemonUnreachable, Fleet, FleetError
from ._errors import socket_path as _socket_path
from ._errors import to_bleak, unreachable

_logger = logging.getLogger(__name__)


def _uuid(text: Any) -> str:
    try:
        return normalize_uuid_str(str(text))
    except ValueError:
        return str(text).lower()


def advertisement(params: dict[str, Any]) -> AdvertisementData:
    """bleak's ``AdvertisementData`` from a ``device.advertisement``'s params: manufacturer data by
    company id (an int) as bytes, service data by 128-bit UUID as bytes, RSSI -127 when the
    daemon has none; ``platform_data`` is ``(address, params)``."""
    manufacturer = {int(company): bytes.fromhex(str(value))
                    for company, value in (params.get("manufacturerData") or {}).items()}
    service_data = {_uuid(uuid): bytes.fromhex(str(value)) for uuid, value in (params.get("serviceData") or {}).items()}
    rssi = params.get("rssi")
    tx_power = params.get("txPower")
    return AdvertisementData(
        local_name=params.get("name") or None, manufacturer_data=manufacturer, service_data=service_data,
        service_uuids=[_uuid(u) for u in params.get("serviceUuids") or []],
        tx_power=int(tx_power) if tx_power is not None else None,
        rssi=int(rssi) if rssi is not None else -127, platform_data=(params.get("address"), params))


# The Bluetooth base UUID's tail: a UUID ending so is a 16-bit one on the air.
_BASE = "-0000-1000-8000-00805f9b34fb"


def _pattern_matches(pattern: Any, params: dict[str, Any]) -> bool:
    """Whether an advertisement holds an ``or_patterns`` entry of bleak's BlueZ backend:
    ``(start_position, ad_data_type, content)``, matched against the AD structures the
    daemon's advertisement gives (local name 0x08/0x09, 16- and 128-bit service UUID lists
    0x02/0x03/0x06/0x07, 16-bit service data 0x16, manufacturer data 0xFF, with the company
    id first, little-endian, as on the air)."""
    try:
        start, kind, content = int(pattern[0]), int(pattern[1]), bytes(pattern[2])
    except (TypeError, ValueError, IndexError):
        return False
    kind = int(getattr(kind, "value", kind))
    values: list[bytes] = []
    if kind in (0x08, 0x09) and params.get("name"):
        values.append(str(params["name"]).encode())
    elif kind in (0x02, 0x03):
        values.append(b"".join(int(u[4:8], 16).to_bytes(2, "little") for u in map(_uuid, params.get("serviceUuids") or [])
                               if u.endswith(_BASE)))
    elif kind in (0x06, 0x07):
        values.append(b"".join(bytes.fromhex(u.replace("-", ""))[::-1]
                               for u in map(_uuid, params.get("serviceUuids") or []) if not u.endswith(_BASE)))
    elif kind == 0x16:
        for uuid, value in (params.get("serviceData") or {}).items():
            full = _uuid(uuid)
            if full.endswith(_BASE):
                values.append(int(full[4:8], 16).to_bytes(2, "little") + bytes.fromhex(str(value)))
    elif kind == 0xFF:
        for company, value in (params.get("manufacturerData") or {}).items():
            values.append(int(company).to_bytes(2, "little") + bytes.fromhex(str(value)))
    return any(value[start:start + len(content)] == content for value in values)


class BleakScannerBlefleet(BaseBleakScanner):
    """bleak's scanner through blefleetd: ``BleakScanner(backend=BleakScannerBlefleet)``.

    ``start()`` opens a connection of its own to the daemon's socket (keyword ``socket_path=``,
    else $BLEFLEET_SOCKET, else /run/blefleet/blefleetd.sock) and calls ``devices.watch`` with
    the ``service_uuids`` filter; each ``device.advertisement`` is a detection. ``stop()``
    unwatches and closes it. Every adapter of the daemon scans for it, unless ``bluez=`` names
    one (``{"adapter": "hci1"}``, or bleak's ``adapter=``): then only that adapter's reports
    count, as bleak's BlueZ backend scans on that adapter alone. BlueZ's ``filters`` (UUIDs,
    RSSI, Pattern) are applied to the reports; ``scanning_mode="passive"`` takes ``or_patterns``
    as bleak's BlueZ backend does (and without them is refused in its words): the daemon's
    adapters listen for the fleet anyway, so only the reports the patterns match count. A
    ``BLEDevice``'s ``details`` is the daemon's latest advertisement of it (a dict:
    ``address``, ``addressType``, ``adapter``, ...)."""

    def __init__(self, detection_callback: AdvertisementDataCallback | None, service_uuids: list[str] | None,
                 scanning_mode: Literal["active", "passive"] = "active", *, socket_path: str | None = None,
                 **kwargs: Any) -> None:
        self._fleet: Fleet | None = None
        super().__init__(detection_callback, service_uuids)
        # bleak's own filter takes UUIDs as they were given; the daemon's advertisements have
        # them 128-bit: "180f" is "0000180f-0000-1000-8000-00805f9b34fb" on both sides here.
        if self._service_uuids is not None:
            self._service_uuids = [_uuid(u) for u in self._service_uuids]
        self.socket_path = _socket_path(socket_path)
        self._scanning_mode = scanning_mode
        bluez: dict[str, Any] = dict(kwargs.get("bluez") or {})
        self._adapter: str | None = bluez.get("adapter") or kwargs.get("adapter")
        self._or_patterns: list[Any] | None = bluez.get("or_patterns")
        filters: dict[str, Any] = dict(bluez.get("filters") or {})
        if filters.get("UUIDs"):
            uuids = [_uuid(u) for u in filters["UUIDs"]]
            self._service_uuids = sorted(set(self._service_uuids or []) | set(uuids))
        self._min_rssi: int | None = int(filters["RSSI"]) if "RSSI" in filters else None
        self._name_pattern: str | None = filters.get("Pattern") or None
        if scanning_mode == "passive" and not self._or_patterns:
            # bleak's BlueZ backend, in its words.
            raise BleakError("passive scanning mode requires bluez or_patterns")

    def register_detection_callback(self, callback: AdvertisementDataCallback | None) -> Callable[[], None]:
        """bleak's, and a callback registered while scanning is also given every device seen so
        far (soon after, in the event loop): the daemon sends a device's advertisement when it
        starts watching and then only when something changes, so a callback registered after
        ``start()`` (``BleakScanner.advertisement_data()``, ``find_device_by_address``) would
        never hear of a device that does not change."""
        before = set(self._ad_callbacks)
        remove = super().register_detection_callback(callback)
        if self._fleet is not None:
            for token in set(self._ad_callbacks) - before:
                asyncio.get_running_loop().call_soon(self._replay, token)
        return remove

    def _replay(self, token: Any) -> None:
        for device, data in list(self.seen_devices.values()):
            registered = self._ad_callbacks.get(token)
            if registered is None or self._fleet is None:
                return
            registered(device, data)

    async def start(self) -> None:
        """``devices.watch``: the devices heard in the last seconds, then each change, as
        detections; a device BlueZ drops (``device.removed``) is no longer seen."""
        await self.stop()
        self.seen_devices = {}
        try:
            fleet = await Fleet.connect(self.socket_path)
        except DaemonUnreachable as e:
            raise unreachable(e, self.socket_path) from None
        self._fleet = fleet
        fleet.on_notification("device.advertisement", self._on_advertisement)
        fleet.on_notification("device.removed", self._on_removed)
        params: dict[str, Any] = {"services": list(self._service_uuids)} if self._service_uuids else {}
        try:
            await fleet.call("devices.watch", params, timeout=60)
        except FleetError as e:
            self._fleet = None
            await fleet.close()
            raise to_bleak(e, self.socket_path) from None
        except BaseException:
            self._fleet = None
            await fleet.close()
            raise

    async def stop(self) -> None:
        """``devices.unwatch``, then the connection closes (which ends the watch all the same)."""
        fleet, self._fleet = self._fleet, None
        if fleet is None:
            return
        try:
            if fleet.closed is None:
                await fleet.call("devices.unwatch", {}, timeout=10)
        except (FleetError, TimeoutError) as e:
            _logger.debug("devices.unwatch: %s", e)
        finally:
            await fleet.close()

    def _wanted(self, params: dict[str, Any], data: AdvertisementData) -> bool:
        """Whether a report counts: the pinned adapter's, within BlueZ's filters, matching
        the or_patterns of a passive scan."""
        if self._adapter is not None and params.get("adapter") != self._adapter:
            return False
        if self._min_rssi is not None and data.rssi < self._min_rssi:
            return False
        if self._name_pattern is not None:
            name, address = str(params.get("name") or ""), str(params.get("address") or "")
            if not (name.startswith(self._name_pattern) or address.upper().startswith(self._name_pattern.upper())):
                return False
        if self._scanning_mode == "passive" and self._or_patterns:
            return any(_pattern_matches(pattern, params) for pattern in self._or_patterns)
        return True

    def _on_removed(self, params: dict[str, Any]) -> None:
        """BlueZ dropped a device: it is no longer among those seen (as bleak's BlueZ scanner
        forgets it), unless another adapter reported it last."""
        address = str(params.get("address") or "").upper()
        seen = self.seen_devices.get(address)
        if seen is None:
            return
        details = seen[0].details
        if isinstance(details, dict) and details.get("adapter") not in (None, params.get("adapter")):
            return
        del self.seen_devices[address]

    def _on_advertisement(self, params: dict[str, Any]) -> None:
        address = params.get("address")
        if not isinstance(address, str):
            return
        try:
            data = advertisement(params)
        except (TypeError, ValueError) as e:
            _logger.debug("an advertisement of %s the backend cannot read (%s): %r", address, e, params)
            return
        if not self.is_allowed_uuid(data.service_uuids) or not self._wanted(params, data):
            return
        device = self.create_or_update_device(address.upper(), address.upper(), data.local_name, params, data)
        # The latest report is the device's details (the adapter that heard it last), as
        # BlueZ's properties are the latest.
        device.details = params
        self.call_detection_callbacks(device, data)
