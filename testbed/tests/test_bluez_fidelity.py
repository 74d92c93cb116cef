"""One check per BlueZ behaviour that stock BlueZoo 1.0.2 gets wrong.

Each check returns True when the testbed behaves as BlueZ documents. Every check runs
against the testbed with the project's fixes (must be True) and with stock BlueZoo
(`--stock-bluezoo`, must be False), which shows both the defect and the fix."""

from __future__ import annotations

import asyncio

import pytest
from dbus_fast import Variant
from support import (CENTRAL, LED_SERVICE, LED_STATUS, TEMPERATURE, BluezError, Client,
                     device_path, run)

NANO1 = "CA:FE:00:00:00:01"
NANO2 = "CA:FE:00:00:00:02"
NANO3 = "CA:FE:00:00:00:03"
HEART_RATE = "0000180d-0000-1000-8000-00805f9b34fb"


async def connected_client(tb, address=NANO1) -> Client:
    client = await Client.connect(tb.bus_address)
    assert await client.discover([address])
    assert await client.connect_device(address)
    return client


async def check_disconnect_removes_gatt_objects(tb) -> bool:
    """Device.rst Disconnect: services go away with the link; Connect works again."""
    client = await connected_client(tb)
    try:
        path = device_path(NANO1)
        await client.call(path, "org.bluez.Device1", "Disconnect")

        async def gone():
            return not await client.gatt(NANO1) and not await client.get(
                path, "org.bluez.Device1", "ServicesResolved")
        if not await client.wait_until(gone, 3):
            return False
        try:
            if not await client.connect_device(NANO1, timeout=5):
                return False
        except BluezError:
            return False
        gatt = await client.gatt(NANO1)
        return LED_STATUS in gatt and not any(k.endswith("#duplicate") for k in gatt)
    finally:
        client.close()


async def check_vanished_board_disconnects(tb) -> bool:
    """A board that powers off drops the link (Connected false, Disconnected signal);
    Connect to an absent board fails (le-connection-abort-by-local); when it returns,
    one set of GATT objects, at the same paths as before."""
    client = await connected_client(tb)
    try:
        path = device_path(NANO1)
        before = await client.gatt(NANO1)
        tb.cli("board", "drop", "nano-01")

        async def disconnected():
            return not await client.get(path, "org.bluez.Device1", "Connected")
        if not await client.wait_until(disconnected, 3):
            return False
        if not any(m.member == "Disconnected" and m.path == path for m in client.signals):
            return False
        try:
            await client.call(path, "org.bluez.Device1", "Connect", timeout=10)
            return False
        except BluezError as e:
            if e.name != "org.bluez.Error.Failed" or "le-connection-abort-by-local" not in e.text:
                return False
        tb.cli("board", "restore", "nano-01")
        if not await client.connect_device(NANO1, timeout=5):
            return False
        return await client.gatt(NANO1) == before
    finally:
        client.close()


async def check_temporary_devices_expire(tb) -> bool:
    """main.conf TemporaryTimeout (1 s here): an unconnected device no longer seen is removed."""
    client = await Client.connect(tb.bus_address)
    try:
        assert await client.discover([NANO1])

        async def removed():
            return device_path(NANO1) not in await client.devices()
        return bool(await client.wait_until(removed, 4))
    finally:
        client.close()


async def check_rssi_reported(tb) -> bool:
    """Device.rst RSSI: set from advertising reports, changes signalled on a second scan."""
    client = await Client.connect(tb.bus_address)
    try:
        assert await client.discover([NANO1])
        path = device_path(NANO1)
        if await client.get(path, "org.bluez.Device1", "RSSI") == 0:
            return False
        client.signals.clear()
        await client.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")

        async def rssi_signalled():
            return any(m.member == "PropertiesChanged" and m.path == path and "RSSI" in m.body[1]
                       for m in client.signals)
        seen = await client.wait_until(rssi_signalled, 3)
        await client.call(CENTRAL, "org.bluez.Adapter1", "StopDiscovery")
        return bool(seen)
    finally:
        client.close()


async def check_discovery_is_per_client(tb) -> bool:
    """Adapter.rst StartDiscovery/StopDiscovery: sessions per client, InProgress on a second
    start, Discovering stays on until the last session ends, "No discovery started"."""
    a = await Client.connect(tb.bus_address)
    b = await Client.connect(tb.bus_address)
    try:
        await a.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")
        try:
            await a.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")
            return False
        except BluezError as e:
            if e.name != "org.bluez.Error.InProgress":
                return False
        await b.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")
        await a.call(CENTRAL, "org.bluez.Adapter1", "StopDiscovery")
        if not await b.get(CENTRAL, "org.bluez.Adapter1", "Discovering"):
            return False
        await b.call(CENTRAL, "org.bluez.Adapter1", "StopDiscovery")
        if await b.get(CENTRAL, "org.bluez.Adapter1", "Discovering"):
            return False
        try:
            await b.call(CENTRAL, "org.bluez.Adapter1", "StopDiscovery")
            return False
        except BluezError as e:
            return e.name == "org.bluez.Error.Failed" and "No discovery started" in e.text
    finally:
        a.close()
        b.close()


