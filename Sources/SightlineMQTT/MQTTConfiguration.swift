import Foundation
import SightlineCore

/// Where and how the MQTT output connects, and the topics it publishes under
/// (docs/mqtt.md). Every value is checked by `validated()`, so that `run` and `serve --check`
/// refuse a bad one with one line before anything starts.
package struct MQTTConfiguration: Sendable, Equatable {
    /// `mqtt://HOST[:PORT]` (1883) or `mqtts://HOST[:PORT]` (8883, TLS).
    package var url: String
    /// The first level of every topic (`sightline`): no `+`, `#`, NUL or empty level.
    package var prefix = "sightline"
    /// The client ID the broker knows this process by; two processes on one broker need two.
    package var clientID: String?
    package var username: String?
    /// A file holding the password (its first line), so that it is not on a command line.
    package var passwordFile: String?
    /// Certificates for `mqtts://`: the authority that signed the broker's (else the
    /// system's), and this client's own with its key when the broker asks for one.
    package var caFile: String?
    package var certificateFile: String?
    package var keyFile: String?
    /// QoS of events (0, 1 or 2); retained state is sent at QoS 1.
    package var qos: Int32 = 1
    /// Events kept while the broker is unreachable; beyond that the oldest are dropped and
    /// counted.
    package var queueLimit = 1000
    /// What the people topics call a face nobody enrolled (`<prefix>/people/unknown`).
    package var unknownName = "unknown"
    /// Where Home Assistant's discovery messages go; nil: none.
    package var discoveryPrefix: String? = "homeassistant"

    package init(url: String) { self.url = url }

    /// The broker's host, port and whether it speaks TLS, from `url`.
    package struct Broker: Sendable, Equatable {
        package var host: String
        package var port: Int32
        package var tls: Bool
    }

    /// The checked configuration and its broker; one line naming what is wrong otherwise.
    package func validated() throws(SightlineError) -> Broker {
        let broker = try Self.broker(in: url)
        guard Self.isValidTopicLevelPath(prefix) else {
            throw .invalidArgument(
                "MQTT prefix '\(prefix)' must be non-empty topic levels without '+', '#' or an empty level")
        }
        if let clientID, clientID.isEmpty || clientID.utf8.count > 65_535 {
            throw .invalidArgument("MQTT client ID must be 1-65535 bytes")
        }
        guard (0...2).contains(qos) else { throw .invalidArgument("MQTT QoS must be 0, 1 or 2, not \(qos)") }
        guard (1...1_000_000).contains(queueLimit) else {
            throw .invalidArgument("MQTT queue must hold 1 to 1,000,000 events, not \(queueLimit)")
        }
        if let discoveryPrefix, !Self.isValidTopicLevelPath(discoveryPrefix) {
            throw .invalidArgument(
                "MQTT discovery prefix '\(discoveryPrefix)' must be non-empty topic levels without '+', '#' or an empty level"
            )
        }
        guard Self.isValidTopicLevel(unknownName) else {
            throw .invalidArgument("MQTT unknown-face name '\(unknownName)' must be one topic level")
        }
        for (name, path) in [("CA", caFile), ("certificate", certificateFile), ("key", keyFile)] {
            if let path, !FileManager.default.isReadableFile(atPath: path) {
                throw .invalidArgument("MQTT \(name) file '\(path)' cannot be read")
            }
        }
        if (certificateFile == nil) != (keyFile == nil) {
            throw .invalidArgument("an MQTT client certificate needs its key, and a key its certificate")
        }
        if !broker.tls, caFile != nil || certificateFile != nil {
            throw .invalidArgument("MQTT certificates need an mqtts:// URL")
        }
        _ = try password()
        return broker
    }

    /// The password from `passwordFile`, its first line; nil without one.
    package func password() throws(SightlineError) -> String? {
        guard let passwordFile else { return nil }
        guard let data = FileManager.default.contents(atPath: passwordFile), data.count <= 65_535,
            let text = String(data: data, encoding: .utf8)
        else {
            throw .invalidArgument("MQTT password file '\(passwordFile)' cannot be read (at most 64 KiB of UTF-8)")
        }
        return String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
    }

    static func broker(in url: String) throws(SightlineError) -> Broker {
        let schemes: [(prefix: String, port: Int32, tls: Bool)] = [("mqtt://", 1883, false), ("mqtts://", 8883, true)]
        guard let scheme = schemes.first(where: { url.hasPrefix($0.prefix) }) else {
            throw .invalidArgument("MQTT URL '\(url)' must be mqtt://HOST[:PORT] or mqtts://HOST[:PORT]")
        }
        var rest = Substring(url.dropFirst(scheme.prefix.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var host = rest
        var port = scheme.port
        // [v6::address]:port, host:port, or a host alone.
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let value = Int32(after.dropFirst()), (1...65_535).contains(value) else {
                    throw .invalidArgument("MQTT URL '\(url)' has an invalid port")
                }
                port = value
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            guard let value = Int32(rest[rest.index(after: colon)...]), (1...65_535).contains(value) else {
                throw .invalidArgument("MQTT URL '\(url)' has an invalid port")
            }
            port = value
        }
        guard !host.isEmpty, host.utf8.count <= 253,
            host.unicodeScalars.allSatisfy({ $0.isASCII && !" /?#@\u{0}".unicodeScalars.contains($0) })
        else {
            throw .invalidArgument("MQTT URL '\(url)' must name a host")
        }
        return Broker(host: String(host), port: port, tls: scheme.tls)
    }

    /// Levels separated by `/`, each one `isValidTopicLevel`.
    static func isValidTopicLevelPath(_ path: String) -> Bool {
        path.utf8.count <= 256
            && path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy {
                isValidTopicLevel(String($0))
            }
    }

    /// A level of a topic name: not empty, no wildcard (`+`, `#`), separator or NUL.
    static func isValidTopicLevel(_ level: String) -> Bool {
        !level.isEmpty && level.utf8.count <= 128
            && !level.unicodeScalars.contains { "+#/\u{0}".unicodeScalars.contains($0) }
    }
}
