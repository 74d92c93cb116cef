#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A mutex with its condition variable (POSIX threads): what Foundation's `NSCondition`
/// gives, without loading Foundation into `blectl`. Timed waits run on `CLOCK_MONOTONIC`,
/// so setting the wall clock neither stretches nor cuts them.
final class Condition: @unchecked Sendable {
    // Safe: the pthread objects live at fixed addresses for the life of the object and
    // are made for use from any thread; deinit runs when no thread can hold them.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }

    func unlock() { pthread_mutex_unlock(mutex) }

    /// Wakes every thread waiting on the condition. Call with the lock held.
    func broadcast() { pthread_cond_broadcast(condition) }

    /// Unlocks, waits for a broadcast (or a spurious wake-up) and locks again. Call with
    /// the lock held, in a loop that checks what it waits for.
    func wait() { pthread_cond_wait(condition, mutex) }

    /// Like ``wait()``, but returns false once `deadline` has passed.
    func wait(until deadline: Deadline) -> Bool {
        var time = deadline.time
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }

    /// A point on `CLOCK_MONOTONIC`, the clock of the timed waits.
    struct Deadline {
        fileprivate let time: timespec

        /// `delay` from now (now for a negative delay).
        init(in delay: Duration) {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let (seconds, attoseconds) = max(delay, .zero).components
            let nanoseconds = now.tv_nsec + Int(attoseconds / 1_000_000_000)
            time = timespec(
                tv_sec: now.tv_sec + Int(seconds) + nanoseconds / 1_000_000_000, tv_nsec: nanoseconds % 1_000_000_000)
        }
    }
}
