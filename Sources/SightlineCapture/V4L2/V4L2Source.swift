import CV4L2
import Foundation
import Logging
import SightlineCore

/// Frames from a V4L2 camera through libv4l2, with mmap streaming.
///
/// Frame times come from the driver's buffer timestamps (monotonic, in microseconds) and
/// the driver's sequence numbers reveal frames lost before they reached us: they are
/// reported as skipped (`driverDropped`). When the device fails or disappears (ENODEV, EIO,
/// no frame for `stallTimeout`), `read()` reports `.interrupted`, then reopens the device
/// with backoff and reports `.resumed` when frames flow again, like
/// `AVCaptureSessionWasInterrupted` and `InterruptionEnded`. A device that stays away for
/// `reconnectTimeout` ends the source.
package final class V4L2Source: FrameSource {
    package struct Options: Sendable {
        package var width: Int?
        package var height: Int?
        package var frameRate: Double?
        package var pixelFormat: V4L2PixelFormat?
        /// How long a device may be gone before the source gives up.
        package var reconnectTimeout: Duration = .seconds(30)
        /// How long without a frame counts as a stalled stream.
        package var stallTimeout: Duration = .seconds(2)
        package var bufferCount = 4
        /// Controls set after the device opens, and again after every reconnect.
        package var controls: [V4L2ControlRequest] = []

        package init() {}
    }

    /// What the device delivers.
    package struct Mode: Sendable, Equatable, CustomStringConvertible {
        package var pixelFormat: V4L2PixelFormat
        package var width: Int
        package var height: Int
        package var frameRate: Double

        package var description: String { "\(width)x\(height) \(pixelFormat) at \(formatRate(frameRate)) fps" }
    }

    /// What Sightline asks for when told nothing: detection runs well at 640x480.
    package static let defaultMode = (width: 640, height: 480, frameRate: 30.0)

    package let path: String
    package let options: Options
    package private(set) var mode: Mode
    package let input: InputDescription
    package private(set) var endReason: String?
    /// Whether the mode was chosen by Sightline rather than fully given.
    package let modeWasChosen: Bool
    /// The camera's controls, which any thread may list and change while it runs.
    package let controls: CameraControls
    private let logger: Logger

    private var fd: Int32 = -1
    private var buffers: [(pointer: UnsafeMutableRawPointer, length: Int)] = []
    private var converter: CapturedFrameConverter
    private var lastSequence: UInt32?
    private var pendingFrame: VideoFrame?
    private var lastFrameAt = ContinuousClock.now
    private var interruptedSince: ContinuousClock.Instant?
    private var backoff: Duration = .milliseconds(250)
    private let interrupt = InterruptFlag()
    /// While interrupted: the observer of cameras appearing, which ends a wait to reconnect.
    private var arrivals: Int?
    private var frameIndex = 0
    /// Time from dequeuing a buffer to giving it back, converting in between: what capture
    /// costs per frame, waiting for the camera aside.
    package private(set) var captureTiming = TimingCounters()

    package init(path: String, options: Options = Options(), logger: Logger = Logger(label: "sightline.camera")) throws
    {
        self.path = path
        self.options = options
        self.logger = logger
        controls = CameraControls(path: path, wanted: options.controls, logger: logger)
        let fd = try V4L2Handle.open(path)
        do {
            let device = try V4L2Device(path: path, fd: fd)
            let chosen = try Self.chooseMode(device, options)
            modeWasChosen = options.width == nil || options.frameRate == nil || options.pixelFormat == nil
            let configured = try Self.configure(fd, path: path, mode: chosen)
            mode = configured.mode
            converter = try Self.converter(mode: configured.mode, bytesPerLine: configured.bytesPerLine)
        } catch {
            v4l2_close(fd)
            throw error
        }
        input = InputDescription(
            url: path, width: mode.width, height: mode.height, pixelFormat: mode.pixelFormat.description,
            frameRate: mode.frameRate)
        self.fd = fd
        DeviceEvents.startWatching()  // so that a camera unplugged and back is seen from now on
        controls.attach(fd)
        try startStreaming()  // on failure, deinit closes the device
    }

    deinit {
        stopObservingArrivals()
        stopStreaming()
    }

    private func stopObservingArrivals() {
        if let arrivals { DeviceEvents.stopObserving(arrivals) }
        arrivals = nil
    }

    package func cancel() { interrupt.set() }

    // MARK: Choosing a mode

    /// The closest supported mode to what was asked for (or to 640x480 at 30 fps), or an
    /// error that lists what the device offers.
    static func chooseMode(_ device: V4L2Device, _ options: Options) throws -> Mode {
        let offered = "it offers \(device.supportedSummary)"
        var formats = device.formats.filter { $0.pixelFormat.isSupported && !$0.sizes.isEmpty }
        if let wanted = options.pixelFormat {
            formats = formats.filter { $0.pixelFormat == wanted }
            guard !formats.isEmpty else {
                throw SightlineError.sourceUnavailable(source: device.path, reason: "no \(wanted) capture; \(offered)")
            }
        }
        guard !formats.isEmpty else {
            throw SightlineError.sourceUnavailable(
                source: device.path, reason: "no pixel format Sightline can read; \(offered)")
        }
        var candidates: [(mode: Mode, score: Double)] = []
        let target = (
            width: options.width ?? defaultMode.width, height: options.height ?? defaultMode.height,
            rate: options.frameRate ?? defaultMode.frameRate
        )
        for format in formats {
            let preference = Double(V4L2PixelFormat.supported.firstIndex(of: format.pixelFormat) ?? 99)
            for size in format.sizes {
                if options.width != nil, size.width != target.width || size.height != target.height { continue }
                for rate in size.frameRates.isEmpty ? [target.rate] : size.frameRates {
                    if options.frameRate != nil, abs(rate - target.rate) > 0.5 { continue }
                    let area =
                        abs(Double(size.width * size.height - target.width * target.height))
                        / Double(target.width * target.height)
                    // Size first, then a rate near the target (a little faster is better than slower), then format.
                    let rateScore = rate >= target.rate ? (rate - target.rate) / 100 : (target.rate - rate) / 10
                    candidates.append(
                        (
                            Mode(
                                pixelFormat: format.pixelFormat, width: size.width, height: size.height, frameRate: rate
                            ),
                            area * 1000 + rateScore * 10 + preference / 100
                        ))
                }
            }
        }
        guard let best = candidates.min(by: { $0.score < $1.score }) else {
            var wanted = options.width.map { "\($0)x\(options.height ?? 0)" } ?? ""
            if let rate = options.frameRate { wanted += " at \(formatRate(rate)) fps" }
            if let format = options.pixelFormat { wanted += " in \(format)" }
            throw SightlineError.sourceUnavailable(
                source: device.path,
                reason: "does not support \(wanted.trimmingCharacters(in: .whitespaces)); \(offered)")
        }
        return best.mode
    }

    /// Sets the mode; returns what the driver actually set and its bytes per line.
    private static func configure(_ fd: Int32, path: String, mode: Mode) throws -> (mode: Mode, bytesPerLine: Int) {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.width = UInt32(mode.width)
        format.fmt.pix.height = UInt32(mode.height)
        format.fmt.pix.pixelformat = mode.pixelFormat.fourCC
        format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        guard cv4l2_ioctl(fd, cv4l2_s_fmt(), &format) == 0 else {
            throw deviceError(path, "cannot set \(mode)")
        }
        var actual = mode
        actual.width = Int(format.fmt.pix.width)
        actual.height = Int(format.fmt.pix.height)
        guard format.fmt.pix.pixelformat == mode.pixelFormat.fourCC else {
            throw SightlineError.sourceUnavailable(source: path, reason: "the driver refused \(mode.pixelFormat)")
        }
        var parameters = v4l2_streamparm()
        parameters.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        parameters.parm.capture.timeperframe = v4l2_fract(
            numerator: 1000, denominator: UInt32((mode.frameRate * 1000).rounded()))
        if cv4l2_ioctl(fd, cv4l2_s_parm(), &parameters) == 0 {
            let fraction = parameters.parm.capture.timeperframe
            if fraction.numerator > 0 {
                actual.frameRate = (Double(fraction.denominator) / Double(fraction.numerator) * 1000).rounded() / 1000
            }
        }
        return (actual, Int(format.fmt.pix.bytesperline))
    }

    /// The error for a failed request: a busy device says so, others name what failed.
    private static func deviceError(_ path: String, _ action: String) -> SightlineError {
        .sourceUnavailable(
            source: path,
            reason: errno == EBUSY
                ? "the device is busy: another process is using it" : "\(action): \(String(cString: strerror(errno)))")
    }

    private static func converter(mode: Mode, bytesPerLine: Int) throws -> CapturedFrameConverter {
        try CapturedFrameConverter(
            pixelFormat: mode.pixelFormat, width: mode.width, height: mode.height,
            bytesPerLine: bytesPerLine > 0 ? bytesPerLine : defaultBytesPerLine(mode))
    }

    private static func defaultBytesPerLine(_ mode: Mode) -> Int {
        switch mode.pixelFormat {
        case .yuyv, .uyvy: mode.width * 2
        case .rgb24, .bgr24: mode.width * 3
        default: mode.width
        }
    }

    // MARK: Streaming

    private func startStreaming() throws {
        var request = v4l2_requestbuffers()
        request.count = UInt32(options.bufferCount)
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        guard cv4l2_ioctl(fd, cv4l2_reqbufs(), &request) == 0, request.count > 0 else {
            throw Self.deviceError(path, "cannot allocate capture buffers")
        }
        for index in 0..<request.count {
            var buffer = v4l2_buffer()
            buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buffer.memory = V4L2_MEMORY_MMAP.rawValue
            buffer.index = index
            guard cv4l2_ioctl(fd, cv4l2_querybuf(), &buffer) == 0,
                let pointer = v4l2_mmap(
                    nil, Int(buffer.length), PROT_READ | PROT_WRITE, MAP_SHARED, fd, Int64(buffer.m.offset)),
                pointer != MAP_FAILED
            else {
                throw Self.deviceError(path, "cannot map capture buffers")
            }
            buffers.append((pointer, Int(buffer.length)))
            guard cv4l2_ioctl(fd, cv4l2_qbuf(), &buffer) == 0 else {
                throw Self.deviceError(path, "cannot queue capture buffers")
            }
        }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        guard cv4l2_ioctl(fd, cv4l2_streamon(), &type) == 0 else {
            throw Self.deviceError(path, "cannot start streaming")
        }
        lastFrameAt = .now
        lastSequence = nil
    }

    private func stopStreaming() {
        guard fd >= 0 else { return }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        _ = cv4l2_ioctl(fd, cv4l2_streamoff(), &type)
        for buffer in buffers { v4l2_munmap(buffer.pointer, buffer.length) }
        buffers.removeAll()
        controls.detach()
        v4l2_close(fd)
        fd = -1
    }

    package func read() throws -> SourceRead {
        if let frame = pendingFrame {
            pendingFrame = nil
            return .frame(frame)
        }
        if interruptedSince != nil { return reconnect() }
        while !interrupt.isSet {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 100)
            if ready < 0 {
                if errno == EINTR { continue }
                return interrupted(String(cString: strerror(errno)))
            }
            if ContinuousClock.now - lastFrameAt > options.stallTimeout {
                return interrupted("no frame for \(formatRate(options.stallTimeout.milliseconds / 1000)) s (stalled)")
            }
            if ready == 0 { continue }
            var buffer = v4l2_buffer()
            buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buffer.memory = V4L2_MEMORY_MMAP.rawValue
            guard cv4l2_ioctl(fd, cv4l2_dqbuf(), &buffer) == 0 else {
                let failure = errno
                // An error condition on the node with nothing to dequeue: the device is gone.
                let hungUp = descriptor.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
                if (failure == EAGAIN || failure == EINTR) && !hungUp { continue }
                return interrupted(
                    failure == ENODEV || hungUp
                        ? "the device disappeared (\(failure == ENODEV ? "ENODEV" : "hang-up"))"
                        : "\(String(cString: strerror(failure))) (errno \(failure))")
            }
            lastFrameAt = .now
            let result = deliver(buffer)
            var requeue = buffer
            if cv4l2_ioctl(fd, cv4l2_qbuf(), &requeue) != 0 {
                return interrupted("cannot requeue a buffer: \(String(cString: strerror(errno)))")
            }
            captureTiming.record(milliseconds: (ContinuousClock.now - lastFrameAt).milliseconds)
            return result
        }
        return .end
    }

    /// Converts a dequeued buffer (before it goes back to the driver).
    private func deliver(_ buffer: v4l2_buffer) -> SourceRead {
        let lost = lastSequence.map { Int(buffer.sequence &- $0 &- 1) } ?? 0
        lastSequence = buffer.sequence
        if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 { return .skipped(reason: "corrupt", count: 1) }
        let mapped = buffers[Int(buffer.index)]
        let pixels: PixelBuffer
        do {
            pixels = try converter.convert(
                UnsafeRawBufferPointer(start: mapped.pointer, count: min(Int(buffer.bytesused), mapped.length)))
        } catch {
            return .skipped(reason: "corrupt", count: 1)
        }
        let microseconds = Int64(buffer.timestamp.tv_sec) * 1_000_000 + Int64(buffer.timestamp.tv_usec)
        let frame = VideoFrame(
            pixels: pixels, time: MediaTime(value: microseconds, timescale: 1_000_000),
            duration: MediaTime(seconds: 1 / mode.frameRate, timescale: 1_000_000),
            wallClockNanoseconds: WallClock.nowNanoseconds(), index: frameIndex)
        frameIndex += 1
        guard lost > 0, lost < 1 << 20 else { return .frame(frame) }
        pendingFrame = frame
        return .skipped(reason: "driverDropped", count: lost)
    }

    private func interrupted(_ reason: String) -> SourceRead {
        stopStreaming()
        interruptedSince = .now
        backoff = .milliseconds(250)
        // From now on, not only once reconnecting starts: a camera back before then ends
        // the first wait at once.
        let interrupt = interrupt
        arrivals = DeviceEvents.observeCameraArrivals { interrupt.nudge() }
        return .interrupted(reason: "\(path): \(reason)")
    }

    /// Reopens the device with backoff until it streams again or `reconnectTimeout` passes;
    /// a camera appearing (a kernel uevent) ends the wait at once. The controls are set
    /// again before frames flow.
    private func reconnect() -> SourceRead {
        guard let since = interruptedSince else { return .end }
        defer { stopObservingArrivals() }
        var notice = WaitNotice()
        while !interrupt.isSet {
            if ContinuousClock.now - since > options.reconnectTimeout {
                endReason =
                    "\(path) did not come back within \(formatRate(options.reconnectTimeout.milliseconds / 1000)) s"
                return .end
            }
            let deadline = ContinuousClock.now + backoff
            if interrupt.sleep(until: deadline) { break }
            // Woken by a camera appearing: its /dev/v4l links may follow a moment later
            // (udev makes them), so the next tries come soon.
            let appeared = ContinuousClock.now < deadline
            if appeared { backoff = .milliseconds(100) }
            do {
                fd = try V4L2Handle.open(path)
                mode = try Self.configure(fd, path: path, mode: mode).mode
                controls.attach(fd)
                try startStreaming()
                interruptedSince = nil
                if appeared { logger.notice("the camera appeared; opened at once", metadata: ["device": "\(path)"]) }
                return .resumed
            } catch {
                stopStreaming()
                backoff = min(backoff * 2, .seconds(5))
                if let waited = notice.secondsIfDue() {
                    logger.notice(
                        "still waiting for the camera to come back",
                        metadata: [
                            "device": "\(path)", "waited": "\(waited) s", "next-try-in": "\(backoff)",
                            "reason": "\(error)",
                        ])
                }
            }
        }
        return .end
    }
}

extension V4L2Source {
    /// Whether `path` names a device node (a camera) rather than a file or URL.
    package static func isDevice(_ path: String) -> Bool {
        path.hasPrefix("/dev/")
    }
}
