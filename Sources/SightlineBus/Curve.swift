import CZMQ
import Foundation
import Logging
import SightlineCore
import Synchronization

/// A CURVE key pair in ZeroMQ's Z85 text form (40 characters each).
public struct CurveKeyPair: Sendable, Equatable {
    public var publicKey: String
    public var secretKey: String

    /// A new random pair.
    public static func generate() throws -> CurveKeyPair {
        guard zmq_has("curve") != 0 else { throw SightlineError.messaging("this libzmq has no CURVE support") }
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicKey, &secretKey) == 0 else { throw SightlineError.messaging(lastError()) }
        return CurveKeyPair(publicKey: String(nulTerminated: publicKey), secretKey: String(nulTerminated: secretKey))
    }

    /// Writes `<name>.key` (both keys, readable by the owner only) and `<name>.pub` (the
    /// public key, to hand out) in `directory`.
    public func write(to directory: String, name: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let secret = "\(directory)/\(name).key"
        try "# Sightline CURVE key pair: keep this file secret\npublic-key = \(publicKey)\nsecret-key = \(secretKey)\n"
            .write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
        try "public-key = \(publicKey)\n".write(toFile: "\(directory)/\(name).pub", atomically: true, encoding: .utf8)
    }

    /// Reads a `.key` file.
    public init(contentsOf path: String) throws {
        let fields = try Self.fields(path)
        guard let publicKey = fields["public-key"], let secretKey = fields["secret-key"] else {
            throw SightlineError.invalidArgument("\(path) is not a key pair file (made by `sightline keys generate`)")
        }
        self.init(publicKey: publicKey, secretKey: secretKey)
    }

    public init(publicKey: String, secretKey: String) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// Reads the public key of a `.pub` or `.key` file.
    public static func publicKey(contentsOf path: String) throws -> String {
        guard let key = try fields(path)["public-key"] else {
            throw SightlineError.invalidArgument("\(path) holds no public key")
        }
        return key
    }

    static func fields(_ path: String) throws -> [String: String] {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw SightlineError.invalidArgument("cannot read key file \(path)")
        }
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            guard parts[1].utf8.count == 40 else {
                throw SightlineError.invalidArgument("\(path): \(parts[0]) is not a 40-character Z85 key")
            }
            fields[parts[0]] = parts[1]
        }
        return fields
    }
}

/// A publisher's CURVE identity and the clients it lets in.
public struct CurveServer: Sendable {
    public var keyPair: CurveKeyPair
    /// Public keys of the subscribers allowed to connect (checked through ZAP).
    public var allowedClients: Set<String>

    public init(keyPair: CurveKeyPair, allowedClients: Set<String>) {
        self.keyPair = keyPair
        self.allowedClients = allowedClients
    }

    /// Public keys from `.pub`/`.key` files, or every such file in a directory.
    public static func allowList(from path: String) throws -> Set<String> {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw SightlineError.invalidArgument("no allow-list at \(path)")
        }
        let files =
            isDirectory.boolValue
            ? try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".pub") }.map {
                "\(path)/\($0)"
            }
            : [path]
        return Set(try files.map(CurveKeyPair.publicKey(contentsOf:)))
    }
}

/// A subscriber's CURVE identity and the publisher key it expects.
public struct CurveClient: Sendable {
    public var keyPair: CurveKeyPair
    public var serverPublicKey: String

    public init(keyPair: CurveKeyPair, serverPublicKey: String) {
        self.keyPair = keyPair
        self.serverPublicKey = serverPublicKey
    }
}

extension Socket {
    /// Sets a text option as its bytes, without a terminating NUL (which ZeroMQ would
    /// otherwise keep as part of a ZAP domain).
    func setOption(_ option: Int32, text: String) {
        var bytes = Array(text.utf8)
        zmq_setsockopt(handle, option, &bytes, bytes.count)
    }

    func makeCurveServer(_ server: CurveServer) {
        let domain = ZAPHandler.shared.register(server.allowedClients)
        setOption(ZMQ_CURVE_SERVER, 1)
        setOption(ZMQ_CURVE_SECRETKEY, text: server.keyPair.secretKey)
        setOption(ZMQ_ZAP_DOMAIN, text: domain)
    }

