"""The floor under one rotation, for Benchmarks/rotation/run: on the same real-BlueZ
testbed, with no daemon, a bare client connects LIMIT boards, then rotates through the
others: drop the oldest link through the kernel's management interface (the testbed's
BLEFLEET_MGMT_SOCKET relay), connect the next board, wait until its services are
resolved, write its LED. Each rotation is timed from the drop to the write's answer. A
second series does the same with Device1.Disconnect (bluetoothd's 2 s timer) for
comparison. Prints one JSON object (medians in ms).

Usage: python floor.py COUNT [LIMIT] [ROTATIONS]   (DBUS_SYSTEM_BUS_ADDRESS and
BLEFLEET_MGMT_SOCKET from `scripts/testbed start --real`)
"""
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "testbed" / "tests"))
from dbus_fast import Variant  # noqa: E402
from support import (CENTRAL, LED_SERVICE, LED_STATUS, MGMT_OP_DISCONNECT, Client, Mgmt,  # noqa: E402
                     device_path, mgmt_address)


class Links:
    """Each device's Connected and ServicesResolved, followed from BlueZ's signals (no
    polling), so that the floor counts BlueZ's and the kernel's time, not the client's."""

    def __init__(self, client: Client):
        self.state: dict[str, dict[str, bool]] = {}
        self.changed = asyncio.Event()
        client.bus.add_message_handler(self.on_message)

    def on_message(self, m) -> bool:
        if m.member == "PropertiesChanged" and m.body and m.body[0] == "org.bluez.Device1":
            props = {k: v.value for k, v in m.body[1].items() if k in ("Connected", "ServicesResolved")}
            if props:
                self.state.setdefault(m.path, {}).update(props)
                self.changed.set()
        return False

    async def until(self, address: str, linked: bool, timeout: float = 30) -> None:
        path = device_path(address)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            state = self.state.get(path, {})
            up = state.get("ServicesResolved", False) if linked else (state.get("Connected") or state.get("ServicesResolved"))
            if bool(up) == linked:
                return
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), max(0.01, deadline - asyncio.get_running_loop().time()))


async def main(count: int, limit: int, rotations: int) -> dict:
    client = await Client.connect(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
    mgmt = await Mgmt.connect(os.environ["BLEFLEET_MGMT_SOCKET"])
    devices = {}
    await client.call(CENTRAL, "org.bluez.Adapter1", "SetDiscoveryFilter", "a{sv}",
                      [{"UUIDs": Variant("as", [LED_SERVICE]), "Transport": Variant("s", "le")}])
    await client.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")

    async def all_found():
        found = await client.devices()
        devices.update({d["Address"]: d for d in found.values()})
        return len(devices) >= count
    assert await client.wait_until(all_found, 60), f"found {len(devices)} of {count} boards"
    await client.call(CENTRAL, "org.bluez.Adapter1", "StopDiscovery")
    # The boards one series needs (the others would expire from BlueZ while unused).
    addresses = sorted(devices)[:min(count, limit + rotations)]
    links = Links(client)
    leds = {}
    linked = []
    for address in addresses:
        # Every board once, so that its GATT objects are known (BlueZ keeps them).
        assert await client.connect_device(address, timeout=30)
        leds[address] = (await client.gatt(address))[LED_STATUS]
        links.state[device_path(address)] = {"Connected": True, "ServicesResolved": True}
        linked.append(address)
        if len(linked) > limit:
            victim = linked.pop(0)
            await client.call(device_path(victim), "org.bluez.Device1", "Disconnect")
            await links.until(victim, False)
    waiting = [a for a in addresses if a not in linked]

    async def series(release) -> list[float]:
        times = []
        for _ in range(rotations):
            victim, board = linked.pop(0), waiting.pop(0)
            start = time.monotonic()
            await release(victim)
            await links.until(victim, False)
            await client.call(device_path(board), "org.bluez.Device1", "Connect", timeout=30)
            await links.until(board, True)
            await client.call(leds[board], "org.bluez.GattCharacteristic1", "WriteValue", "aya{sv}",
                              [b"\x01", {"type": Variant("s", "request")}])
            times.append(time.monotonic() - start)
            linked.append(board)
            waiting.append(victim)
        return times

    async def kernel(address: str) -> None:
        status, _ = await mgmt.command(MGMT_OP_DISCONNECT, 0, mgmt_address(address, devices[address]["AddressType"]))
        assert status == 0, f"mgmt Disconnect {address}: status {status}"

    async def bluez(address: str) -> None:
        await client.call(device_path(address), "org.bluez.Device1", "Disconnect")

    async def rediscover() -> None:
        # Boards idle for TemporaryTimeout expire from BlueZ: heard again before a series.
        await client.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")

        async def known():
            return set(waiting) <= {d["Address"] for d in (await client.devices()).values()}
        assert await client.wait_until(known, 30), "boards not heard again"
        await client.call(CENTRAL, "org.bluez.Adapter1", "StopDiscovery")

    fast = await series(kernel)
    await rediscover()
    slow = await series(bluez)
    for address in linked:
        await kernel(address)
    mgmt.close()
    client.close()

    def ms(samples):
        return round(statistics.median(samples) * 1000, 1)
    return {"boards": count, "limit": limit, "rotations": rotations,
            "kernel_rotation_ms": ms(fast), "kernel_rotation_min_ms": round(min(fast) * 1000, 1),
            "bluez_rotation_ms": ms(slow)}


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    rotations = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    print(json.dumps(asyncio.run(main(count, limit, rotations))))
