"""The slot referee's own bookkeeping (`scripts/testbed watch-links`): links BlueZ shows, and
Connect calls asked for and not yet answered, per adapter."""

from __future__ import annotations

from dbus_fast import Message, MessageType, Variant

from blefleet_testbed.referee import Links

DEVICE = "org.bluez.Device1"
A = "/org/bluez/hci0/dev_00_AA_01_03_00_03"
B = "/org/bluez/hci0/dev_00_AA_01_04_00_04"


def connect(path: str, serial: int) -> Message:
    return Message(message_type=MessageType.METHOD_CALL, path=path, interface=DEVICE, member="Connect",
                   sender=":1.7", serial=serial, destination="org.bluez")


def reply(serial: int, error: bool = False) -> Message:
    if error:
        return Message(message_type=MessageType.ERROR, error_name="org.bluez.Error.Failed", reply_serial=serial,
                       destination=":1.7", sender=":1.1", serial=900 + serial)
    return Message(message_type=MessageType.METHOD_RETURN, reply_serial=serial, destination=":1.7", sender=":1.1",
                   serial=900 + serial)


def changed(path: str, connected: bool) -> Message:
    return Message(message_type=MessageType.SIGNAL, path=path, interface="org.freedesktop.DBus.Properties",
                   member="PropertiesChanged", signature="sa{sv}as",
                   body=[DEVICE, {"Connected": Variant("b", connected)}, []], sender=":1.1", serial=800)


def test_a_connect_answered_on_a_device_already_linked_is_no_link_once_that_link_goes():
    links = Links()
    links.on_message(connect(A, 1))
    links.on_message(changed(A, True))
    links.on_message(reply(1))
    # Connect again while the link is up: BlueZ answers at once, Connected does not change.
    links.on_message(connect(A, 2))
    links.on_message(reply(2))
    links.on_message(changed(A, False))
    links.on_message(connect(B, 3))
    assert links.report()["most_at_connect"]["/org/bluez/hci0"] == 1


def test_a_connect_not_yet_answered_holds_a_slot_until_its_error():
    links = Links()
    links.on_message(connect(A, 1))
    links.on_message(connect(B, 2))
    assert links.report()["most_at_connect"]["/org/bluez/hci0"] == 2
    links.on_message(reply(1, error=True))
    links.on_message(connect(A, 3))
    assert links.report()["most_links"]["/org/bluez/hci0"] == 2


def test_the_report_names_what_was_held_at_the_most_crowded_connect():
    links = Links()
    links.on_message(connect(A, 1))
    links.on_message(changed(A, True))
    links.on_message(connect(B, 2))
    held = links.report()["held_at_most"]["/org/bluez/hci0"]
    assert held == {A.rsplit("/", 1)[1]: "link", B.rsplit("/", 1)[1]: "this connect"}


def test_a_link_seen_going_down_before_the_snapshot_arrived_is_not_taken_from_the_snapshot():
    # The snapshot (GetManagedObjects) was answered while A was linked; the monitor saw A's
    # link go down before that answer was read: A holds no slot.
    links = Links()
    links.on_message(changed(A, False))
    links.known_linked(A)
    links.known_linked(B)
    c = "/org/bluez/hci0/dev_00_AA_01_05_00_05"
    links.on_message(connect(c, 1))
    assert links.report()["most_at_connect"]["/org/bluez/hci0"] == 2
    assert links.report()["held_at_most"]["/org/bluez/hci0"] == {
        B.rsplit("/", 1)[1]: "link", c.rsplit("/", 1)[1]: "this connect"}
