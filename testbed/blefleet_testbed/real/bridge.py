"""`_bridge`: the host end of the VM's forwarded services. Listens on Unix sockets in the
run directory (the addresses the testbed exports: the guest's system bus, its kernel's
Bluetooth management interface) and joins every connection, byte for byte, to the guest
through qemu's forwarded TCP port of that socket. One process for every listener and
connection, so stopping it (or its parent dying) ends every bridged connection at once:
no stray forwarder survives."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

CHUNK = 1 << 16


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def serve(pairs: list[tuple[Path, int]]) -> None:
    """Listens on each (Unix socket path, forwarded TCP port) pair, in the order given."""
    def joiner(port: int):
        async def joined(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
            try:
                guest_r, guest_w = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                client_w.close()
                return
            await asyncio.gather(_pipe(client_r, guest_w), _pipe(guest_r, client_w))
        return joined

    servers = []
    for listen, port in pairs:
        listen.unlink(missing_ok=True)
        servers.append(await asyncio.start_unix_server(joiner(port), path=str(listen)))
        os.chmod(listen, 0o666)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        for server in servers:
            server.close()
        for listen, _ in pairs:
            listen.unlink(missing_ok=True)


def main(args) -> int:
    if len(args.listen) != len(args.port):
        raise SystemExit("_bridge: one --port for each --listen")
    asyncio.run(serve([(Path(listen), port) for listen, port in zip(args.listen, args.port)]))
    return 0
