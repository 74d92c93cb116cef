"""``BleakAdapter.get()`` through the fleet (bleak >= 3.1 has ``BleakAdapter``)."""

from __future__ import annotations

from typing import Any

from bleak.backends.adapter import BaseBleakAdapter


class BleakAdapterBlefleet(BaseBleakAdapter):
    """``BleakAdapter.get()`` while installed: blefleetd owns the adapters, so there is none to
    hand out; it raises ``NotImplementedError`` (as bleak's backends without adapters do)."""

    @classmethod
    async def get(cls, **kwargs: Any) -> "BleakAdapterBlefleet":
        raise NotImplementedError("blefleetd owns the adapters: BleakAdapter is not available through the fleet; "
                                  "use BleakScanner to find devices")
