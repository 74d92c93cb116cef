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

from ._errors import BleakFleetError, BleakFleetGATTError
from ._install import BACKEND_ID, install, installed, uninstall
from .client import BleakClientBlefleet
from .scanner import BleakScannerBlefleet

__all__ = ["BACKEND_ID", "BleakClientBlefleet", "BleakFleetError", "BleakFleetGATTError", "BleakScannerBlefleet",
           "install", "installed", "uninstall"]
