import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// What keeps an HTTP server of ours (the console, the metrics endpoint) answering whatever
/// its clients do: a connection that sends nothing for `idleTimeout` is closed (an idle
/// keep-alive and a client that never finishes its headers alike), and beyond
/// `maximumConnections` open at once a new connection is answered 503 and closed, so that
/// idle sockets can neither take every descriptor the process has nor starve the probes.
package struct ServerLimits: Sendable {
    package var idleTimeout: Duration
    package var maximumConnections: Int

    /// 30 s idle, and at most 4,096 connections or a quarter of the descriptors the process
    /// may open, whichever is fewer (16 at the least): the recorder keeps the rest.
    package static var standard: ServerLimits {
        ServerLimits(idleTimeout: .seconds(30), maximumConnections: min(4096, max(16, DescriptorLimit.current / 4)))
    }

    package init(idleTimeout: Duration, maximumConnections: Int) {
        self.idleTimeout = idleTimeout
        self.maximumConnections = maximumConnections
    }

    /// The HTTP/1 server builder to give `Application(server:)`; refusals are logged to
    /// `logger`, at most one line every 10 s.
    package func server(logger: Logger) -> HTTPServerBuilder {
        let counter = ConnectionCounter(limit: maximumConnections, logger: logger)
        let timeout = TimeAmount.nanoseconds(Int64(idleTimeout.components.seconds) * 1_000_000_000)
        return .http1(
            configuration: .init(
                additionalChannelHandlers: [ConnectionLimitHandler(counter: counter)], idleTimeout: timeout))
    }
}

/// Open connections of one server, and those refused; any event loop.
final class ConnectionCounter: Sendable {
    let limit: Int
    private let logger: Logger
    private let open = Atomic(0)
    private let refusals = Mutex((total: 0, loggedAt: ContinuousClock.Instant?.none))

    init(limit: Int, logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    func refused() {
        let total: Int? = refusals.withLock { state in
            state.total += 1
            let now = ContinuousClock.now
            if let last = state.loggedAt, now - last < .seconds(10) { return nil }
            state.loggedAt = now
            return state.total
        }
        if let total {
            logger.warning(
                "HTTP connection refused with 503: \(limit) connections are open, the limit",
                metadata: ["refusedSoFar": "\(total)"])
        }
    }

    /// What became of a new connection.
    enum Admission { case admitted, refused, dropped }

    /// Counts a new connection: admitted up to the limit; past it, a few more (a quarter of
    /// the limit, 64 at most) are held for a second to be refused with 503, and the rest are
    /// dropped at once, so that those past the limit hold few descriptors.
    func opened() -> Admission {
        let count = open.wrappingAdd(1, ordering: .relaxed).newValue
        if count <= limit { return .admitted }
        return count <= limit + min(64, max(1, limit / 4)) ? .refused : .dropped
    }

    func closed() { open.wrappingSubtract(1, ordering: .relaxed) }
}

/// In each connection's pipeline, after HTTP decoding: a connection beyond the limit gets
/// `503 Service Unavailable` to its first request, then is closed. Its event loop only.
final class ConnectionLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let counter: ConnectionCounter
    private var counted = false
    private var overLimit = false

    init(counter: ConnectionCounter) { self.counter = counter }

    func handlerAdded(context: ChannelHandlerContext) {
        counted = true
        let admission = counter.opened()
        overLimit = admission != .admitted
        guard overLimit else { return }
        counter.refused()
        // One too many gets a second to send its request and be told 503; one that sends
        // nothing must not keep the descriptor, nor one past the few that may wait.
        let channel = context.channel
        if admission == .dropped { return channel.close(promise: nil) }
        context.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { release() }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    private func release() {
        if counted { counter.closed() }
        counted = false
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard overLimit else { return context.fireChannelRead(data) }
        guard case .head = unwrapInboundIn(data) else { return }
        let head = HTTPResponse(
            status: .serviceUnavailable, headerFields: [.contentLength: "0", .connection: "close", .retryAfter: "1"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        // The write completes on the channel's event loop, where the context may be used.
        let onLoop = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in onLoop.value.close(promise: nil) }
    }
}
