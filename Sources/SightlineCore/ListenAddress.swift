/// `HOST:PORT` for a server to listen on (`127.0.0.1:8080`, `[::1]:9560`), and whether only
/// this machine can reach a host: what the console, the metrics endpoint and the bus check
/// before they listen beyond loopback.
package struct ListenAddress: Sendable, Equatable {
    package var host: String
    /// 0-65535; 0 picks a free port.
    package var port: Int

    /// nil when `text` is not `HOST:PORT`.
    package init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), colon != text.startIndex,
            let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port)
        else { return nil }
        var host = text[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        self.host = String(host)
        self.port = port
    }

    /// Whether `host` names this machine's loopback only.
    package static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
