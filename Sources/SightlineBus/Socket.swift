import CZMQ
import Foundation
import SightlineCore

/// The process's one ZeroMQ context; it is thread-safe, sockets are not.
final class Context: @unchecked Sendable {
    static let shared = Context()
    let handle: UnsafeMutableRawPointer
    private init() { handle = zmq_ctx_new() }

    /// Lets closed sockets deliver what they still hold, then ends the context: called once,
    /// as the process finishes, because messages still queued when a process exits are
    /// lost. Returns after `timeout` even if some socket was left open.
    func terminate(within timeout: Duration) {
        let done = DispatchSemaphore(value: 0)
        let handle = SendableHandle(handle)
        Thread.start(named: "bus-terminate") {
            zmq_ctx_term(handle.value)
            done.signal()
        }
        _ = done.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds)))
    }
}

/// The context's handle for `zmq_ctx_term` on another thread: the context is thread-safe.
private struct SendableHandle: @unchecked Sendable {
    let value: UnsafeMutableRawPointer
    init(_ value: UnsafeMutableRawPointer) { self.value = value }
}

/// A ZeroMQ socket. Not thread-safe: it belongs to one thread or serial queue at a time.
final class Socket {
    let handle: UnsafeMutableRawPointer

    init(type: Int32) throws {
        guard let handle = zmq_socket(Context.shared.handle, type) else { throw SightlineError.messaging(lastError()) }
        self.handle = handle
        var linger: Int32 = 2000  // ms: pending messages get time to leave on close
        zmq_setsockopt(handle, ZMQ_LINGER, &linger, MemoryLayout<Int32>.size)
    }

    private var closed = false

    deinit { close() }

    /// Closes the socket; what it still holds leaves within its linger time.
    func close() {
        guard !closed else { return }
        closed = true
        zmq_close(handle)
    }

    func setOption(_ option: Int32, _ value: Int32) {
        var value = value
        zmq_setsockopt(handle, option, &value, MemoryLayout<Int32>.size)
    }

    func setOption(_ option: Int32, int64 value: Int64) {
        var value = value
        zmq_setsockopt(handle, option, &value, MemoryLayout<Int64>.size)
    }

    func setOption(_ option: Int32, bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = zmq_setsockopt(handle, option, $0.baseAddress, $0.count) }
    }

    func bind(_ endpoint: Endpoint) throws {
        guard zmq_bind(handle, endpoint.string) == 0 else {
            let code = zmq_errno()
            if code == czmq_eaddrinuse() { throw SightlineError.endpointInUse(endpoint.string) }
            throw SightlineError.invalidEndpoint(endpoint.string, reason: lastError())
        }
    }

    func connect(_ endpoint: Endpoint) throws {
        guard zmq_connect(handle, endpoint.string) == 0 else {
            throw SightlineError.invalidEndpoint(endpoint.string, reason: lastError())
        }
    }

    /// Sends the frames of one multipart message. Returns false when it would block
    /// (a PUB socket never blocks: slow subscribers lose messages at their high-water mark).
    @discardableResult
    func send(_ frames: [[UInt8]], dontWait: Bool = false) throws -> Bool {
        guard !closed else { throw SightlineError.messaging("the socket is closed") }
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = index < frames.count - 1 ? ZMQ_SNDMORE : 0
            if dontWait { flags |= ZMQ_DONTWAIT }
            let sent = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
            if sent < 0 {
                if zmq_errno() == czmq_eagain() { return false }
                throw SightlineError.messaging(lastError())
            }
        }
        return true
    }

    /// Waits up to `timeoutMs` for a message and returns all its frames, or nil on timeout.
    /// A message larger than `maximumBytes` in total is read to its end and thrown away, and
    /// comes back as no frames at all (an empty array), so no huge message is ever held.
    /// Nil after `timeoutMs` (-1: none) without a message, or once `wakeUp` is signalled.
    func receive(timeoutMs: Int32, maximumBytes: Int = 64 << 20, wakeUp: WakeUp? = nil) throws -> [[UInt8]]? {
        guard !closed else { return nil }
        // On the stack: a receive happens for every message.
        let (ready, readable) = withUnsafeTemporaryAllocation(of: zmq_pollitem_t.self, capacity: 2) { items in
            items[0] = zmq_pollitem_t(socket: handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)
            items[1] = zmq_pollitem_t(socket: nil, fd: wakeUp?.descriptor ?? -1, events: Int16(ZMQ_POLLIN), revents: 0)
            let ready = zmq_poll(items.baseAddress, wakeUp == nil ? 1 : 2, Int(timeoutMs))
            return (ready, items[0].revents & Int16(ZMQ_POLLIN) != 0)
        }
        if ready < 0 {
            if zmq_errno() == czmq_eintr() { return nil }
            throw SightlineError.messaging(lastError())
        }
        guard ready > 0, readable else { return nil }
        var frames: [[UInt8]] = []
        var total = 0
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        repeat {
            guard zmq_msg_recv(&message, handle, 0) >= 0 else { throw SightlineError.messaging(lastError()) }
            let size = zmq_msg_size(&message)
            total += size
            if total <= maximumBytes {
                frames.append(Array(UnsafeRawBufferPointer(start: zmq_msg_data(&message), count: size)))
            }
        } while zmq_msg_more(&message) != 0
        return total <= maximumBytes ? frames : []
    }
}

func lastError() -> String { String(cString: zmq_strerror(zmq_errno())) }
