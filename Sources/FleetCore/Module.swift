// Module FleetCore: see Package.swift for its place in the layers.
