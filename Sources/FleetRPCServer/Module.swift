// Module FleetRPCServer: see Package.swift for its place in the layers.
