"""``BleakAdapter.get()`` through the fleet (bleak >= 3.1 has ``BleakAdapter``)."""

from __future__ import annotations

from typing import Any

from bleak.backends.adapter import BaseBleakAdapter
from bleak.backends.device import BLEDevice

from ..fleet import DaemonUnreachable, Fleet, FleetError
from ._errors import socket_path as _socket_path
from ._errors import to_bleak, unreachable


class BleakAdapterBlefleet(BaseBleakAdapter):
    """``BleakAdapter.get()`` while installed: the daemon's adapters, all of them, or the one
    ``bluez={"adapter": "hci1"}`` names (as bleak's BlueZ backend takes one adapter).
    ``get_connected_devices`` asks the daemon's ``devices.connected``: the devices connected now
    (the fleet's links included) with their services resolved, each a ``BLEDevice`` that
    ``BleakClient`` connects to (joining the link that is up)."""

    def __init__(self, adapter: str | None, socket_path: str) -> None:
        self._adapter = adapter
        self._socket_path = socket_path

    @classmethod
    async def get(cls, *, bluez: Any = None, socket_path: str | None = None, **kwargs: Any) -> "BleakAdapterBlefleet":
        adapter = dict(bluez or {}).get("adapter")
        return cls(str(adapter) if adapter else None, _socket_path(socket_path))

    async def get_connected_devices(self, service_uuids: frozenset[str]) -> list[BLEDevice]:
        params: dict[str, Any] = {"services": sorted(service_uuids)}
        if self._adapter is not None:
            params["adapter"] = self._adapter
        try:
            fleet = await Fleet.connect(self._socket_path)
        except DaemonUnreachable as e:
            raise unreachable(e, self._socket_path) from None
        try:
            result = await fleet.call("devices.connected", params, timeout=30)
        except FleetError as e:
            raise to_bleak(e, self._socket_path) from None
        finally:
            await fleet.close()
        devices: list[BLEDevice] = []
        for entry in result.get("devices") or []:
            address = str(entry["address"]).upper()
            details = dict(entry, address=address)
            devices.append(BLEDevice(address, entry.get("name") or None, details))
        return devices
