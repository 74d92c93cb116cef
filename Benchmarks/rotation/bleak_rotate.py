"""The peer of Benchmarks/rotation/run: a bleak script doing the same job as `blectl led on
--all` with more boards than slots, the way such a script does it: scan, then for each
board find it, connect, write its LED, disconnect (bleak's disconnect is Device1.Disconnect:
bluetoothd's 2 s timer each). Prints one JSON object.

Usage: python bleak_rotate.py COUNT   (DBUS_SYSTEM_BUS_ADDRESS points at the testbed)
"""
import asyncio
import json
import os
import sys
import time

from bleak import BleakScanner

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "real"))
from bleak_connect import connect  # noqa: E402
from bleak_peer import ADAPTER, scan, write  # noqa: E402


async def main(count: int) -> dict:
    start = time.monotonic()
    found = await scan(count)
    for address in sorted(d.address for d in found):
        device = await BleakScanner.find_device_by_address(address, timeout=30, bluez={"adapter": ADAPTER})
        client = await connect(device, ADAPTER)
        await write(client)
        await client.disconnect()
    return {"boards": count, "all_s": round(time.monotonic() - start, 2)}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 15))))
