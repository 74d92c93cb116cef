"""Making bleak's plain ``BleakClient(...)``/``BleakScanner(...)`` (no ``backend=``) use blefleetd.

bleak has no switch for it: ``BleakClient.__init__`` and ``BleakScanner.__init__`` (and, from bleak
3.1, ``BleakAdapter.get``) look up the module globals ``bleak.get_platform_client_backend_type``,
``bleak.get_platform_scanner_backend_type`` (and ``bleak.get_platform_adapter_backend_type``) each
time they pick the platform's backend; those, and the originals in
``bleak.backends.{client,scanner,adapter}`` (for code that imports them from there), are replaced."""

from __future__ import annotations

import errno
import importlib
import os
from typing import Any

import bleak
import bleak.backends

from .client import BleakClientBlefleet
from .scanner import BleakScannerBlefleet

BACKEND_ID = "blefleet"
"""``backend_id`` of a ``BleakClient``/``BleakScanner`` made while installed (bleak >= 2.0)."""

# bleak >= 2.0 wants (backend type, backend id) from these functions; 1.x the type alone.
_WITH_ID = hasattr(bleak.backends, "BleakBackend")


def _answer(backend: type) -> Any:
    return (backend, BACKEND_ID) if _WITH_ID else backend


def _client_backend() -> Any:
    return _answer(BleakClientBlefleet)


def _scanner_backend() -> Any:
    return _answer(BleakScannerBlefleet)


def _adapter_backend() -> Any:
    from ._adapter import BleakAdapterBlefleet
    return _answer(BleakAdapterBlefleet)


async def _no_bluez_manager() -> Any:
    """bleak's own BlueZ manager while installed: blefleetd owns the adapters, so a library that
    goes to BlueZ's D-Bus objects beside bleak (bleak-retry-connector's BlueZ helpers: stale
    links, services cache, waiting for a disconnect) is told there is no BlueZ here, as on a
    machine without it, and leaves the fleet's devices alone."""
    raise FileNotFoundError(errno.ENOENT, "blefleetd owns the adapters: BlueZ is not used directly through the fleet",
                            "/run/dbus/system_bus_socket")


# (module holding the function, the function's name, its replacement)
_PATCHES: list[tuple[str, str, Any]] = [
    ("bleak", "get_platform_client_backend_type", _client_backend),
    ("bleak.backends.client", "get_platform_client_backend_type", _client_backend),
    ("bleak", "get_platform_scanner_backend_type", _scanner_backend),
    ("bleak.backends.scanner", "get_platform_scanner_backend_type", _scanner_backend),
    ("bleak", "get_platform_adapter_backend_type", _adapter_backend),
    ("bleak.backends.adapter", "get_platform_adapter_backend_type", _adapter_backend),
    ("bleak.backends.bluezdbus.manager", "get_global_bluez_manager", _no_bluez_manager),
]
_originals: dict[tuple[str, str], Any] = {}


def install(socket_path: str | None = None) -> None:
    """From now on in this process, ``BleakClient(...)`` and ``BleakScanner(...)`` without
    ``backend=`` go through blefleetd (``python3 -m blefleet.bleak`` calls this before the
    script). ``socket_path`` sets $BLEFLEET_SOCKET (for this process and its children)."""
    if socket_path is not None:
        os.environ["BLEFLEET_SOCKET"] = socket_path
    for module_name, name, replacement in _PATCHES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # bleak.backends.adapter is bleak >= 3.1; bluezdbus needs dbus-fast
            continue
        if not hasattr(module, name):
            continue
        key = (module_name, name)
        if key not in _originals:
            _originals[key] = getattr(module, name)
        setattr(module, name, replacement)


def uninstall() -> None:
    """Gives bleak its own platform backends back."""
    for (module_name, name), original in list(_originals.items()):
        setattr(importlib.import_module(module_name), name, original)
        del _originals[(module_name, name)]


def installed() -> bool:
    """Whether plain ``BleakClient``/``BleakScanner`` go through blefleetd now."""
    return bool(getattr(bleak, "get_platform_client_backend_type", None) is _client_backend)
