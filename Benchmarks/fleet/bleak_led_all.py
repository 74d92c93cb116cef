"""One-shot bleak script doing what `blectl led on --all` does without a daemon: find every board advertising
the LED service on the central adapter, connect to all of them at once, write 0x01 to
LedStatus (with response), disconnect. The peer in Benchmarks/fleet/run (same testbed, same run).

Usage: python bleak_led_all.py COUNT   (DBUS_SYSTEM_BUS_ADDRESS points at the testbed)
"""
import asyncio
import sys

from bleak import BleakClient, BleakScanner

LED_SERVICE = "cd48409a-f3cc-11ed-a05b-0242ac120003"
LED_STATUS = "cd48409b-f3cc-11ed-a05b-0242ac120003"
ADAPTER = "hci0"


async def main(count: int) -> int:
    found = {}
    done = asyncio.Event()

    def seen(device, advertisement):
        if LED_SERVICE in [u.lower() for u in advertisement.service_uuids]:
            found[device.address] = device
            if len(found) >= count:
                done.set()

    async with BleakScanner(seen, service_uuids=[LED_SERVICE], bluez={"adapter": ADAPTER}):
        await asyncio.wait_for(done.wait(), timeout=20)

    async def switch(device):
        async with BleakClient(device, bluez={"adapter": ADAPTER}) as client:
            await client.write_gatt_char(LED_STATUS, b"\x01", response=True)

    results = await asyncio.gather(*(switch(d) for d in found.values()), return_exceptions=True)
    failed = [r for r in results if isinstance(r, Exception)]
    for error in failed:
        print(f"failed: {error!r}", file=sys.stderr)
    print(f"{len(results) - len(failed)}/{len(results)} boards on")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)))
