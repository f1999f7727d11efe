import CZMQ
import Foundation
import SightlineCore
import Synchronization

/// Where many sources and many subscribers meet: ZeroMQ's own proxy between an XSUB socket
/// that publishers connect to (`frontend`) and an XPUB socket that subscribers connect to
/// (`backend`). Subscriptions travel upstream, so a publisher still sends only what someone
/// wants. One broker per site; brokers on several hosts can chain.
public final class Broker: Sendable {
    public let frontend: Endpoint
    public let backend: Endpoint
    /// The proxy's sockets: the proxy thread holds the lock from `start()` until `stop()`
    /// has it end (a lock nobody else takes meanwhile, so that the compiler checks who uses
    /// the sockets); then `stop()` closes them.
    private let proxy: Mutex<ProxySockets>
    /// What `stop()` tells the proxy through.
    private let control: Mutex<Socket>
    private let controlEndpoint: Endpoint
    private let finished = DispatchSemaphore(value: 0)

    private struct ProxySockets {
        let frontend: Socket
        let backend: Socket
        var steering: Socket?
    }

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
        let frontendSocket = try Socket(type: ZMQ_XSUB)
        let backendSocket = try Socket(type: ZMQ_XPUB)
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
        let control = try Socket(type: ZMQ_PAIR)
        try control.bind(controlEndpoint)
        self.control = Mutex(control)
        proxy = Mutex(ProxySockets(frontend: frontendSocket, backend: backendSocket))
    }

    /// Forwards messages on a thread of its own until `stop()`.
    public func start() throws {
        try proxy.withLock { sockets in
            let steering = try Socket(type: ZMQ_PAIR)
            try steering.connect(controlEndpoint)
            sockets.steering = steering
        }
        Thread.start(named: "bus-broker") { [self] in
            proxy.withLock { sockets in
                zmq_proxy_steerable(sockets.frontend.handle, sockets.backend.handle, nil, sockets.steering?.handle)
                sockets.steering?.close()
            }
            finished.signal()
        }
    }

    /// Stops forwarding and waits for the proxy thread to end.
    public func stop() {
        control.withLock { control in
            _ = try? control.send([Array("TERMINATE".utf8)])
            finished.wait()
            control.close()
        }
        proxy.withLock { sockets in
            sockets.frontend.close()
            sockets.backend.close()
        }
    }
}
