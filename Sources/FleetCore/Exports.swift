/// The fleet's vocabulary (addresses, selections, outcomes, error codes, phases) is
/// FleetModel's: FleetCore's users see it with FleetCore.
@_exported public import FleetModel
