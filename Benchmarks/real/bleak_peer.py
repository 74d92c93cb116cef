"""The peer of Benchmarks/real/run: bleak (PyPI) doing the same jobs as blefleetd + blectl on
the same real-BlueZ testbed, in the same run. Prints one JSON object.

  ready_s        scan, then connect every board (one at a time: parallel connects on one
                 controller are fragile on real BlueZ, and a careful script avoids them)
  one_ms, all_ms with every board connected, in-process: write the LED of 1 board, of all
                 boards at once (median of RUNS)
  cold_s         one-shot, nothing connected: scan, then for every board find it again,
                 connect, write, disconnect

Usage: python bleak_peer.py COUNT [RUNS]   (DBUS_SYSTEM_BUS_ADDRESS points at the testbed)
"""
import asyncio
import json
import statistics
import sys
import time

import os

from bleak import BleakScanner

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bleak_connect import connect  # noqa: E402

LED_SERVICE = "cd48409a-f3cc-11ed-a05b-0242ac120003"
LED_STATUS = "cd48409b-f3cc-11ed-a05b-0242ac120003"
ADAPTER = "hci0"


async def scan(count: int) -> list:
    found = {}
    done = asyncio.Event()

    def seen(device, advertisement):
        if LED_SERVICE in [u.lower() for u in advertisement.service_uuids]:
            found[device.address] = device
            if len(found) >= count:
                done.set()
    async with BleakScanner(seen, service_uuids=[LED_SERVICE], bluez={"adapter": ADAPTER}):
        await asyncio.wait_for(done.wait(), timeout=60)
    return list(found.values())


async def write(client) -> None:
    await client.write_gatt_char(LED_STATUS, b"\x01", response=True)


async def main(count: int, runs: int) -> dict:
    start = time.monotonic()
    devices = await scan(count)
    clients = []
    for device in devices:
        clients.append(await connect(device, ADAPTER))
    ready = time.monotonic() - start

    def ms(samples):
        return round(statistics.median(samples) * 1000, 1)
    one, every = [], []
    for _ in range(runs):
        t = time.monotonic()
        await write(clients[0])
        one.append(time.monotonic() - t)
        t = time.monotonic()
        await asyncio.gather(*(write(c) for c in clients))
        every.append(time.monotonic() - t)
    for client in clients:
        await client.disconnect()

    start = time.monotonic()
    devices = await scan(count)
    for address in [d.address for d in devices]:
        # A device not connected expires from BlueZ (TemporaryTimeout) while the others
        # are done: found again just before it is connected, as a script must.
        device = await BleakScanner.find_device_by_address(address, timeout=30, bluez={"adapter": ADAPTER})
        client = await connect(device, ADAPTER)
        await write(client)
        await client.disconnect()
    cold = time.monotonic() - start
    return {"boards": count, "ready_s": round(ready, 2), "one_ms": ms(one), "all_ms": ms(every),
            "cold_s": round(cold, 2)}


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    print(json.dumps(asyncio.run(main(count, runs))))
