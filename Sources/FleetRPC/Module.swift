// Module FleetRPC: see Package.swift for its place in the layers.
