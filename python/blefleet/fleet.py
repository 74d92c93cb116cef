"""The fleet over blefleetd's socket: one connection, JSON-RPC 2.0 a line each way
(blefleet-rpc(7)), calls answered by id, event notifications handed to whoever follows them."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Union

DEFAULT_SOCKET = "/run/blefleet/blefleetd.sock"
"""Where blefleetd listens unless told otherwise ($BLEFLEET_SOCKET overrides it here as for blectl)."""

Selection = Union[str, Sequence[str]]
"""Which boards: ``"all"``, a name, an alias, an address, a glob (``"lab-*"``), or a list of them."""

NotificationHandler = Callable[[dict[str, Any]], None]
"""Called with a notification's params (``Fleet.on_notification``)."""

# A frame longer than the daemon takes ends the connection; a reply may be long (a day of history).
_LINE_LIMIT = 64 << 20

_logger = logging.getLogger(__name__)


class FleetError(Exception):
    """The daemon answered a call with an error: its stable JSON-RPC ``code`` (-32000 permission
    denied, -32001 no board matched, -32004 busy, ...; blefleet-rpc(7)) and its sentence."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{method}: {message} (JSON-RPC error {code})")
        self.method = method
        self.code = code
        self.message = message
        self.data = data


class DaemonUnreachable(FleetError):
    """The daemon's socket could not be reached, or the connection ended."""

    def __init__(self, message: str) -> None:
        super().__init__("connect", -32603, message)


@dataclass(frozen=True)
class BoardResult:
    """One board's part in a call on a selection."""

    name: str | None
    address: str
    ok: bool
    latency_ms: int | None = None
    #: The board's error when not ok: its stable code (``absent``, ``timeout``, ...) and sentence.
    error_code: str | None = None
    error: str | None = None
    #: Whether trying again later may work.
    retryable: bool | None = None
    #: A reading's value (temperature.read, sensor.read), and its unit and age.
    value: float | None = None
    unit: str | None = None
    age_ms: int | None = None
    #: The decimals its profile's scale gives the value (2 at scale 0.01: ``f"{r.value:.{r.decimals}f}"``
    #: writes 41.20); None for a float sensor.
    decimals: int | None = None
    #: The call left the board pending (its LED is written when it comes back).
    pending: bool = False

    @staticmethod
    def from_wire(entry: Mapping[str, Any]) -> "BoardResult":
        error = entry.get("error") or {}
        value = entry.get("value", entry.get("celsius"))
        return BoardResult(
            name=entry.get("name"), address=entry["address"], ok=bool(entry.get("ok")),
            latency_ms=entry.get("latencyMs"), error_code=error.get("code"), error=error.get("message"),
            retryable=error.get("retryable"), value=value, unit=entry.get("unit", "°C" if "celsius" in entry else None),
            age_ms=entry.get("ageMs"), decimals=entry.get("decimals"), pending=bool(entry.get("pending", False)))


@dataclass(frozen=True)
class Outcome:
    """A call on several boards: each board's result, in the daemon's order."""

    results: list[BoardResult]
    #: Selectors that matched no board.
    unmatched: list[str] = field(default_factory=list)

    @property
    def ok(self) -> int:
        return sum(1 for r in self.results if r.ok)

    @property
    def failed(self) -> list[BoardResult]:
        return [r for r in self.results if not r.ok]

    def __iter__(self) -> Iterator[BoardResult]:
        return iter(self.results)

    @staticmethod
    def from_wire(result: Mapping[str, Any]) -> "Outcome":
        return Outcome([BoardResult.from_wire(e) for e in result.get("results", [])],
                       [str(u) for u in result.get("unmatched", [])])


Reading = BoardResult
"""A board's reading (``value``, ``unit``, ``age_ms``), or why there is none (``error``)."""


@dataclass(frozen=True)
class Board:
    """A board as ``boards.list`` describes it."""

    name: str | None
    address: str
    state: str
    alias: str | None = None
    adapter: str | None = None
    rssi: int | None = None
    led: bool | None = None
    desired_led: bool | None = None
    profile: str | None = None
    #: Every sensor's latest value by name: {"temperature": 21, "humidity": 45.5}.
    sensors: dict[str, float | None] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_wire(entry: Mapping[str, Any]) -> "Board":
        sensors = {name: (info or {}).get("value") for name, info in (entry.get("sensors") or {}).items()}
        return Board(name=entry.get("name"), address=entry["address"], state=entry.get("state", "?"),
                     alias=entry.get("alias"), adapter=entry.get("adapter"), rssi=entry.get("rssi"),
                     led=entry.get("led"), desired_led=entry.get("desiredLed"), profile=entry.get("profile"),
                     sensors=sensors, raw=dict(entry))


