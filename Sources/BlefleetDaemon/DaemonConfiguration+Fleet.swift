public import FleetCore

extension DaemonConfiguration {
    /// The fleet's part of the configuration.
    public func fleetConfiguration() throws -> FleetConfiguration {
        FleetConfiguration(
            connectionLimit: connectionLimit,
            adapterLimits: adapterConnectionLimits,
            reservedFleetSlots: reservedFleetSlots,
            leasesPerUser: leasesPerUser,
            connectTimeout: .milliseconds(connectTimeoutMilliseconds),
            defaultCommandTimeout: .milliseconds(defaultTimeoutMilliseconds),
            temperatureMaxAge: .milliseconds(temperatureMaxAgeMilliseconds),
            temperatureRefresh: .seconds(temperatureRefreshSeconds),
            adoption: try adoptionPolicy(),
            stateDirectory: stateDirectory,
            profiles: try ProfileFiles.load(directory: profileDirectory))
    }

    /// The settings a running fleet takes on SIGHUP.
    public func fleetTunables() throws -> Fleet.Tunables {
        Fleet.Tunables(
            defaultCommandTimeout: .milliseconds(defaultTimeoutMilliseconds),
            temperatureMaxAge: .milliseconds(temperatureMaxAgeMilliseconds),
            adoption: try adoptionPolicy(),
            profiles: try ProfileFiles.load(directory: profileDirectory))
    }

    func adoptionPolicy() throws -> AdoptionPolicy {
        do {
            return try AdoptionPolicy(autoAdopt: autoAdopt, allowing: allow)
        } catch {
            throw ConfigurationError(source: "configuration", key: "allow", problem: error.message)
        }
    }
}
