"""Fifty boards: all registered when `start` returns, all discoverable and usable."""

from support import Client, run

BOARDS = 50


def test_fifty_boards(make_testbed):
    tb = make_testbed("--boards", str(BOARDS))
    boards = tb.state()["boards"]
    assert len(boards) == BOARDS and all(b["present"] for b in boards)
    addresses = [b["address"] for b in boards]

    async def scenario():
        c = await Client.connect(tb.bus_address)
        try:
            assert await c.discover(addresses, timeout=20)
            for address in (addresses[0], addresses[-1]):
                assert await c.connect_device(address)
                await c.write_led(address, b"\x01")
                assert await c.read_temperature(address) == 21
        finally:
            c.close()
    run(scenario())
    state = tb.state()["boards"]
    assert [b["led"] for b in state].count(1) == 2
