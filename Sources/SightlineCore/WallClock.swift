#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Wall-clock time as carried in message headers: nanoseconds since 1970 (UTC).
package enum WallClock {
    package static func nowNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

/// CPU time the calling thread has spent: what a piece of work costs, whatever else runs on
/// the machine meanwhile (a wall-clock time grows when the thread waits for a core).
package enum ThreadCPUClock {
    package static var seconds: Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