    func makeCurveClient(_ client: CurveClient) {
        setOption(ZMQ_CURVE_SERVERKEY, text: client.serverPublicKey)
        setOption(ZMQ_CURVE_PUBLICKEY, text: client.keyPair.publicKey)
        setOption(ZMQ_CURVE_SECRETKEY, text: client.keyPair.secretKey)
    }
}

/// ZeroMQ's authentication hook (ZAP, RFC 27): a REP socket on `inproc://zeromq.zap.01`
/// that answers each CURVE handshake with 200 for a client key the server's allow-list
/// holds, 400 otherwise. One handler serves the whole process, so each CURVE server socket
/// gets its own ZAP domain and a key allowed by one server is not let in by another.
/// Runs on its own thread from the first CURVE server on, until the context ends.
final class ZAPHandler: Sendable {
    static let shared = ZAPHandler()
    private let state = Mutex((allowLists: [String: Set<String>](), refusals: [String: Int](), started: false))
    /// The REP socket: bound by the first `register`, then held by the handler's thread
    /// for as long as it serves.
    private let socket = Mutex<Socket?>(nil)

    /// How many handshakes of client `key` were refused so far (for the first 1,024 keys).
    func refusals(of key: String) -> Int { state.withLock { $0.refusals[key, default: 0] } }

    /// Registers one server's allow-list and returns the ZAP domain its socket announces.
    func register(_ clients: Set<String>) -> String {
        state.withLock { state in
            let domain = "sightline-\(state.allowLists.count)"
            state.allowLists[domain] = clients
            if !state.started {
                // The thread does not exist yet: nobody else holds `socket`.
                state.started = socket.withLock { slot in
                    guard let socket = try? Socket(type: ZMQ_REP),
                        (try? socket.bind(Endpoint("inproc://zeromq.zap.01"))) != nil
                    else { return false }
                    slot = socket
                    return true
                }
                if state.started {
                    Thread.start(named: "bus-curve-auth") { [self] in socket.withLock { $0.map(serve) } }
                }
            }
            return domain
        }
    }

    private func allows(domain: [UInt8], key: String) -> Bool {
        state.withLock { state in
            let allowed = state.allowLists[String(decoding: domain, as: UTF8.self)]?.contains(key) ?? false
            // Keys come from whoever connects: the count stays bounded however many they try.
            if !allowed, state.refusals.count < 1024 || state.refusals[key] != nil {
                state.refusals[key, default: 0] += 1
            }
            return allowed
        }
    }

    private func serve(_ socket: Socket) {
        socket.setOption(ZMQ_LINGER, 0)
        // An operator should see that someone is knocking, but a peer retrying every 100 ms
        // must not flood the log.
        var refusalLog = RateLimitedLog(logger: Logger(label: "sightline.curve"))
        while true {
            // Blocks until a handshake arrives; ends with the context (ETERM).
            guard let request = try? socket.receive(timeoutMs: -1) else {
                if zmq_errno() == ETERM { break }
                continue
            }
            // A REP socket must answer every request before it can read the next one.
            var status = "400"
            if request.count >= 7, String(decoding: request[5], as: UTF8.self) == "CURVE", request[6].count == 32 {
                var text = [CChar](repeating: 0, count: 41)
                _ = request[6].withUnsafeBufferPointer { zmq_z85_encode(&text, $0.baseAddress, 32) }
                let key = String(nulTerminated: text)
                if allows(domain: request[2], key: key) {
                    status = "200"
                } else {
                    refusalLog.warning(
                        "a CURVE client was refused: its key is not on the allow-list", reason: "refused",
                        metadata: ["key": "\(key)", "address": "\(String(decoding: request[3], as: UTF8.self))"])
                }
            }
            _ = try? socket.send([
                request.first ?? Array("1.0".utf8), request.count > 1 ? request[1] : [], Array(status.utf8),
                Array((status == "200" ? "OK" : "not allowed").utf8), [],
                [],
            ])
        }
        socket.close()
    }
}
