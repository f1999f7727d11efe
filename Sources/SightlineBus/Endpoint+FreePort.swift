import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension Endpoint {
    /// A TCP port on 127.0.0.1 that was free a moment ago (bound, then closed): for tests
    /// and benchmarks that need real sockets.
    ///
    /// Taken below the kernel's range for outgoing connections' own ports, so that a
    /// connection made in between never takes it, and each call tries the port after the
    /// last one handed out, so that tests running side by side never get the same one (the
    /// kernel's pick for port 0 comes from that range, and can come again).
    package static func freeLoopbackPort() -> Int {
        let ports = portsBelowEphemeral
        for _ in 0..<ports.count {
            let port = ports.lowerBound + nextPort.add(1, ordering: .relaxed).oldValue % ports.count
            if boundPort(port) == port { return port }
        }
        return boundPort(0)
    }

    /// The range walked: up to 8,000 ports below the first of `ip_local_port_range`
    /// (32768 by default).
    private static let portsBelowEphemeral: Range<Int> = {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let first = text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32768
        return max(1024, first - 8000)..<max(1025, first)
    }()

    /// Where the next call starts in that range: a place of this process's own at first.
    private static let nextPort = Atomic<Int>(Int(getpid()) % 8000)

    /// Binds a socket to `port` on 127.0.0.1 (0: the kernel's pick) and closes it; the port
    /// it had, or 0 when it could not bind.
    private static func boundPort(_ port: Int) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { return 0 }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
