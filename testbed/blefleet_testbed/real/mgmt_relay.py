"""The guest end of the VM's Bluetooth management interface (run by guest_init.sh as root).

Listens on TCP (qemu forwards a host port to it) and gives every connection a fresh
control-channel socket of the kernel's Bluetooth stack: what `btmgmt` and bluetoothd speak
(AF_BLUETOOTH, BTPROTO_HCI, HCI_DEV_NONE, HCI_CHANNEL_CONTROL). The TCP stream carries
mgmt packets back to back, each a 6-byte header (opcode or event code, controller index,
parameter length: little-endian 16 bits each) and its parameters:
  TCP -> kernel   one header and its parameters, sent as one packet
  kernel -> TCP   each packet the socket receives (command replies and every event the
                  control channel broadcasts), written whole
Either side closing closes both. Independent of bluetoothd: restarting it needs nothing here.
One packet is the relay's own, not the kernel's: opcode 0xff02 (no kernel opcode) closes the
controller of its index with the HCIDEVDOWN ioctl (`hciconfig hciN down`, what a daemon on
the kernel's own machine does itself to reset a controller that answers nothing), answered
with a Command Complete for 0xff02: status 0, or 0x03 and the errno's name in the log.

Standalone on purpose (the guest's /usr/bin/python3 -I -S, a few standard modules: Python
starts slowly from the 9p root under TCG).
`mgmt_relay.py HOST PORT [READY_FILE]`: READY_FILE is created once it listens."""

from __future__ import annotations

import ctypes
import os
import select
import socket
import struct
import sys
import threading

AF_BLUETOOTH = 31
BTPROTO_HCI = 1
HCI_DEV_NONE = 0xFFFF
HCI_CHANNEL_CONTROL = 3
HEADER = 6
MAX_PACKET = HEADER + 0xFFFF  # 65541

_libc = ctypes.CDLL(None, use_errno=True)
OP_RELAY_CLOSE = 0xFF02
HCIDEVDOWN = 0x400448CA  # _IOW('H', 202, int)
EVENT_COMMAND_COMPLETE = 0x0001


def close_controller(index: int) -> bytes:
    """HCIDEVDOWN on hciN; the Command Complete answering the relay's own 0xff02."""
    import fcntl
    status = 0
    try:
        with socket.socket(AF_BLUETOOTH, socket.SOCK_RAW | socket.SOCK_CLOEXEC, BTPROTO_HCI) as raw:
            fcntl.ioctl(raw.fileno(), HCIDEVDOWN, index)
        log(f"hci{index} closed (HCIDEVDOWN)")
    except OSError as e:
        log(f"hci{index} could not be closed: {e}")
        status = 0x03
    parameters = struct.pack("<HB", OP_RELAY_CLOSE, status)
    return struct.pack("<HHH", EVENT_COMMAND_COMPLETE, index, len(parameters)) + parameters


def open_control() -> socket.socket:
    """A control-channel socket. Python's bind() cannot give an HCI socket its channel, so
    libc's bind() gets struct sockaddr_hci { hci_family, hci_dev, hci_channel }."""
    sock = socket.socket(AF_BLUETOOTH, socket.SOCK_RAW | socket.SOCK_CLOEXEC, BTPROTO_HCI)
    address = struct.pack("=HHH", AF_BLUETOOTH, HCI_DEV_NONE, HCI_CHANNEL_CONTROL)
    if _libc.bind(sock.fileno(), ctypes.c_char_p(address), len(address)) != 0:
        err = ctypes.get_errno()
        sock.close()
        raise OSError(err, f"bind to the HCI control channel: {os.strerror(err)}")
    return sock


def log(message: str) -> None:
    print(f"mgmt relay: {message}", file=sys.stderr, flush=True)


def relay(client: socket.socket, peer) -> None:
    try:
        control = open_control()
    except OSError as e:
        log(f"connection from {peer[0]}:{peer[1]} closed: {e}")
        client.close()
        return
    pending = b""
    try:
        poller = select.poll()
        poller.register(client, select.POLLIN)
        poller.register(control, select.POLLIN)
        while True:
            for fd, events in poller.poll():
                if fd == control.fileno():
                    if events & (select.POLLERR | select.POLLHUP | select.POLLNVAL) and not events & select.POLLIN:
                        return
                    client.sendall(control.recv(MAX_PACKET))
                    continue
                data = client.recv(MAX_PACKET)
                if not data:
                    return
                pending += data
                while len(pending) >= HEADER:
                    size = HEADER + int.from_bytes(pending[4:6], "little")
                    if len(pending) < size:
                        break
                    packet, pending = pending[:size], pending[size:]
                    if int.from_bytes(packet[0:2], "little") == OP_RELAY_CLOSE:
                        client.sendall(close_controller(int.from_bytes(packet[2:4], "little")))
                    else:
                        control.send(packet)
    except OSError as e:
        log(f"connection from {peer[0]}:{peer[1]} closed: {e}")
    finally:
        control.close()
        client.close()


def main(argv: list[str]) -> int:
    host, port = argv[1], int(argv[2])
    ready = argv[3] if len(argv) > 3 else None
    try:
        open_control().close()  # the kernel's management interface is there (and ours: root)
    except OSError as e:
        log(f"cannot open the kernel's management interface: {e}")
        return 1
    server = socket.create_server((host, port))
    try:
        with open("/proc/uptime") as f:
            uptime = f" (guest uptime {f.read().split()[0]} s)"
    except OSError:
        uptime = ""
    log(f"listening on {host}:{port}{uptime}")
    if ready is not None:
        open(ready, "w").close()
    while True:
        client, peer = server.accept()
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=relay, args=(client, peer), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
