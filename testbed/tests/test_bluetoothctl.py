"""Referee: Debian's bluetoothctl, driven as a person would, agrees with the testbed."""

from __future__ import annotations

import re

import pexpect
import pytest
from support import LED_STATUS, TEMPERATURE, env_with_bus

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


def connected(ctl: Bluetoothctl, address: str, timeout: float) -> None:
    """`connect` answered "Connection successful" and the services were resolved (real
    bluetoothd answers before it resolves; BlueZoo after)."""
    resolved = rf"Device {address} ServicesResolved: yes"
    ctl.expect(rf"(Connection successful[\s\S]*{resolved}|{resolved}[\s\S]*Connection successful)", timeout)


def test_bluetoothctl_session(make_testbed, lane):
    tb = make_testbed("--boards", "3", "--temperature", "-5", "--notify-interval", "0.3")
    state = tb.state()
    central = state["central"]["address"]
    boards = {b["name"]: b["address"] for b in state["boards"]}
    timeout = tb.scale(15)
    ctl = Bluetoothctl(tb.bus_address)
    try:
        # The testbed's boards are controllers too; select the central (hci0) once
        # bluetoothctl has found bluetoothd.
        ctl.expect("Agent registered", timeout)
        ctl.send(f"select {central}")
        ctl.send("show")
        ctl.expect(rf"Controller {central} \((public|random)\)", timeout)

        ctl.send("scan on")
        seen = set()
        while seen != set(boards):
            m = ctl.expect(r"\[NEW\] Device ([0-9A-F:]{17}) (nano-\d\d)", timeout)
            assert boards[m.group(2)] == m.group(1)
            seen.add(m.group(2))
        ctl.send("scan off")
        ctl.expect("Discovery stopped", timeout)

        address = boards["nano-02"]
        ctl.send(f"connect {address}")
        connected(ctl, address, timeout)

        ctl.send("menu gatt")
        ctl.send(f"select-attribute {TEMPERATURE}")
        temperature = ctl.expect(r"nano-02:/service[0-9a-f]{4}/(char[0-9a-f]{4})\]#", timeout).group(1)
        ctl.send("read")
        # -5 °C is the signed byte 0xfb.
        ctl.expect(rf"(?i)Attempting to read .*{temperature}", timeout)
        ctl.expect(r"(?i)\b0?x?fb\b", timeout)

        ctl.send(f"select-attribute {LED_STATUS}")
        led = ctl.expect(rf"nano-02:/service[0-9a-f]{{4}}/(?!{temperature})(char[0-9a-f]{{4}})\]#", timeout).group(1)
        ctl.send("write 0x01")
        ctl.expect(r"Attempting to write", timeout)
        # The write is acknowledged before bluetoothctl prints the prompt again.
        ctl.expect(rf"{led}\]#", timeout)

        ctl.send(f"select-attribute {TEMPERATURE}")
        ctl.expect(rf"{temperature}\]#", timeout)
        ctl.send("notify on")
        ctl.expect("Notify started", timeout)
        for _ in range(2):
            ctl.expect(rf"{temperature} Value:", timeout)
        ctl.send("notify off")
        ctl.expect("Notify stopped", timeout)
        ctl.send("back")

        ctl.send(f"disconnect {address}")
        # bluetoothd 5.66 may have marked the link up with ServicesResolved only.
        ctl.expect(rf"Device {address} (Connected|ServicesResolved): no", timeout)
        ctl.send(f"connect {address}")
        connected(ctl, address, timeout)
    finally:
        ctl.close()

    board = tb.board("nano-02")
    assert board["led"] == 1 and board["led_writes"] == 1
    assert board["temperature"] == -5
    assert all(b["led"] is None for b in tb.state()["boards"] if b["name"] != "nano-02")
