"""The single-client figures of Benchmarks/bleak-crowd, as an ordinary bleak script (run plain
and, unchanged, through `python3 -m blefleet.bleak`). Prints one JSON object.

  connect ADDRESS     BleakClient(ADDRESS, timeout=20).connect() of an advertising board, timed
                      (with plain bleak that includes bleak's scan for the address), then
                      disconnect() timed: {"ok", "connect_s", "disconnect_s", "error"}
  rtt ADDRESS COUNT   connect, then COUNT reads of the temperature one after the other, each
                      timed: {"ok", "samples_ms", "errors", "error"}

Usage: python probe.py connect ADDRESS | rtt ADDRESS COUNT
"""
import asyncio
import json
import sys
import time

from bleak import BleakClient

TEMPERATURE = "d888a9c3-f3cc-11ed-a05b-0242ac120003"


def failure(e: BaseException) -> dict:
    return {"type": type(e).__name__, "message": str(e)[:400]}


async def connect(address: str) -> dict:
    client = BleakClient(address, timeout=20)
    start = time.monotonic()
    try:
        await client.connect()
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "connect_s": round(time.monotonic() - start, 4), "error": failure(e)}
    connected = time.monotonic() - start
    start = time.monotonic()
    try:
        await client.disconnect()
    except Exception as e:  # noqa: BLE001
        return {"ok": True, "connect_s": round(connected, 4), "error": None, "disconnect_error": failure(e)}
    return {"ok": True, "connect_s": round(connected, 4), "disconnect_s": round(time.monotonic() - start, 4),
            "error": None}


async def rtt(address: str, count: int) -> dict:
    samples, errors = [], []
    try:
        async with BleakClient(address, timeout=20) as client:
            await client.read_gatt_char(TEMPERATURE)  # the first read is not counted
            for _ in range(count):
                start = time.monotonic()
                try:
                    await client.read_gatt_char(TEMPERATURE)
                except Exception as e:  # noqa: BLE001
                    errors.append(failure(e))
                    continue
                samples.append(round((time.monotonic() - start) * 1000, 3))
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "samples_ms": samples, "errors": errors, "error": failure(e)}
    return {"ok": not errors, "samples_ms": samples, "errors": errors, "error": None}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "connect":
        result = asyncio.run(connect(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "rtt":
        result = asyncio.run(rtt(sys.argv[2], int(sys.argv[3])))
    else:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    print(json.dumps(result), flush=True)
