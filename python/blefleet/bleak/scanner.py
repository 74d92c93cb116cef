"""``BleakScannerBlefleet``: bleak's scanner over blefleetd's ``devices.watch`` (issue 37)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Literal

from bleak.backends.scanner import AdvertisementData, AdvertisementDataCallback, BaseBleakScanner
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


class BleakScannerBlefleet(BaseBleakScanner):
    """bleak's scanner through blefleetd: ``BleakScanner(backend=BleakScannerBlefleet)``.

    ``start()`` opens a connection of its own to the daemon's socket (keyword ``socket_path=``,
    else $BLEFLEET_SOCKET, else /run/blefleet/blefleetd.sock) and calls ``devices.watch`` with
    the ``service_uuids`` filter; each ``device.advertisement`` is a detection. ``stop()``
    unwatches and closes it. Every adapter of the daemon scans: ``scanning_mode`` and ``bluez=``
    (adapter, filters, or_patterns) are ignored. A ``BLEDevice``'s ``details`` is the daemon's
    last advertisement of it (a dict: ``address``, ``addressType``, ``adapter``, ...)."""

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
        """``devices.watch``: the devices heard now, then each change, as detections."""
        await self.stop()
        self.seen_devices = {}
        try:
            fleet = await Fleet.connect(self.socket_path)
        except DaemonUnreachable as e:
            raise unreachable(e, self.socket_path) from None
        self._fleet = fleet
        fleet.on_notification("device.advertisement", self._on_advertisement)
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

    def _on_advertisement(self, params: dict[str, Any]) -> None:
        address = params.get("address")
        if not isinstance(address, str):
            return
        try:
            data = advertisement(params)
        except (TypeError, ValueError) as e:
            _logger.debug("an advertisement of %s the backend cannot read (%s): %r", address, e, params)
            return
        if not self.is_allowed_uuid(data.service_uuids):
            return
        device = self.create_or_update_device(address.upper(), address.upper(), data.local_name, params, data)
        self.call_detection_callbacks(device, data)
