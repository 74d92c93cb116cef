"""blefleet's BLE testbed: private dbus-daemon + BlueZoo (with BlueZ fidelity fixes) + simulated boards."""