async def check_discovery_filter_applies(tb) -> bool:
    """Adapter.rst SetDiscoveryFilter: UUIDs and Pattern select what is reported; filters
    of all clients are merged (a device matching any client's filter is reported)."""
    a = await Client.connect(tb.bus_address)
    b = await Client.connect(tb.bus_address)
    try:
        await a.call(CENTRAL, "org.bluez.Adapter1", "SetDiscoveryFilter", "a{sv}",
                     [{"UUIDs": Variant("as", [LED_SERVICE]), "Pattern": Variant("s", "nano-02")}])
        await b.call(CENTRAL, "org.bluez.Adapter1", "SetDiscoveryFilter", "a{sv}",
                     [{"UUIDs": Variant("as", [HEART_RATE])}])
        await b.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")
        await a.call(CENTRAL, "org.bluez.Adapter1", "StartDiscovery")

        async def known():
            return {d["Address"] for d in (await a.devices()).values()}

        async def nano2_seen():
            return NANO2 in await known()
        if not await a.wait_until(nano2_seen, 5):
            return False
        if NANO1 in await known():
            return False
        # Wait for the next advertising report of nano-02: nano-03 has been considered too.
        a.signals.clear()

        async def second_report():
            return any(m.member == "PropertiesChanged" and m.path == device_path(NANO2)
                       for m in a.signals)
        if not await a.wait_until(second_report, 3):
            return False
        return await known() == {NANO2}
    finally:
        a.close()
        b.close()


async def check_notify_sessions_per_client(tb) -> bool:
    """GattCharacteristic.rst StartNotify/StopNotify: sessions per client; a second client
    can subscribe; one client's StopNotify leaves the other's session running."""
    a = await connected_client(tb)
    b = await Client.connect(tb.bus_address)
    try:
        chrc = (await a.gatt(NANO1))[TEMPERATURE]
        await a.call(chrc, "org.bluez.GattCharacteristic1", "StartNotify")
        try:
            await b.call(chrc, "org.bluez.GattCharacteristic1", "StartNotify")
        except BluezError:
            return False
        await a.call(chrc, "org.bluez.GattCharacteristic1", "StopNotify")
        if not await b.get(chrc, "org.bluez.GattCharacteristic1", "Notifying"):
            return False
        b.signals.clear()

        async def value_notified():
            return any(m.member == "PropertiesChanged" and m.path == chrc and "Value" in m.body[1]
                       for m in b.signals)
        if not await b.wait_until(value_notified, 3):
            return False
        await b.call(chrc, "org.bluez.GattCharacteristic1", "StopNotify")
        try:
            await b.call(chrc, "org.bluez.GattCharacteristic1", "StopNotify")
            return False
        except BluezError as e:
            return e.name == "org.bluez.Error.Failed"
    finally:
        a.close()
        b.close()


CHECKS = {
    "1-disconnect-removes-gatt-objects": (check_disconnect_removes_gatt_objects, []),
    "2-vanished-board-disconnects": (check_vanished_board_disconnects, []),
    "3-temporary-devices-expire": (check_temporary_devices_expire, ["--temporary-timeout", "1"]),
    "4-rssi-reported": (check_rssi_reported, []),
    "5-discovery-per-client": (check_discovery_is_per_client, []),
    "6-discovery-filter": (check_discovery_filter_applies, []),
    "7-notify-sessions-per-client": (check_notify_sessions_per_client, ["--notify-interval", "0.2"]),
}


@pytest.mark.parametrize("bluezoo", ["fixed", "stock"])
@pytest.mark.parametrize("behaviour", list(CHECKS))
def test_bluez_behaviour(make_testbed, behaviour, bluezoo):
    check, options = CHECKS[behaviour]
    extra = ["--stock-bluezoo"] if bluezoo == "stock" else []
    tb = make_testbed("--boards", "3", "--connect-timeout", "1", *options, *extra)
    result = run(check(tb))
    if bluezoo == "fixed":
        assert result is True, f"{behaviour}: the testbed does not behave as BlueZ"
    else:
        assert result is False, f"{behaviour}: stock BlueZoo unexpectedly behaves as BlueZ (check cannot fail?)"
