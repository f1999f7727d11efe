import SightlineBus

/// Helpers for tests that use real sockets.
public enum LoopbackPort {
    /// A TCP port on 127.0.0.1 that was free a moment ago.
    public static func free() -> Int { Endpoint.freeLoopbackPort() }
}
