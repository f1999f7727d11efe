import CV4L2
import Foundation
import SightlineCore
import Synchronization

/// A camera or microphone that came or went, as AVFoundation's
/// `AVCaptureDeviceWasConnected` and `…WasDisconnected` notifications say.
package struct DeviceEvent: Sendable, Codable, Equatable, CustomStringConvertible {
    package enum Change: String, Sendable, Codable { case added, removed }
    package enum Kind: String, Sendable, Codable { case camera, microphone }

    package var change: Change
    package var kind: Kind
    /// `/dev/video0` for a camera; the ALSA name `--audio-device` takes (`hw:1,0`) for a microphone.
    package var device: String

    package var description: String { "\(kind) \(change): \(device)" }

    /// The event a kernel uevent announces: `KEY=VALUE` strings after an `action@devpath`
    /// line, NUL-separated. nil for other devices and for anything that does not parse.
    package init?(uevent: some Collection<UInt8>) {
        var fields: [String: String] = [:]
        for part in uevent.split(separator: 0).prefix(64) {
            let text = String(decoding: part, as: UTF8.self)
            guard let equals = text.firstIndex(of: "=") else { continue }
            fields[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        switch fields["ACTION"] {
        case "add": change = .added
        case "remove": change = .removed
        default: return nil
        }
        guard let name = fields["DEVNAME"], !name.contains(".."), name.utf8.count < 64 else { return nil }
        switch fields["SUBSYSTEM"] {
        case "video4linux" where name.hasPrefix("video"):
            kind = .camera
            device = "/dev/\(name)"
        case "sound":
            // A capture PCM: snd/pcmC<card>D<device>c.
            guard name.hasPrefix("snd/pcmC"), name.hasSuffix("c") else { return nil }
            let numbers = name.dropFirst(8).dropLast().split(separator: "D")
            guard numbers.count == 2, let card = Int(numbers[0]), let pcm = Int(numbers[1]) else { return nil }
            kind = .microphone
            device = "hw:\(card),\(pcm)"
        default: return nil
        }
    }

    package init(change: Change, kind: Kind, device: String) {
        (self.change, self.kind, self.device) = (change, kind, device)
    }
}

/// The kernel's device announcements (uevents on a netlink socket), read on a thread of
/// its own: what `devices --watch` prints, and what wakes a camera source waiting to open
/// its device again, so a camera plugged back in opens at once instead of at the next retry.
package final class DeviceEvents: Sendable {
    private let fd: Int32

    /// Throws when the kernel's uevents cannot be read (a container without netlink).
    package init() throws {
        fd = cv4l2_uevent_socket()
        guard fd >= 0 else {
            throw SightlineError.sourceUnavailable(
                source: "uevents", reason: "cannot read the kernel's device events: \(String(cString: strerror(errno)))"
            )
        }
    }

    deinit { close(fd) }

    /// Blocks until a camera or microphone comes or goes. nil when the socket fails.
    package func next() -> DeviceEvent? {
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let length = buffer.withUnsafeMutableBytes { cv4l2_uevent_receive(fd, $0.baseAddress, UInt($0.count)) }
            if length < 0 {
                if errno == EINTR || errno == ENOBUFS { continue }  // ENOBUFS: a burst overflowed; go on
                return nil
            }
            if let event = DeviceEvent(uevent: buffer.prefix(length)) { return event }
        }
    }

    // MARK: Cameras appearing, for sources waiting for theirs

    /// Calls every observer when a camera appears. Started with the first observer; when
    /// uevents cannot be read, sources simply retry on their schedule.
    private static let observers = Mutex<(started: Bool, next: Int, calls: [Int: @Sendable () -> Void])>(
        (false, 0, [:]))

    /// Calls `body` (on the events thread) each time a camera appears, until the token is
    /// removed.
    static func observeCameraArrivals(_ body: @escaping @Sendable () -> Void) -> Int {
        startWatching()
        return observers.withLock { state in
            defer { state.next += 1 }
            state.calls[state.next] = body
            return state.next
        }
    }

    /// Starts reading the kernel's events, once a process.
    static func startWatching() {
        let start = observers.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        if start, let events = try? DeviceEvents() {
            let thread = Thread {
                while let event = events.next() {
                    guard event.kind == .camera, event.change == .added else { continue }
                    for call in observers.withLock({ Array($0.calls.values) }) { call() }
                }
            }
            thread.name = "device-events"
            thread.start()
        }
    }

    static func stopObserving(_ token: Int) {
        _ = observers.withLock { $0.calls.removeValue(forKey: token) }
    }

    /// Waits until a camera appears or `delay` has passed; returns whether one appeared.
    package static func cameraArrival(within delay: Duration) async -> Bool {
        let arrivals = AsyncStream<Void> { continuation in
            let token = observeCameraArrivals { continuation.yield() }
            continuation.onTermination = { _ in stopObserving(token) }
        }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in arrivals { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: delay)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
