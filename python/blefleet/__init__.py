"""blefleet for Python: an asyncio client of blefleetd's socket (blefleet-rpc(7)).

    async with await Fleet.connect() as fleet:
        result = await fleet.led("all", True)
        for reading in await fleet.temperatures():
            print(reading.name, reading.value, reading.unit)

``Fleet`` has the fleet's calls as methods (boards, led, switch, temperatures, sensor, history,
status, subscribe/events) and ``Fleet.call`` for any other method of the daemon's API
(``Fleet.on_notification`` for its notifications). A selection is what blectl takes: ``"all"``, a
name, an alias, an address, a glob (``"lab-*"``) or a list of them. Each call on several boards
answers with each board's result (``Outcome``).

``blefleet.bleak`` is a bleak backend through the daemon (``python3 -m blefleet.bleak SCRIPT.py``).
"""

from .fleet import (DEFAULT_SOCKET, Board, BoardResult, DaemonUnreachable, Events, Fleet, FleetError,
                    NotificationHandler, Outcome, Reading, Series)

__all__ = ["DEFAULT_SOCKET", "Board", "BoardResult", "DaemonUnreachable", "Events", "Fleet", "FleetError",
           "NotificationHandler", "Outcome", "Reading", "Series"]
