// Module Systemd: see Package.swift for its place in the layers.
