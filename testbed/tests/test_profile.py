"""The board profile's pure parts: signed byte encoding and temperature patterns."""

import pytest
from blefleet_testbed import profile


@pytest.mark.parametrize("celsius,byte", [(21, b"\x15"), (0, b"\x00"), (-5, b"\xfb"), (-128, b"\x80"), (127, b"\x7f")])
def test_temperature_is_one_signed_byte(celsius, byte):
    assert profile.encode_celsius(celsius) == byte
    assert profile.decode_celsius(byte) == celsius


def test_out_of_range_temperature_is_refused():
    with pytest.raises(ValueError):
        profile.encode_celsius(128)


def test_names_and_addresses_are_distinct():
    assert [profile.board_name(i) for i in (1, 2, 10)] == ["nano-01", "nano-02", "nano-10"]
    assert len({profile.board_address(i) for i in range(1, profile.MAX_BOARDS + 1)}) == profile.MAX_BOARDS


def test_ramp_walks_one_degree_per_tick_within_bounds():
    source = profile.TemperatureSource(profile.TemperaturePattern.parse("ramp:-2:2"), 1, 1)
    values = [source.celsius]
    for _ in range(12):
        source.tick()
        values.append(source.celsius)
    assert min(values) == -2 and max(values) == 2
    assert all(abs(a - b) == 1 for a, b in zip(values, values[1:]))


def test_random_stays_in_range_and_override_wins():
    source = profile.TemperatureSource(profile.TemperaturePattern.parse("random:-10:-5"), 3, 5)
    for _ in range(50):
        source.tick()
        assert -10 <= source.celsius <= -5
    source.override = 30
    source.tick()
    assert source.celsius == 30


@pytest.mark.parametrize("text", ["warm", "constant", "ramp:5:1", "random:1", "distinct:1:2", "200"])
def test_bad_patterns_are_refused(text):
    with pytest.raises(profile.PatternError):
        profile.TemperaturePattern.parse(text)
