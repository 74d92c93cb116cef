#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `close(2)`, named apart so it does not clash with methods called `close`.
func closeFileDescriptor(_ fd: Int32) -> Int32 { close(fd) }
