/// The version of blefleet (daemon, client and protocol), in one place.
public enum BlefleetVersion {
    public static let current = "0.1.0"
}
