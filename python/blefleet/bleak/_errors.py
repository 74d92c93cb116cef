"""The daemon's answers as bleak's own exceptions, so that a script's ``except`` clauses written
for bleak catch what went wrong through the fleet too."""

from __future__ import annotations

import os
from typing import Any

import bleak.exc
from bleak.exc import BleakCharacteristicNotFoundError, BleakDBusError, BleakDeviceNotFoundError, BleakError

from ..fleet import DEFAULT_SOCKET, DaemonUnreachable, FleetError

# The daemon's stable JSON-RPC codes (blefleet-rpc(7)) this backend tells apart.
PERMISSION_DENIED = -32000
NOT_HEARD = -32001
ADAPTER_UNAVAILABLE = -32002
TIMEOUT = -32003
BUSY = -32004
BLUEZ_UNAVAILABLE = -32005
NOT_CONNECTED = -32006
GATT_ERROR = -32007
CHARACTERISTIC_NOT_FOUND = -32008
LIMIT_REACHED = -32012
PAIRING_FAILED = -32013


class BleakFleetError(BleakError):
    """A call of blefleetd failed: the daemon's sentence (``str()`` of the exception and
    ``message``), its JSON-RPC ``code``, the ``method`` called and the error's ``data``."""

    def __init__(self, message: str, code: int | None = None, method: str | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.method = method
        self.data = data


class BleakFleetGATTError(BleakFleetError):
    """The device answered with an ATT error, with bleak older than 3.0 (which has no
    ``BleakGATTProtocolError``): ``att_error`` (and ``code``) is the ATT error code."""

    def __init__(self, att_error: int, message: str, method: str | None = None) -> None:
        super().__init__(f"GATT protocol error 0x{att_error:02x}: {message}", att_error, method,
                         {"attError": att_error})
        self.att_error = att_error


class BleakFleetNotAvailableError(BleakFleetError, NotImplementedError):
    """What blefleetd does not do for a script (pairing, unpairing): a ``BleakError``, so that
    ``except BleakError`` catches it as it catches bleak's own failures, and a
    ``NotImplementedError``, as bleak's backends say an operation they do not have."""


class BleakFleetOutOfSlotsError(BleakFleetError):
    """A connect found no connection slot: every slot of the adapters that hear the device in
    use (or leased) until the deadline, or the connects queued there not done by then. Its
    sentence says "connection slot", the phrase bleak-retry-connector reads as out of slots
    (it backs off and tries again, as for a proxy that is full)."""


# bleak >= 3.0 has its own exception for the device's ATT errors; older ones do not.
_PROTOCOL_ERROR: Any = getattr(bleak.exc, "BleakGATTProtocolError", None)
# bleak >= 2.0 says when Bluetooth is not available (no adapter, powered off, BlueZ away).
_NOT_AVAILABLE: Any = getattr(bleak.exc, "BleakBluetoothNotAvailableError", None)
_NOT_AVAILABLE_REASON: Any = getattr(bleak.exc, "BleakBluetoothNotAvailableReason", None)

# BlueZ's reasons for a failed Pair, as the daemon's sentence names them (its words in
# parentheses) -> the D-Bus error bleak's BlueZ backend raises for each.
_PAIRING_REASONS = {"authentication canceled": "AuthenticationCanceled", "authentication rejected": "AuthenticationRejected",
                    "authentication timeout": "AuthenticationTimeout", "connection attempt failed": "ConnectionAttemptFailed"}


class BleakFleetPairingError(BleakDBusError):
    """A pairing that failed (the daemon's -32013), as bleak's BlueZ backend raises it: a
    ``BleakDBusError`` with BlueZ's error (``org.bluez.Error.AuthenticationFailed``, or
    ``...Canceled``/``Rejected``/``Timeout`` when that was the reason), the daemon's sentence as
    its body and its ``code``."""

    def __init__(self, message: str, code: int) -> None:
        reason = next((name for words, name in _PAIRING_REASONS.items() if words in message.lower()), "AuthenticationFailed")
        super().__init__(f"org.bluez.Error.{reason}", [message])
        self.code = code


# What the daemon's sentences say when a connect found no slot (blefleet-rpc(7)).
_OUT_OF_SLOTS = ("connection slot", "its turn to connect")
# BlueZ's reason for a connect the controller gave up at once, which bleak's BlueZ backend
# retries within the connect's timeout (the link is often made on the next try).
ABORT_BY_LOCAL = "le-connection-abort-by-local"


def out_of_slots(error: FleetError) -> bool:
    """Whether a connect failed for want of a connection slot: none came free in time, or the
    user already holds as many devices as one user may (leases-per-user), the proxy's slots
    for that user."""
    if error.code == LIMIT_REACHED:
        return True
    return error.code in (TIMEOUT, BUSY) and any(phrase in error.message for phrase in _OUT_OF_SLOTS)


def not_available(error: FleetError) -> BaseException | None:
    """Bluetooth not available (an adapter off or gone, BlueZ not running) as bleak >= 2.0 says
    it, with bleak's reason; ``None`` when bleak has no such exception or it is not that."""
    if _NOT_AVAILABLE is None or error.code not in (ADAPTER_UNAVAILABLE, BLUEZ_UNAVAILABLE):
        return None
    text = error.message.lower()
    if error.code == ADAPTER_UNAVAILABLE and ("off" in text or "powered" in text):
        reason = _NOT_AVAILABLE_REASON.POWERED_OFF
    elif error.code == ADAPTER_UNAVAILABLE:
        reason = _NOT_AVAILABLE_REASON.NO_BLUETOOTH
    else:
        reason = _NOT_AVAILABLE_REASON.UNKNOWN
    exception: BaseException = _NOT_AVAILABLE(error.message, reason)
    return exception


def socket_path(explicit: str | None = None) -> str:
    """The daemon's socket: ``explicit``, else $BLEFLEET_SOCKET, else ``DEFAULT_SOCKET``."""
    return explicit or os.environ.get("BLEFLEET_SOCKET") or DEFAULT_SOCKET


def unreachable(error: DaemonUnreachable, path: str) -> BleakFleetError:
    """The daemon could not be reached (or the connection ended): what to do about it."""
    return BleakFleetError(
        f"blefleetd cannot be reached at {path} ({error.message}); start blefleetd, or give its socket "
        "with BLEFLEET_SOCKET=PATH, python3 -m blefleet.bleak --socket PATH, or socket_path=PATH",
        error.code, error.method)


def to_bleak(error: FleetError, path: str, *, address: str | None = None, handle: int | None = None,
             connecting: bool = False) -> BaseException:
    """The bleak exception for a failed call: an ATT error is ``BleakGATTProtocolError`` with its
    code (``BleakFleetGATTError`` before bleak 3.0), a connect that found no connection slot
    ``BleakFleetOutOfSlotsError`` (a ``BleakError`` saying "connection slot", as the retry
    libraries expect), another timeout ``TimeoutError``, an adapter off or gone or BlueZ away
    ``BleakBluetoothNotAvailableError`` (bleak >= 2.0), an address no adapter hears (on
    connect) ``BleakDeviceNotFoundError``, an unknown handle ``BleakCharacteristicNotFoundError``;
    anything else ``BleakFleetError`` (a ``BleakError``) with the daemon's sentence as it came."""
    if isinstance(error, DaemonUnreachable):
        return unreachable(error, path)
    exception: BaseException
    if connecting and out_of_slots(error):
        message = error.message
        if error.code == LIMIT_REACHED:
            message = f"{message.rstrip('.')}: no connection slot for this user until one of its devices is disconnected."
        elif "connection slot" not in message:  # its turn in the queue: no slot came to it either
            message = f"{message.rstrip('.')}: no connection slot came free for it in time."
        return BleakFleetOutOfSlotsError(message, error.code, error.method, error.data)
    if (unavailable := not_available(error)) is not None:
        return unavailable
    if error.code == PAIRING_FAILED:
        return BleakFleetPairingError(error.message, error.code)
    if error.code == GATT_ERROR and isinstance(error.data, dict) and isinstance(error.data.get("attError"), int):
        code = error.data["attError"]
        if _PROTOCOL_ERROR is None:
            return BleakFleetGATTError(code, error.message, error.method)
        exception = _PROTOCOL_ERROR(code)
        exception.add_note(f"blefleetd: {error.message}")
    elif error.code == TIMEOUT:
        exception = TimeoutError(error.message)
    elif error.code == NOT_HEARD and connecting and address is not None:
        exception = BleakDeviceNotFoundError(address, error.message)
    elif error.code == CHARACTERISTIC_NOT_FOUND and handle is not None:
        exception = BleakCharacteristicNotFoundError(handle)
        exception.add_note(f"blefleetd: {error.message}")
    else:
        exception = BleakFleetError(error.message, error.code, error.method, error.data)
    return exception
