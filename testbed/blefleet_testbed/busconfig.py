"""The testbed's D-Bus configuration: a system bus that admits everyone (a test fixture)."""

from __future__ import annotations

_TEMPLATE = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>{listen}</listen>
  <auth>EXTERNAL</auth>{anonymous}
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_type="method_return"/>
    <allow send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="signal"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
  </policy>
  <limit name="max_connections_per_user">4096</limit>
  <limit name="max_match_rules_per_connection">100000</limit>
  <limit name="max_replies_per_connection">100000</limit>
</busconfig>
"""


def bus_config(listen: str, anonymous: bool = False) -> str:
    extra = "\n  <auth>ANONYMOUS</auth>\n  <allow_anonymous/>" if anonymous else ""
    return _TEMPLATE.format(listen=listen, anonymous=extra)
