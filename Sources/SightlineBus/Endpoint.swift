import SightlineCore

/// A ZeroMQ endpoint: `tcp://host:port`, `ipc:///path` or `inproc://name`.
public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
    public enum Transport: String, Sendable { case tcp, ipc, inproc }
    public let transport: Transport
    public let address: String
    public var string: String { "\(transport.rawValue)://\(address)" }
    public var description: String { string }

    /// Where `sightline run` publishes unless told otherwise: loopback only.
    public static let defaultPublish = try! Endpoint("tcp://127.0.0.1:5560")

    public init(_ string: String) throws {
        guard let range = string.range(of: "://"),
            let transport = Transport(rawValue: String(string[..<range.lowerBound]))
        else {
            throw SightlineError.invalidEndpoint(
                string, reason: "expected tcp://HOST:PORT, ipc://PATH or inproc://NAME")
        }
        let address = String(string[range.upperBound...])
        guard !address.isEmpty else { throw SightlineError.invalidEndpoint(string, reason: "the address is empty") }
        if transport == .tcp {
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
                (1...65535).contains(port), colon != address.startIndex
            else {
                throw SightlineError.invalidEndpoint(
                    string, reason: "tcp endpoints need HOST:PORT with a port from 1 to 65535")
            }
        }
        self.transport = transport
        self.address = address
    }

    /// The host part of a tcp endpoint.
    public var host: String? {
        guard transport == .tcp, let colon = address.lastIndex(of: ":") else { return nil }
        return String(address[..<colon]).trimmingCharacters(in: ["[", "]"])
    }

    /// Refuses to bind a tcp address other machines can reach, unless CURVE protects it or
    /// the user explicitly allowed it: nothing listens on the network by default.
    func checkBindIsSafe(allowRemote: Bool, curve: CurveServer?) throws {
        guard isLocalOnly || allowRemote || curve != nil else {
            throw SightlineError.invalidEndpoint(
                string,
                reason:
                    "binding beyond loopback needs CURVE keys (--curve-key and --allow); pass --insecure to expose it unauthenticated"
            )
        }
    }

    /// Whether binding here can be reached only from this machine.
    public var isLocalOnly: Bool {
        switch transport {
        case .ipc, .inproc: true
        case .tcp: host.map { ListenAddress.isLoopback($0) || $0 == "lo" } ?? false
        }
    }
}
