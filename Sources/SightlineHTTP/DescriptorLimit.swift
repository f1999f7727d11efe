#if canImport(Glibc)
    import Glibc
#endif

/// The process's limit on open files (`RLIMIT_NOFILE`). A service raises its soft limit to
/// the hard one at start: systemd's default soft limit is 1,024, which a few hundred idle
/// HTTP clients and a recorder's files reach together.
package enum DescriptorLimit {
    /// The soft limit now.
    package static var current: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(clamping: limit.rlim_cur)
    }

    /// Raises the soft limit to the hard limit; returns the limit in force afterwards.
    @discardableResult
    package static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return current }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return current
    }
}
