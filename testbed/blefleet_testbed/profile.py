"""What a simulated board is: the Nano 33 BLE Sense LED + temperature sketch
(shared/BOARD-PROFILE.md), plus the temperature patterns the testbed can play."""

from __future__ import annotations

import random
from dataclasses import dataclass

LED_SERVICE_UUID = "cd48409a-f3cc-11ed-a05b-0242ac120003"
LED_STATUS_UUID = "cd48409b-f3cc-11ed-a05b-0242ac120003"
SENSOR_SERVICE_UUID = "d888a9c2-f3cc-11ed-a05b-0242ac120003"
TEMPERATURE_UUID = "d888a9c3-f3cc-11ed-a05b-0242ac120003"
# Not in the reference sketch: a lab's variant (`start --humidity`) adds the Nano 33 BLE
# Sense's HTS221 relative humidity to the sensor service, uint16 in hundredths of %RH.
HUMIDITY_UUID = "d888a9c4-f3cc-11ed-a05b-0242ac120003"
# Not in the reference sketch either: a board that keeps a value for paired centrals only
# (`start --encrypted`: the last board), a characteristic readable over an encrypted link
# only (BlueZ's flag encrypt-read): read before pairing, BlueZ answers "Not paired".
SECRET_UUID = "d888a9c5-f3cc-11ed-a05b-0242ac120003"
SECRET_VALUE = b"paired-only"

# Fixed attribute handles, as a board's firmware has them: the GATT object paths a
# central sees (service000a/char000b, ...) stay the same across reboots and reconnects.
LED_SERVICE_HANDLE = 0x000A
LED_STATUS_HANDLE = 0x000B
SENSOR_SERVICE_HANDLE = 0x000D
TEMPERATURE_HANDLE = 0x000E
HUMIDITY_HANDLE = 0x0011
SECRET_HANDLE = 0x0014

CENTRAL_ADDRESS = "00:1A:7D:DA:71:13"
CENTRAL_NAME = "hci0"
# Every central adapter's address starts so (boards' addresses never do).
CENTRAL_PREFIX = "00:1A:7D:DA:"
MAX_CENTRALS = 8
MAX_BOARDS = 200

# A signed byte is what the sketch writes: (int)HTS.readTemperature() into a byte.
MIN_CELSIUS = -128
MAX_CELSIUS = 127


def board_name(index: int) -> str:
    """nano-01, nano-02, ... (index starts at 1)."""
    return f"nano-{index:02d}"


def central_address(index: int) -> str:
    """hci0's address is CENTRAL_ADDRESS; more centrals (and plugged-in ones) follow it."""
    n = 0x7113 + index
    return f"{CENTRAL_PREFIX}{n >> 8:02X}:{n & 0xFF:02X}"


def board_address(index: int) -> str:
    """A distinct random-static-looking address per board (top bits 11)."""
    return f"CA:FE:00:00:{index >> 8:02X}:{index & 0xFF:02X}"


def humidity_hundredths(index: int) -> int:
    """Board i's relative humidity in hundredths of %RH: 40.25 % + 0.95 % (i - 1) (nano-01: 40.25 %,
    nano-02: 41.20 %, whose last decimal is a zero its scale still gives)."""
    return min(10000, 4025 + 95 * (index - 1))


def encode_humidity(hundredths: int) -> bytes:
    """uint16, little-endian."""
    return hundredths.to_bytes(2, "little")


def encode_celsius(celsius: int) -> bytes:
    """One byte, two's complement below 0 °C (e.g. -5 -> 0xFB)."""
    if not MIN_CELSIUS <= celsius <= MAX_CELSIUS:
        raise ValueError(f"{celsius} °C does not fit in one signed byte")
    return bytes([celsius & 0xFF])


def decode_celsius(value: bytes) -> int:
    """The inverse of encode_celsius: the byte read as a signed Int8."""
    if len(value) != 1:
        raise ValueError(f"expected one byte, got {len(value)}")
    return int.from_bytes(value, "little", signed=True)


class PatternError(ValueError):
    pass


@dataclass(frozen=True)
class TemperaturePattern:
    """How board temperatures evolve at every refresh tick.

    Spellings accepted by `--temperature`:
      N | constant:N       every board reads N °C
      distinct[:BASE]      board i reads BASE + i - 1 (default BASE 20)
      ramp[:LO:HI]         each board walks 1 °C per tick between LO and HI and back
                           (default -5..30), boards start at different points
      random[:LO:HI]       a fresh value in LO..HI at every tick (default -10..40),
                           seeded per board so runs repeat
    """

    kind: str
    a: int = 0
    b: int = 0

    @staticmethod
    def parse(text: str) -> "TemperaturePattern":
        parts = text.strip().split(":")
        kind = parts[0].lower()
        try:
            numbers = [int(p) for p in parts[1:]]
            if kind not in ("constant", "distinct", "ramp", "random"):
                numbers = [int(p) for p in parts]
                kind = "constant"
        except ValueError:
            raise PatternError(
                f"temperature pattern '{text}' is not one of N, constant:N, distinct[:BASE], "
                "ramp[:LO:HI], random[:LO:HI]") from None
        if kind == "constant":
            if len(numbers) != 1:
                raise PatternError(f"temperature pattern '{text}' needs one value, e.g. constant:21")
            pattern = TemperaturePattern("constant", numbers[0])
        elif kind == "distinct":
            if len(numbers) > 1:
                raise PatternError(f"temperature pattern '{text}' takes at most one base, e.g. distinct:20")
            pattern = TemperaturePattern("distinct", numbers[0] if numbers else 20)
        else:
            default = (-5, 30) if kind == "ramp" else (-10, 40)
            if len(numbers) not in (0, 2):
                raise PatternError(f"temperature pattern '{text}' takes LO:HI, e.g. {kind}:-5:30")
            lo, hi = numbers if numbers else default
            if lo > hi:
                raise PatternError(f"temperature pattern '{text}' has LO above HI")
            pattern = TemperaturePattern(kind, lo, hi)
        for value in (pattern.a, pattern.b):
            if not MIN_CELSIUS <= value <= MAX_CELSIUS:
                raise PatternError(f"temperature pattern '{text}' leaves the signed byte range -128..127")
        return pattern


class TemperatureSource:
    """One board's sensor: the pattern's value, or a fixed override set by `board temp`."""

    def __init__(self, pattern: TemperaturePattern, index: int, board_count: int):
        self.pattern = pattern
        self.index = index
        self.override: int | None = None
        self.rng = random.Random(index)
        if pattern.kind == "ramp":
            span = pattern.b - pattern.a
            self.step = 1
            self.value = pattern.a + ((index - 1) * 7) % (span + 1) if span else pattern.a
        else:
            self.value = self._pattern_value()

    def _pattern_value(self) -> int:
        p = self.pattern
        if p.kind == "constant":
            return p.a
        if p.kind == "distinct":
            return max(MIN_CELSIUS, min(MAX_CELSIUS, p.a + self.index - 1))
        if p.kind == "random":
            return self.rng.randint(p.a, p.b)
        return self.value

    @property
    def celsius(self) -> int:
        return self.override if self.override is not None else self.value

    def tick(self) -> None:
        """Advance the pattern by one refresh."""
        p = self.pattern
        if p.kind == "ramp" and p.b > p.a:
            if not p.a <= self.value + self.step <= p.b:
                self.step = -self.step
            self.value += self.step
        elif p.kind == "random":
            self.value = self.rng.randint(p.a, p.b)
