"""Runs BlueZoo 1.0.2 on the system bus (DBUS_SYSTEM_BUS_ADDRESS) with powered central
adapters (hci0, hci1, ... one per --central), after installing the project's BlueZ fidelity
fixes (unless --stock)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys


def arrange_roles() -> None:
    """Testbed arrangement (stock or fixed): the boards are emulated as extra controllers,
    which a real gateway does not have. They report Roles ["peripheral"], so clients that
    pick "the first powered controller with the central role" (bleak, ...) pick hci0, and
    a daemon told to use `all` adapters takes only the centrals: the adapters whose address
    has the central prefix (those given with --central, and ones plugged in later)."""
    from bluezoo.adapter import Adapter

    from .profile import CENTRAL_PREFIX
    roles = Adapter.__dict__["Roles"]
    central_roles = roles.property_getter

    def getter(self):
        return central_roles(self) if str(self.address).upper().startswith(CENTRAL_PREFIX) else ["peripheral"]
    roles.property_getter = getter


def main() -> int:
    parser = argparse.ArgumentParser(prog="bluezoo_launcher")
    parser.add_argument("--central", action="append", required=True,
                        help="address of a central adapter (hci0, hci1, ... in order)")
    parser.add_argument("--scan-interval", type=float, default=1.0)
    parser.add_argument("--temporary-timeout", type=float, default=30.0)
    parser.add_argument("--connect-timeout", type=float, default=2.0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--advertise-while-connected", action="store_true")
    parser.add_argument("--stock", action="store_true", help="run BlueZoo without the fixes")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")

    from bluezoo import bluezoo as bz_main
    from bluezoo.utils import BluetoothAddress
    arrange_roles()
    if not args.stock:
        from . import fixes
        fixes.apply(fixes.Settings(temporary_timeout=args.temporary_timeout,
                                   connect_timeout=args.connect_timeout,
                                   latency=args.latency_ms / 1000.0,
                                   jitter=args.jitter_ms / 1000.0,
                                   advertise_while_connected=args.advertise_while_connected))
        logging.getLogger("blefleet.testbed.fixes").setLevel(logging.INFO)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async def run() -> None:
        await bz_main.startup(bus="system", adapters=[BluetoothAddress(a) for a in args.central],
                              auto_enable=True, scan_interval=args.scan_interval)
        if not args.stock:
            from . import fixes
            knobs = fixes.TestbedKnobs()
            knobs.export_to_dbus("/org/blefleet/testbed", bz_main.startup.bus)
        await stop.wait()

    loop.run_until_complete(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
