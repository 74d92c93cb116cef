"""The peer of daemon_led.py: bleak in-process with every board connected, writing the LED
of 1 board vs of all boards at once (asyncio.gather): median of RUNS each. One JSON object.

Usage: python bleak_led.py COUNT [RUNS]   (DBUS_SYSTEM_BUS_ADDRESS points at the testbed)
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


async def main(count: int, runs: int) -> dict:
    found = {}
    done = asyncio.Event()

    def seen(device, advertisement):
        if LED_SERVICE in [u.lower() for u in advertisement.service_uuids]:
            found[device.address] = device
            if len(found) >= count:
                done.set()
    async with BleakScanner(seen, service_uuids=[LED_SERVICE], bluez={"adapter": "hci0"}):
        await asyncio.wait_for(done.wait(), timeout=60)
    clients = []
    for device in sorted(found.values(), key=lambda d: d.name or ""):
        clients.append(await connect(device, "hci0"))

    async def write(client, on):
        await client.write_gatt_char(LED_STATUS, b"\x01" if on else b"\x00", response=True)
    one, every = [], []
    for i in range(runs + 2):
        on = i % 2 == 0
        t = time.perf_counter()
        await write(clients[0], on)
        a = time.perf_counter() - t
        t = time.perf_counter()
        await asyncio.gather(*(write(c, on) for c in clients))
        b = time.perf_counter() - t
        if i >= 2:
            one.append(a)
            every.append(b)
    for client in clients:
        await client.disconnect()
    return {"one_ms": round(statistics.median(one) * 1000, 1),
            "all_ms": round(statistics.median(every) * 1000, 1), "boards": count}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 20))))
