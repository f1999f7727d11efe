import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Whether the machine's CPU has gone partly unused lately, from the kernel's counters in
/// `/proc/stat`: region tracking looks along a pan's leading edges only while it has
/// (`FaceDetector.Configuration.PanBands.whenCoresIdle`). Those bands find a face entering
/// during a pan in the frame it can first be found in, where the scans beside find it five
/// or more frames later; they cost about as much again as following the faces, which one
/// or two cameras leave room for and six do not.
///
/// Process-wide (`shared`): every source's detector asks it, on its own queue.
package final class IdleCores: Sendable {
    package static let shared = IdleCores()

    /// How often the counters are read again; asked in between, the last answer stands.
    static let interval = Duration.seconds(1)
    /// There is room once at least this fraction of the CPU time since the last reading went
    /// unused, and no more once under `closeBelow`: apart, so that the bands' own cost does
    /// not take the room away again at once.
    static let openAt = 0.6
    static let closeBelow = 0.35

    /// The kernel's idle and total CPU time (in its ticks) at a reading.
    struct Times: Equatable {
        var idle: UInt64
        var total: UInt64
    }

    private struct State {
        var last: Times?
        var readAt: ContinuousClock.Instant?
        var room = false
    }
    private let state = Mutex(State())

    /// Whether there is room now (false until two readings, `interval` apart, say so).
    package var room: Bool {
        state.withLock { state in
            let now = ContinuousClock.now
            if let readAt = state.readAt, now - readAt < Self.interval { return state.room }
            state.readAt = now
            let times = Self.read()
            defer { state.last = times }
            state.room = Self.room(from: state.last, to: times, had: state.room)
            return state.room
        }
    }

    /// The room between two readings, given whether there was room before: none when either
    /// is missing or no time passed.
    static func room(from earlier: Times?, to later: Times?, had: Bool) -> Bool {
        guard let earlier, let later, later.total > earlier.total, later.idle >= earlier.idle else { return false }
        let idle = Double(later.idle - earlier.idle) / Double(later.total - earlier.total)
        return idle >= (had ? closeBelow : openAt)
    }

    /// The first line of `/proc/stat`, or nil where it cannot be read.
    private static func read() -> Times? {
        let file = open("/proc/stat", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var bytes = [UInt8](repeating: 0, count: 256)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let line = String(decoding: bytes[0..<count], as: UTF8.self).prefix { $0 != "\n" }
        return times(line)
    }

    /// The times of `/proc/stat`'s "cpu" line (user, nice, system, idle, iowait, irq,
    /// softirq, steal, then guest time, which user time already holds): idle is idle and
    /// iowait; total, the first eight. Nil for anything else.
    static func times(_ line: Substring) -> Times? {
        let fields = line.split(separator: " ")
        guard fields.first == "cpu", fields.count >= 9 else { return nil }
        let values = fields[1...8].compactMap { UInt64($0) }
        guard values.count == 8 else { return nil }
        let (total, overflow) = values.reduce((UInt64(0), false)) { sum, value in
            let (next, over) = sum.0.addingReportingOverflow(value)
            return (next, sum.1 || over)
        }
        guard !overflow else { return nil }
        return Times(idle: values[3] + values[4], total: total)
    }
}
