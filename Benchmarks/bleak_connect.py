"""How the benchmarks' bleak peers connect: as a careful script must on real BlueZ.

bluetoothd 5.66 sometimes marks a fresh link up with ServicesResolved but never Connected
(its ATT channel is up before the kernel reports the connection); bleak takes that for a
disconnect and then refuses the device as "already connected". Such an attempt is undone
with Device1.Disconnect and tried again, at most three times.
"""
import asyncio

from bleak import BleakClient
from bleak.exc import BleakError
from dbus_fast import BusType, Message
from dbus_fast.aio import MessageBus


async def _disconnect(adapter: str, address: str) -> None:
    bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
    try:
        path = f"/org/bluez/{adapter}/dev_{address.replace(':', '_')}"
        await bus.call(Message(destination="org.bluez", path=path, interface="org.bluez.Device1",
                               member="Disconnect"))
    finally:
        bus.disconnect()


async def connect(device, adapter: str = "hci0", attempts: int = 3) -> BleakClient:
    for attempt in range(attempts):
        client = BleakClient(device, bluez={"adapter": adapter}, timeout=30)
        try:
            await client.connect()
            return client
        except BleakError:
            if attempt == attempts - 1:
                raise
            await _disconnect(adapter, device.address)
            await asyncio.sleep(0)
    raise AssertionError("unreachable")
