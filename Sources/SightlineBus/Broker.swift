import CZMQ
import Foundation
import SightlineCore

/// Where many sources and many subscribers meet: ZeroMQ's own proxy between an XSUB socket
/// that publishers connect to (`frontend`) and an XPUB socket that subscribers connect to
/// (`backend`). Subscriptions travel upstream, so a publisher still sends only what someone
/// wants. One broker per site; brokers on several hosts can chain.
public final class Broker: @unchecked Sendable {
    public let frontend: Endpoint
    public let backend: Endpoint
    private let frontendSocket: Socket
    private let backendSocket: Socket
    private let control: Socket
    private let controlEndpoint: Endpoint
    private let finished = DispatchSemaphore(value: 0)

    /// Binds both endpoints. With `curve`, both sides are CURVE servers: every source and
    /// every subscriber must present a key on the allow-list, and traffic is encrypted. Beyond
    /// loopback, binding needs `curve` or `allowRemote`. `alsoBindBackend`: more endpoints
    /// for subscribers, such as an inproc one for in-process recorders. `upstream`: another
    /// broker's frontend the backend also connects to, as a source would (with `upstreamCurve`
    /// for a CURVE broker), so this broker's sources reach that broker's subscribers.
    public init(
        frontend: Endpoint, backend: Endpoint, alsoBindBackend: [Endpoint] = [], upstream: Endpoint? = nil,
        upstreamCurve: CurveClient? = nil, allowRemote: Bool = false, curve: CurveServer? = nil
    ) throws {
        for endpoint in [frontend, backend] { try endpoint.checkBindIsSafe(allowRemote: allowRemote, curve: curve) }
        self.frontend = frontend
        self.backend = backend
        frontendSocket = try Socket(type: ZMQ_XSUB)
        backendSocket = try Socket(type: ZMQ_XPUB)
        for (socket, endpoint) in [(frontendSocket, frontend), (backendSocket, backend)] {
            socket.setOption(ZMQ_SNDHWM, 10_000)
            socket.setOption(ZMQ_RCVHWM, 10_000)
            // An in-process side (serve's sources) is reachable only from this process.
            if let curve, endpoint.transport != .inproc { socket.makeCurveServer(curve) }
        }
        try frontendSocket.bind(frontend)
        try backendSocket.bind(backend)
        for endpoint in alsoBindBackend { try backendSocket.bind(endpoint) }
        if let upstream {
            if let upstreamCurve { backendSocket.makeCurveClient(upstreamCurve) }
            try backendSocket.connect(upstream)
        }
        controlEndpoint = try Endpoint("inproc://sightline-broker-\(UUID().uuidString)")
        control = try Socket(type: ZMQ_PAIR)
        try control.bind(controlEndpoint)
    }

    /// Forwards messages on a thread of its own until `stop()`.
    public func start() throws {
        let steering = try Socket(type: ZMQ_PAIR)
        try steering.connect(controlEndpoint)
        let sockets = BrokerSockets(frontend: frontendSocket, backend: backendSocket, steering: steering)
        let finished = finished
        Thread.start(named: "bus-broker") {
            zmq_proxy_steerable(sockets.frontend.handle, sockets.backend.handle, nil, sockets.steering.handle)
            sockets.steering.close()
            finished.signal()
        }
    }

    /// Stops forwarding and waits for the proxy thread to end.
    public func stop() {
        _ = try? control.send([Array("TERMINATE".utf8)])
        finished.wait()
        control.close()
        frontendSocket.close()
        backendSocket.close()
    }
}

/// The proxy's sockets, handed to its thread, which alone uses them until `stop()`.
private struct BrokerSockets: @unchecked Sendable {
    let frontend: Socket
    let backend: Socket
    let steering: Socket
}
