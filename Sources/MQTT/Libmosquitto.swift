import CMosquitto

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// libmosquitto, opened with `dlopen` when the first client is made instead of linked.
///
/// `blectl` carries this module for `--broker` alone; linked, libmosquitto (with libssl and
/// libcrypto) would be loaded and relocated by every `blectl` run. Its functions come from
/// the table in `shim.h`, each typed by mosquitto.h's own declaration and looked up once.
/// The library stays open for the life of the process.
enum Libmosquitto {
    /// The Debian package that holds the library.
    static let package = "libmosquitto1"

    /// libmosquitto's functions, e.g. `publish` for `mosquitto_publish`. The first call opens
    /// the library and runs `mosquitto_lib_init`; every call has the same outcome. Throws
    /// ``MQTTError`` of kind `.libraryMissing` when the library cannot be opened or lacks a
    /// function, `.library` when it cannot be initialised.
    static func load() throws(MQTTError) -> cmosquitto_functions {
        try loaded.get()
    }

    /// The functions if ``load()`` succeeded before, else nil.
    static var functionsIfLoaded: cmosquitto_functions? { try? loaded.get() }

    // Swift's lazy statics are initialised once, thread-safely.
    private static let loaded = Result { () throws(MQTTError) in try open() }

    private static func open() throws(MQTTError) -> cmosquitto_functions {
        guard let library = dlopen(CMOSQUITTO_SONAME, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "\(CMOSQUITTO_SONAME) cannot be opened"
            throw MQTTError(.libraryMissing, "libmosquitto cannot be loaded (\(reason)); install \(package).")
        }
        let table = UnsafeMutablePointer<cmosquitto_functions>.allocate(capacity: 1)
        defer { table.deallocate() }
        if let missing = cmosquitto_resolve(library, table) {
            dlclose(library)
            throw MQTTError(
                .libraryMissing, "The libmosquitto found has no \(String(cString: missing)); install \(package) 1.6 or later.")
        }
        let functions = table.pointee
        guard functions.lib_init() == MOSQ_ERR_SUCCESS.rawValue else {
            throw MQTTError(.library, "libmosquitto could not be initialised.")
        }
        return functions
    }
}
