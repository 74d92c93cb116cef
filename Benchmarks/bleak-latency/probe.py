"""The client side of Benchmarks/bleak-latency: an ordinary bleak script, run plain and, unchanged,
through `python3 -m blefleet.bleak`.

  session ADDRESS   connect, start_notify on the temperature, print "ready"; then one line per
                    notification, "n <CLOCK_MONOTONIC seconds> <value hex>", and for each line
                    "read COUNT" on stdin COUNT reads of the temperature one after the other,
                    each timed: "r {"samples_ms": [...], "errors": N}"; at the end of stdin,
                    stop_notify and disconnect

Usage: python probe.py session ADDRESS
"""
import asyncio
import json
import sys
import time

from bleak import BleakClient

TEMPERATURE = "d888a9c3-f3cc-11ed-a05b-0242ac120003"


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def reads(client: BleakClient, count: int) -> None:
    samples, errors = [], 0
    for _ in range(count):
        start = time.perf_counter()
        try:
            await client.read_gatt_char(TEMPERATURE)
        except Exception:  # noqa: BLE001
            errors += 1
            continue
        samples.append(round((time.perf_counter() - start) * 1000, 3))
    say("r " + json.dumps({"samples_ms": samples, "errors": errors}))


async def session(address: str) -> None:
    loop = asyncio.get_running_loop()
    # time.monotonic is CLOCK_MONOTONIC: one clock for every process of the machine.
    async with BleakClient(address, timeout=60) as client:
        await client.read_gatt_char(TEMPERATURE)  # the first read is not counted
        await client.start_notify(TEMPERATURE, lambda _, data: say(f"n {time.monotonic():.6f} {bytes(data).hex()}"))
        say("ready")
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            if line.startswith("read "):
                await reads(client, int(line.split()[1]))
        await client.stop_notify(TEMPERATURE)


if __name__ == "__main__":
    asyncio.run(session(sys.argv[2]))
