"""`_bridge`: the host end of the VM's system bus. Listens on a Unix socket in the run
directory (the address the testbed exports) and joins every connection to the guest bus
through qemu's forwarded TCP port. One process for all connections, so stopping it (or
its parent dying) ends every bridged connection at once: no stray forwarder survives."""

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


async def serve(listen: Path, port: int) -> None:
    async def joined(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            guest_r, guest_w = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, guest_w), _pipe(guest_r, client_w))

    listen.unlink(missing_ok=True)
    server = await asyncio.start_unix_server(joined, path=str(listen))
    os.chmod(listen, 0o666)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()
    listen.unlink(missing_ok=True)


def main(args) -> int:
    asyncio.run(serve(Path(args.listen), args.port))
    return 0
