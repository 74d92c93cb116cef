"""One member of the crowd (Benchmarks/bleak-crowd): an ordinary bleak script that cycles on
one board: connect, read the temperature, write the LED (on and off in turn, with response),
disconnect. The same file runs with plain bleak (BlueZ's D-Bus) and, unchanged, through the
fleet (`python3 -m blefleet.bleak cycle.py ...`).

Each cycle is bounded by asyncio.wait_for(45 s): past it the cycle counts as hung. After a
cycle that did not complete the script waits 1 s before the next (as a careful script backs
off). One JSON line per cycle goes to OUT (appended):
  {"cycle", "start" (s since the script's start), "wall" (epoch), "duration" (s),
   "outcome": "ok" | "failed" | "hung", "error": {"type", "message"} | null, "value"}
and "cycle N connecting" to stdout as each cycle starts.

Usage: python cycle.py ADDRESS OUT [--seconds S] [--cycles N] [--start-at EPOCH]
"""
import argparse
import asyncio
import json
import time

from bleak import BleakClient

TEMPERATURE = "d888a9c3-f3cc-11ed-a05b-0242ac120003"
LED = "cd48409b-f3cc-11ed-a05b-0242ac120003"
HANG = 45.0


async def cycle(address: str, on: bool) -> str:
    async with BleakClient(address, timeout=20) as client:
        value = await client.read_gatt_char(TEMPERATURE)
        await client.write_gatt_char(LED, b"\x01" if on else b"\x00", response=True)
    return value.hex()


async def guarded(address: str, on: bool):
    """The cycle's value and None, or None and what it raised (so that a TimeoutError of the
    wait_for around it is the hang, and nothing else)."""
    try:
        return await cycle(address, on), None
    except Exception as e:  # noqa: BLE001 - every failure is a figure
        return None, e


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("address")
    parser.add_argument("out")
    parser.add_argument("--seconds", type=float, default=90)
    parser.add_argument("--cycles", type=int, default=0, help="at most this many cycles (0: no limit)")
    parser.add_argument("--start-at", type=float, default=0, help="start the first cycle at this epoch time")
    args = parser.parse_args()
    if args.start_at:
        await asyncio.sleep(max(0.0, args.start_at - time.time()))
    began = time.monotonic()
    count = 0
    with open(args.out, "a") as out:
        while time.monotonic() - began < args.seconds and (not args.cycles or count < args.cycles):
            start = time.monotonic()
            wall = time.time()
            print(f"cycle {count} connecting", flush=True)
            try:
                value, error = await asyncio.wait_for(guarded(args.address, count % 2 == 0), HANG)
                outcome = "ok" if error is None else "failed"
            except asyncio.TimeoutError:
                value, error, outcome = None, None, "hung"
            record = {"cycle": count, "start": round(start - began, 3), "wall": round(wall, 3),
                      "duration": round(time.monotonic() - start, 3), "outcome": outcome, "value": value,
                      "error": None if error is None else {"type": type(error).__name__, "message": str(error)[:400]}}
            out.write(json.dumps(record) + "\n")
            out.flush()
            count += 1
            if outcome != "ok":
                await asyncio.sleep(1)


if __name__ == "__main__":
    asyncio.run(main())
