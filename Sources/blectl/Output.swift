import BlectlCore

#if canImport(Glibc)
import Glibc
#endif

/// Where blectl writes: results to standard output, diagnostics to standard error.
enum Output {
    /// The process environment.
    static let environment: [String: String] = {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }()

    /// Whether standard output is a terminal.
    static let isTerminal = isatty(STDOUT_FILENO) == 1

    /// Colour for standard output.
    static let style = TextStyle.detect(isTerminal: isTerminal, environment: environment)

    /// Prints one line of results.
    static func line(_ text: String) {
        print(text)
    }

    /// Prints lines of results.
    static func lines(_ texts: [String]) {
        for text in texts { print(text) }
    }

    /// Prints a diagnostic line to standard error.
    static func error(_ text: String) {
        fflush(nil)
        let bytes = Array((text.hasSuffix("\n") ? text : text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// Writes buffered output now (live output, before exiting).
    static func flush() {
        fflush(nil)
    }
}
