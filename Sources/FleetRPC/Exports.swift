/// The fleet's vocabulary (addresses, selections, outcomes, error codes, phases) is
/// FleetModel's, the same the daemon's core speaks: clients see it with FleetRPC.
@_exported public import FleetModel
