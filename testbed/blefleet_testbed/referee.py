"""`scripts/testbed watch-links`: a referee of connection slots that trusts no client.

It watches the testbed's bus as a D-Bus monitor (org.freedesktop.DBus.Monitoring.BecomeMonitor):
every `Device1.Connect` call, whoever makes it, the errors that end them, and every
Device1 `Connected`/`ServicesResolved` change BlueZ announces. Per adapter it keeps the
links BlueZ shows plus the connects asked for and not yet answered, and records the most
of them at once, and the most at the moment of any `Connect` call (that call included):
a client that never calls `Connect` past a limit of N keeps the second figure <= N.

Prints `watching` once the monitor is in place (and the links already up are known), then,
on SIGTERM or SIGINT, one JSON object:
  {"connect_calls": {adapter: n}, "most_links": {adapter: n}, "most_at_connect": {adapter: n},
   "held_at_most": {adapter: {device: "link" | "connect" | "this connect"}}}
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys

from dbus_fast import Message, MessageType
from dbus_fast.aio import MessageBus

DEVICE = "org.bluez.Device1"
RULES = [
    f"type='method_call',interface='{DEVICE}',member='Connect'",
    f"type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='{DEVICE}'",
    "type='error'",
]


def adapter_of(path: str) -> str:
    return path.rsplit("/", 1)[0]


class Links:
    def __init__(self) -> None:
        self.linked: set[str] = set()
        # Devices whose link the monitor has seen change: their state is the monitor's from then
        # on, not the snapshot's (the snapshot's reply can arrive after a change made later).
        self.seen: set[str] = set()
        # (caller, serial) of each Connect not yet answered (a reply, an error, or its link) -> device path
        self.pending: dict[tuple[str, int], str] = {}
        self.connect_calls: dict[str, int] = {}
        self.most_links: dict[str, int] = {}
        self.most_at_connect: dict[str, int] = {}
        # What was held at the moment of each adapter's most_at_connect: device -> "link" or "connect"
        self.held_at_most: dict[str, dict[str, str]] = {}

    def holding(self, adapter: str) -> set[str]:
        return {p for p in self.linked | set(self.pending.values()) if adapter_of(p) == adapter}

    def note_most(self, adapter: str) -> None:
        self.most_links[adapter] = max(self.most_links.get(adapter, 0), len(self.holding(adapter)))

    def on_message(self, m: Message) -> bool:
        if m.message_type == MessageType.METHOD_CALL and m.member == "Connect" and m.interface == DEVICE:
            adapter = adapter_of(m.path)
            self.connect_calls[adapter] = self.connect_calls.get(adapter, 0) + 1
            holding = self.holding(adapter) | {m.path}
            if len(holding) > self.most_at_connect.get(adapter, 0):
                self.most_at_connect[adapter] = len(holding)
                pending = set(self.pending.values())
                self.held_at_most[adapter] = {
                    p.rsplit("/", 1)[1]: "link" if p in self.linked else "connect" if p in pending else "this connect"
                    for p in sorted(holding)}
            self.pending[(m.sender, m.serial)] = m.path
            self.note_most(adapter)
        elif m.message_type in (MessageType.ERROR, MessageType.METHOD_RETURN):
            # Answered: an error, or success (also for a device whose link was up already,
            # which shows no change of Connected; left pending, it counted as a link of its
            # own once that link went down, until the device linked again).
            self.pending.pop((m.destination, m.reply_serial), None)
        elif m.message_type == MessageType.SIGNAL and m.member == "PropertiesChanged" and m.body \
                and m.body[0] == DEVICE:
            changed = m.body[1]
            up = [changed[k].value for k in ("Connected", "ServicesResolved") if k in changed]
            if up:
                self.seen.add(m.path)
            if any(up):
                self.linked.add(m.path)
                self.pending = {k: p for k, p in self.pending.items() if p != m.path}
            elif "Connected" in changed and not changed["Connected"].value:
                self.linked.discard(m.path)
            self.note_most(adapter_of(m.path))
        # A monitor never answers a call it sees (True keeps dbus_fast from replying); the
        # rest goes on to dbus_fast (the reply to BecomeMonitor among them).
        return m.message_type == MessageType.METHOD_CALL

    def known_linked(self, path: str) -> None:
        """BlueZ listed `path` linked when asked (after the monitor was in place): a link the
        monitor has not seen change since is taken as up."""
        if path not in self.seen:
            self.linked.add(path)
            self.note_most(adapter_of(path))

    def report(self) -> dict:
        return {"connect_calls": self.connect_calls, "most_links": self.most_links,
                "most_at_connect": self.most_at_connect, "held_at_most": self.held_at_most}


async def watch(bus_address: str) -> dict:
    links = Links()
    monitor = await MessageBus(bus_address=bus_address).connect()
    monitor.add_message_handler(links.on_message)
    reply = await monitor.call(Message(
        destination="org.freedesktop.DBus", path="/org/freedesktop/DBus",
        interface="org.freedesktop.DBus.Monitoring", member="BecomeMonitor", signature="asu", body=[RULES, 0]))
    if reply.message_type == MessageType.ERROR:
        raise RuntimeError(f"the bus refused a monitor: {reply.error_name} {reply.body}")
    # The links up before the monitor: from BlueZ itself, through a second connection.
    client = await MessageBus(bus_address=bus_address).connect()
    reply = await client.call(Message(
        destination="org.bluez", path="/", interface="org.freedesktop.DBus.ObjectManager",
        member="GetManagedObjects"))
    client.disconnect()
    if reply.message_type == MessageType.ERROR:
        raise RuntimeError(f"BlueZ did not list its objects: {reply.error_name} {reply.body}")
    for path, interfaces in reply.body[0].items():
        device = interfaces.get(DEVICE)
        if device and (device.get("Connected") and device["Connected"].value
                       or device.get("ServicesResolved") and device["ServicesResolved"].value):
            links.known_linked(path)
    print("watching", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    monitor.disconnect()
    return links.report()


def run(bus_address: str) -> int:
    report = asyncio.run(watch(bus_address))
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1]))
