import Logging

/// Logs a warning that can repeat (a malformed message, a flood) at most once per
/// `interval` for each reason, saying how many were left out in between: bad input from
/// another service is always counted, but cannot flood the log.
///
/// Not thread-safe: one owner, as the subscriber or input that uses it.
package struct RateLimitedLog {
    private let logger: Logger
    private let interval: Duration
    private var reasons: [String: (logged: ContinuousClock.Instant, suppressed: Int)] = [:]

    package init(logger: Logger, interval: Duration = .seconds(10)) {
        self.logger = logger
        self.interval = interval
    }

    package mutating func warning(_ message: String, reason: String, metadata: Logger.Metadata = [:]) {
        let now = ContinuousClock.now
        if let previous = reasons[reason], now - previous.logged < interval {
            reasons[reason]!.suppressed += 1
            return
        }
        var metadata = metadata
        if let suppressed = reasons[reason]?.suppressed, suppressed > 0 {
            metadata["alsoSinceLastLine"] = "\(suppressed)"
        }
        reasons[reason] = (now, 0)
        logger.warning("\(message)", metadata: metadata)
    }
}