@dataclass(frozen=True)
class Series:
    """One board's history of one sensor: (time, value) points, oldest first (at the
    ``raw`` resolution the readings; else each bucket's mean)."""

    name: str | None
    address: str
    points: list[tuple[datetime, float]]
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: The decimals the sensor's scale gives a reading (a bucket's mean has one more); None
    #: for a float sensor.
    decimals: int | None = None


def _utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ").replace(".000000Z", "Z")


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _selection(select: Selection) -> str | list[str]:
    if isinstance(select, str):
        return select
    return [str(s) for s in select]


# Why a connection ended when the daemon closed it without a word: an idle connection that
# held nothing (idle-timeout-s), which a call makes again.
_CLOSED_BY_DAEMON = "blefleetd closed the connection"


class Fleet:
    """A connection to blefleetd. Make one with ``await Fleet.connect()``; use it as an async
    context manager, or ``await fleet.close()``. Calls may run concurrently on one connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> None:
        self.socket_path = path
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._followers: list[asyncio.Queue[dict[str, Any] | None]] = []
        self._handlers: dict[str, list[NotificationHandler]] = {}
        self._close_handlers: list[Callable[[str], None]] = []
        self._closed: str | None = None
        # The daemon's sentence when it refused the connection itself (an error with no id,
        # such as a peer with no role): the reason the connection ended.
        self._refusal: str | None = None
        self._read_task = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, socket_path: str | None = None) -> "Fleet":
        """Connects to ``socket_path``, else $BLEFLEET_SOCKET, else ``DEFAULT_SOCKET``."""
        path = socket_path or os.environ.get("BLEFLEET_SOCKET") or DEFAULT_SOCKET
        reader, writer = await cls._open(path)
        return cls(reader, writer, path)

    @staticmethod
    async def _open(path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The socket's streams, or ``DaemonUnreachable`` saying why not."""
        try:
            return await asyncio.open_unix_connection(path, limit=_LINE_LIMIT)
        except FileNotFoundError:
            raise DaemonUnreachable(f"blefleetd's socket {path} does not exist: is blefleetd running?") from None
        except PermissionError:
            raise DaemonUnreachable(f"permission to open blefleetd's socket {path} was denied: join the blefleet "
                                    "group (or blefleet-ro to read only)") from None
        except ConnectionRefusedError:
            raise DaemonUnreachable(f"nothing listens on {path}: is blefleetd running?") from None
        except OSError as e:
            raise DaemonUnreachable(f"cannot connect to {path}: {e.strerror or e}") from None

    async def __aenter__(self) -> "Fleet":
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._end("the connection was closed")
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except OSError:
            pass
        self._read_task.cancel()
        try:
            await self._read_task
        except (asyncio.CancelledError, OSError):
            pass

    @property
    def closed(self) -> str | None:
        """Why the connection ended (a sentence), or None while it is open."""
        return self._closed

    def on_notification(self, method: str, handler: NotificationHandler) -> Callable[[], None]:
        """Calls ``handler(params)`` in the event loop for each notification ``method`` the daemon
        sends on this connection (``device.value``, ...), in the order they came; returns a
        function that removes the handler. An exception of a handler is logged, not raised."""
        handlers = self._handlers.setdefault(method, [])
        handlers.append(handler)

        def remove() -> None:
            if handler in handlers:
                handlers.remove(handler)
        return remove

    def on_close(self, handler: Callable[[str], None]) -> Callable[[], None]:
        """Calls ``handler(reason)`` once when the connection ends (closed here, by the daemon,
        or failed); at once if it has already ended. Returns a function that removes it."""
        if self._closed is not None:
            handler(self._closed)
            return lambda: None
        self._close_handlers.append(handler)

        def remove() -> None:
            if handler in self._close_handlers:
                self._close_handlers.remove(handler)
        return remove

    # -- the wire ----------------------------------------------------------------------

    async def call(self, method: str, params: Mapping[str, Any] | Sequence[Any] | None = None,
                   timeout: float | None = 120) -> Any:
        """Calls any method of the daemon's API (``rpc.discover`` lists them) and returns its
        result as it came; a JSON-RPC error raises ``FleetError``."""
        if self._closed is not None:
            if not self._reopenable():
                raise DaemonUnreachable(self._closed)
            await self._reopen()
        ident = next(self._ids)
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            request["params"] = params if isinstance(params, Mapping) else list(params)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = (method, future)
        try:
            self._writer.write(json.dumps(request, separators=(",", ":")).encode() + b"\n")
            await self._writer.drain()
            return await asyncio.wait_for(future, timeout)
        except ConnectionError as e:
            self._end(f"the connection to blefleetd ended: {e}")
            raise DaemonUnreachable(self._closed or "the connection ended") from None
        finally:
            self._waiting.pop(ident, None)

    def _reopenable(self) -> bool:
        """Whether a call may make the connection again: the daemon closed it as idle (one that
        holds nothing: no subscription, no lease, nothing followed here) without a word."""
        return (self._closed == _CLOSED_BY_DAEMON and self._refusal is None and not self._followers
                and not any(self._handlers.values()) and not self._close_handlers)

    async def _reopen(self) -> None:
        self._reader, self._writer = await self._open(self.socket_path)
        self._closed = None
        self._read_task = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        reason = _CLOSED_BY_DAEMON
        try:
            while True:
                line = await self._reader.readline()
                if not line:
                    break
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                for item in message if isinstance(message, list) else [message]:
                    self._deliver(item)
        except (ConnectionError, asyncio.LimitOverrunError, ValueError) as e:
            reason = f"the connection to blefleetd failed: {e}"
        self._end(self._refusal or reason)

    def _deliver(self, item: Mapping[str, Any]) -> None:
        if "method" in item and "id" not in item:
            params = item.get("params")
            for handler in list(self._handlers.get(str(item["method"]), ())):
                try:
                    handler(dict(params) if isinstance(params, Mapping) else {})
                except Exception:
                    _logger.exception("the handler of %s failed", item["method"])
            if item["method"] in ("events.event", "events.dropped"):
                event = dict(item.get("params") or {})
                if item["method"] == "events.dropped":
                    event = {"topic": "dropped", **event}
                for queue in self._followers:
                    queue.put_nowait(event)
            return
        waiting = self._waiting.get(item.get("id"))  # type: ignore[arg-type]
        if waiting is None:
            # An error without an id (a frame the daemon could not read, or the daemon refusing
            # the connection) fails every call, and is why the connection ends if it does.
            if item.get("error") and item.get("id") is None:
                self._refusal = str((item["error"] or {}).get("message") or "blefleetd refused the connection")
                for method, future in self._waiting.values():
                    if not future.done():
                        error = item["error"]
                        future.set_exception(FleetError(method, error.get("code", -32603), error.get("message", "")))
            return
        method, future = waiting
        if future.done():
            return
        if "error" in item:
            error = item["error"] or {}
            future.set_exception(FleetError(method, int(error.get("code", -32603)), str(error.get("message", "")),
                                            error.get("data")))
        else:
            future.set_result(item.get("result"))

    def _end(self, reason: str) -> None:
        if self._closed is not None:
            return
        self._closed = reason
        for method, future in self._waiting.values():
            if not future.done():
                future.set_exception(DaemonUnreachable(f"{method}: {reason}"))
        for queue in self._followers:
            queue.put_nowait(None)
        handlers, self._close_handlers = self._close_handlers, []
        for handler in handlers:
            try:
                handler(reason)
            except Exception:
                _logger.exception("a handler of the connection's end failed")

    # -- the fleet -----------------------------------------------------------------------

    async def boards(self, select: Selection | None = None) -> list[Board]:
        """Every known board (or those of ``select``) with its state, LED and latest readings."""
        params = {} if select is None else {"select": _selection(select)}
        result = await self.call("boards.list", params)
        return [Board.from_wire(b) for b in result.get("boards", [])]

    async def led(self, select: Selection, on: bool, timeout_ms: int | None = None) -> Outcome:
        """Switches the LED of every selected board; each board's result."""
        params: dict[str, Any] = {"select": _selection(select), "on": bool(on)}
        if timeout_ms is not None:
            params["timeoutMs"] = timeout_ms
        return Outcome.from_wire(await self.call("led.set", params))

    async def identify(self, select: Selection, timeout_ms: int | None = None) -> Outcome:
        """Makes every selected board show itself: its LED blinks for a few seconds, then is as
        it was wanted (``boards.identify``); each board's result."""
        params: dict[str, Any] = {"select": _selection(select)}
        if timeout_ms is not None:
            params["timeoutMs"] = timeout_ms
        return Outcome.from_wire(await self.call("boards.identify", params))

    async def switch(self, select: Selection, name: str, on: bool, timeout_ms: int | None = None) -> Outcome:
        """Sets a switch of the boards' profile (blefleet-profile(5)) on the selected boards."""
        params: dict[str, Any] = {"select": _selection(select), "switch": name, "on": bool(on)}
        if timeout_ms is not None:
            params["timeoutMs"] = timeout_ms
        return Outcome.from_wire(await self.call("switch.set", params))

    async def temperatures(self, select: Selection = "all", max_age_ms: int | None = None) -> list[Reading]:
        """Every selected board's temperature (°C), each a ``Reading``."""
        params: dict[str, Any] = {"select": _selection(select)}
        if max_age_ms is not None:
            params["maxAgeMs"] = max_age_ms
        return Outcome.from_wire(await self.call("temperature.read", params)).results

    async def sensor(self, name: str, select: Selection = "all", max_age_ms: int | None = None) -> list[Reading]:
        """Every selected board's reading of the sensor ``name`` (its profile's), with its unit."""
        params: dict[str, Any] = {"select": _selection(select), "sensor": name}
        if max_age_ms is not None:
            params["maxAgeMs"] = max_age_ms
        return Outcome.from_wire(await self.call("sensor.read", params)).results

    async def history(self, select: Selection = "all", sensor: str = "temperature",
                      since: datetime | timedelta = timedelta(hours=1), until: datetime | None = None,
                      resolution: str | None = None) -> list[Series]:
        """The kept readings of a sensor: ``since`` a time, or that long ago; ``resolution``
        ``raw``, ``5m`` or ``1h`` (the daemon picks by the span when left out)."""
        start = datetime.now(timezone.utc) - since if isinstance(since, timedelta) else since
        params: dict[str, Any] = {"select": _selection(select), "sensor": sensor, "since": _utc(start)}
        if until is not None:
            params["until"] = _utc(until)
        if resolution is not None:
            params["resolution"] = resolution
        result = await self.call("history.read", params)
        series = []
        for board in result.get("boards", []):
            points = [(_parse_time(p["time"]), p.get("value", p.get("mean"))) for p in board.get("points", [])]
            series.append(Series(board.get("name"), board["address"], points, board, board.get("decimals")))
        return series

    async def status(self) -> dict[str, Any]:
        """The daemon's status (``daemon.status``): version, adapters, board counts, history."""
        return dict(await self.call("daemon.status"))

    def subscribe(self, *topics: str) -> "Events":
        """The daemon's events as they happen, from the moment ``async with fleet.subscribe(...)
        as events`` returns (the daemon has taken the subscription by then): topics ``boards``,
        ``temperature``, ``led``, ``adapter``, ``sensor`` (all when none is given); each event a
        dict with ``topic``, ``address``, ``time`` and ``data``, ``{"topic": "dropped", ...}``
        when some were lost. ``async for event in events`` ends when the connection does."""
        return Events(self, topics)

    async def events(self, *topics: str) -> AsyncIterator[dict[str, Any]]:
        """``subscribe`` as one async iterator: ``async for event in fleet.events("led")``."""
        async with self.subscribe(*topics) as events:
            async for event in events:
                yield event


class Events:
    """A subscription to the daemon's events (``Fleet.subscribe``): an async context manager
    and an async iterator."""

    def __init__(self, fleet: Fleet, topics: Sequence[str]) -> None:
        self._fleet = fleet
        self._topics = list(topics)
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    async def __aenter__(self) -> "Events":
        self._fleet._followers.append(self._queue)
        try:
            await self._fleet.call("events.subscribe", {"topics": self._topics} if self._topics else {})
        except BaseException:
            self._fleet._followers.remove(self._queue)
            raise
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._queue in self._fleet._followers:
            self._fleet._followers.remove(self._queue)

    def __aiter__(self) -> "Events":
        return self

    async def __anext__(self) -> dict[str, Any]:
        while True:
            event = await self._queue.get()
            if event is None:
                raise StopAsyncIteration
            if not self._topics or event.get("topic") in self._topics or event.get("topic") == "dropped":
                return event
