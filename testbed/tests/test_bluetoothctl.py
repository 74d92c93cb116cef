"""Referee: Debian's bluetoothctl, driven as a person would, agrees with the testbed."""

from __future__ import annotations

import re
import shutil

import pexpect
import pytest
from support import LED_STATUS, TEMPERATURE, env_with_bus

CENTRAL_ADDRESS = "00:1A:7D:DA:71:13"
BOARDS = {f"nano-{i:02d}": f"CA:FE:00:00:00:{i:02X}" for i in range(1, 4)}
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\x01|\x02")


class Bluetoothctl:
    def __init__(self, bus_address: str):
        self.child = pexpect.spawn("bluetoothctl", env=env_with_bus(bus_address), encoding="utf-8",
                                   timeout=15, dimensions=(50, 400))
        self.transcript: list[str] = []
        self.pending = ""

    def send(self, line: str) -> None:
        self.child.sendline(line)

    def expect(self, pattern: str, timeout: float = 15) -> re.Match:
        """Waits for `pattern` in the (colour-stripped) output."""
        regex = re.compile(pattern)
        buffer = self.pending
        while True:
            clean = ANSI.sub("", buffer)
            match = regex.search(clean)
            if match:
                # Keep what follows the match for the next expectation.
                self.pending = clean[match.end():]
                return match
            try:
                chunk = self.child.read_nonblocking(65536, timeout=timeout)
            except pexpect.TIMEOUT:
                raise AssertionError(f"bluetoothctl never printed /{pattern}/; last output:\n"
                                     + ANSI.sub("", buffer)[-2000:]) from None
            self.transcript.append(chunk)
            buffer += chunk

    def close(self) -> None:
        if self.child.isalive():
            self.child.sendline("quit")
            try:
                self.child.expect(pexpect.EOF, timeout=5)
            except pexpect.TIMEOUT:
                pass
        self.child.close(force=True)


@pytest.mark.skipif(shutil.which("bluetoothctl") is None, reason="Debian package bluez is not installed")
def test_bluetoothctl_session(make_testbed):
    tb = make_testbed("--boards", str(len(BOARDS)), "--temperature", "-5", "--notify-interval", "0.3")
    ctl = Bluetoothctl(tb.bus_address)
    try:
        # bluetoothctl picks the last controller by default; the central is hci0.
        ctl.send(f"select {CENTRAL_ADDRESS}")
        ctl.expect(rf"Controller {CENTRAL_ADDRESS} .*\[default\]")

        ctl.send("scan on")
        seen = set()
        while seen != set(BOARDS):
            m = ctl.expect(r"\[NEW\] Device (CA:FE:[0-9A-F:]+) (nano-\d\d)")
            assert BOARDS[m.group(2)] == m.group(1)
            seen.add(m.group(2))
        ctl.send("scan off")
        ctl.expect("Discovery stopped")

        address = BOARDS["nano-02"]
        ctl.send(f"connect {address}")
        ctl.expect(rf"Device {address} ServicesResolved: yes")
        ctl.expect("Connection successful")

        ctl.send("menu gatt")
        ctl.send(f"select-attribute {TEMPERATURE}")
        ctl.expect(r"char000e\]#")
        ctl.send("read")
        # -5 °C is the signed byte 0xfb.
        ctl.expect(r"(?i)Attempting to read .*char000e")
        ctl.expect(r"(?i)\b0?x?fb\b")

        ctl.send(f"select-attribute {LED_STATUS}")
        ctl.expect(r"char000b\]#")
        ctl.send("write 0x01")
        ctl.expect(r"Attempting to write")
        # The write is acknowledged before bluetoothctl prints the prompt again.
        ctl.expect(r"char000b\]#")

        ctl.send(f"select-attribute {TEMPERATURE}")
        ctl.expect(r"char000e\]#")
        ctl.send("notify on")
        ctl.expect("Notify started")
        for _ in range(2):
            ctl.expect(r"char000e Value:")
        ctl.send("notify off")
        ctl.expect("Notify stopped")
        ctl.send("back")

        ctl.send(f"disconnect {address}")
        ctl.expect(rf"Device {address} Connected: no")
        ctl.send(f"connect {address}")
        ctl.expect(rf"Device {address} ServicesResolved: yes")
        ctl.expect("Connection successful")
    finally:
        ctl.close()

    board = tb.board("nano-02")
    assert board["led"] == 1 and board["led_writes"] == 1
    assert board["temperature"] == -5
    assert all(b["led"] is None for b in tb.state()["boards"] if b["name"] != "nano-02")
