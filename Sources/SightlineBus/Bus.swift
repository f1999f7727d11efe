/// The process-wide side of messaging.
public enum Bus {
    /// Call once as the process ends, after closing publishers: ZeroMQ delivers what closed
    /// sockets still hold (within their linger time) only while its context lives, and
    /// messages still queued when a process exits are lost.
    public static func finish(within timeout: Duration = .seconds(2)) {
        Context.shared.terminate(within: timeout)
    }
}
