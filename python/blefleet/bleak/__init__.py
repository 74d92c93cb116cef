"""bleak through blefleetd: unchanged bleak scripts use the fleet's adapters over the daemon's
socket instead of BlueZ's D-Bus.

    python3 -m blefleet.bleak [--socket PATH] script.py ARGS...   # plain BleakClient/BleakScanner

or, in a script, bleak's ``backend=``:

    from bleak import BleakClient, BleakScanner
    from blefleet.bleak import BleakClientBlefleet, BleakScannerBlefleet

    device = await BleakScanner.find_device_by_address(address, backend=BleakScannerBlefleet)
    async with BleakClient(device, backend=BleakClientBlefleet) as client:
        print(await client.read_gatt_char("00002a19-0000-1000-8000-00805f9b34fb"))

The socket is ``socket_path=`` (a keyword of BleakClient/BleakScanner, passed on), else
$BLEFLEET_SOCKET, else /run/blefleet/blefleetd.sock. The daemon's errors are bleak's: an ATT error
``BleakGATTProtocolError`` with its code, a timeout ``TimeoutError``, an address no adapter hears
``BleakDeviceNotFoundError``, anything else ``BleakFleetError`` (a ``BleakError``) with the daemon's
sentence. Pairing is not available.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._errors import BleakFleetError, BleakFleetGATTError, BleakFleetOutOfSlotsError, BleakFleetPairingError
    from ._install import BACKEND_ID, install, installed, uninstall
    from .client import BleakClientBlefleet
    from .scanner import BleakScannerBlefleet

__all__ = ["BACKEND_ID", "BleakClientBlefleet", "BleakFleetError", "BleakFleetGATTError", "BleakFleetOutOfSlotsError",
           "BleakFleetPairingError", "BleakScannerBlefleet", "install", "installed", "uninstall"]

_WHERE = {"BleakFleetError": "_errors", "BleakFleetGATTError": "_errors", "BleakFleetOutOfSlotsError": "_errors",
          "BleakFleetPairingError": "_errors",
          "BACKEND_ID": "_install",
          "install": "_install", "installed": "_install", "uninstall": "_install", "BleakClientBlefleet": "client",
          "BleakScannerBlefleet": "scanner"}

MISSING_BLEAK = ("blefleet.bleak needs bleak 1.0 or later for this Python: python3 -m pip install 'bleak>=1.0' "
                 "(on Debian 12, whose python3-bleak is 0.19, in a venv: python3 -m venv --system-site-packages ENV)")


def __getattr__(name: str) -> Any:
    # Loaded on first use, so that `python3 -m blefleet.bleak` can say clearly when bleak is missing.
    if name not in _WHERE:
        raise AttributeError(f"module 'blefleet.bleak' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
