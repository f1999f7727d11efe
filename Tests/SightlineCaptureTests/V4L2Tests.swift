import CV4L2
import Foundation
import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineCapture

/// Against a real V4L2 device: the kernel's vivid driver inside `vivid-run` (tools/test.sh
/// runs this suite there when it is available), or a real camera. Without /dev/video0 the
/// suite reports itself skipped.
@Suite(
    .serialized,
    .enabled(if: FileManager.default.fileExists(atPath: "/dev/video0"), "needs /dev/video0 (vivid-run or a camera)"))
struct V4L2Tests {
    let device = "/dev/video0"

    func options(_ width: Int, _ height: Int, _ rate: Double, _ format: V4L2PixelFormat) -> V4L2Source.Options {
        var options = V4L2Source.Options()
        (options.width, options.height, options.frameRate, options.pixelFormat) = (width, height, rate, format)
        return options
    }

    /// Reads `count` frames, collecting skipped counts by reason.
    func capture(_ source: V4L2Source, count: Int) throws -> (frames: [VideoFrame], skipped: [String: Int]) {
        var frames: [VideoFrame] = []
        var skipped: [String: Int] = [:]
        while frames.count < count {
            switch try source.read() {
            case .frame(let frame): frames.append(frame)
            case .skipped(let reason, let n): skipped[reason, default: 0] += n
            case .interrupted(let reason):
                Issue.record("interrupted: \(reason)")
                return (frames, skipped)
            case .resumed, .end: return (frames, skipped)
            }
        }
        return (frames, skipped)
    }

    func medianInterval(_ frames: [VideoFrame]) -> Double {
        let intervals = zip(frames.dropFirst(), frames).map { ($0.time - $1.time).seconds * 1000 }.sorted()
        return intervals[intervals.count / 2]
    }

    /// Presses vivid's `disconnect` control (what `v4l2-ctl -c disconnect=1` does), from
    /// another thread: the unplug completes while the stream is being read, as a camera's would.
    func unplugInBackground() throws -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let device = device
        Thread.detachNewThread {
            let fd = open(device, O_RDWR)
            defer {
                close(fd)
                done.signal()
            }
            var query = v4l2_queryctrl()
            query.id = UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
            while cv4l2_ioctl(fd, cv4l2_queryctrl(), &query) == 0 {
                if cString(&query.name).lowercased() == "disconnect" {
                    var control = v4l2_control(id: query.id, value: 1)
                    _ = cv4l2_ioctl(fd, cv4l2_s_ctrl(), &control)
                    return
                }
                query.id |= UInt32(V4L2_CTRL_FLAG_NEXT_CTRL)
            }
        }
        return done
    }

    @Test func listsTheDeviceAndItsFormats() throws {
        let devices = V4L2Device.list()
        let camera = try #require(devices.first { $0.path == device })
        #expect(!camera.driver.isEmpty && !camera.card.isEmpty && !camera.bus.isEmpty)
        let yuyv = try #require(camera.formats.first { $0.pixelFormat == .yuyv })
        #expect(yuyv.sizes.contains { $0.width == 640 && $0.height == 480 && !$0.frameRates.isEmpty })
        #expect(camera.formats.contains { $0.pixelFormat == .nv12 })
    }

    /// YUYV at 30 fps (vivid's webcam offers 30 fps up to 640x360, 25 fps at 640x480):
    /// frames converted to yuv420p, timestamps from the driver about 33 ms apart.
    @Test func capturesYUYVAt30FramesPerSecond() throws {
        let source = try V4L2Source(path: device, options: options(640, 360, 30, .yuyv))
        #expect(source.mode == V4L2Source.Mode(pixelFormat: .yuyv, width: 640, height: 360, frameRate: 30))
        let (frames, _) = try capture(source, count: 45)
        #expect(frames.count == 45)
        #expect(frames.allSatisfy { $0.pixels.format == .yuv420p && $0.pixels.width == 640 && $0.pixels.height == 360 })
        #expect(zip(frames.dropFirst(), frames).allSatisfy { $0.time > $1.time })
        #expect(abs(medianInterval(frames) - 1000.0 / 30) < 3, "median \(medianInterval(frames)) ms")
        // vivid draws colour bars: the luma plane is not flat.
        let luma = frames.last!.pixels.packedBytes(plane: 0)
        #expect(Set(luma).count >= 6)
    }

    @Test(arguments: [(V4L2PixelFormat.nv12, PixelFormat.nv12), (.grey, .gray8), (.yu12, .yuv420p)])
    func capturesOtherFormatsAt640x480(format: V4L2PixelFormat, delivered: PixelFormat) throws {
        let source = try V4L2Source(path: device, options: options(640, 480, 25, format))
        let (frames, _) = try capture(source, count: 20)
        #expect(frames.count == 20)
        #expect(
            frames.allSatisfy { $0.pixels.format == delivered && $0.pixels.width == 640 && $0.pixels.height == 480 })
        #expect(abs(medianInterval(frames) - 40) < 4, "median \(medianInterval(frames)) ms")
    }

    /// Without options the closest mode to 640x480 at 30 fps is chosen and said.
    @Test func choosesASensibleModeByItself() throws {
        let source = try V4L2Source(path: device)
        #expect(source.modeWasChosen)
        #expect(source.mode.width == 640 && source.mode.height == 480)
        #expect(source.mode.pixelFormat.isSupported)
    }

    /// Not dequeuing for a while makes the driver drop frames: the sequence numbers jump and
    /// the gap is reported with its size.
    @Test func countsFramesTheDriverDropped() throws {
        let source = try V4L2Source(path: device, options: options(640, 360, 30, .yuyv))
        _ = try capture(source, count: 5)
        Thread.sleep(forTimeInterval: 0.6)  // about 18 frames arrive, into 4 buffers
        let (frames, skipped) = try capture(source, count: 10)
        #expect(frames.count == 10)
        #expect((skipped["driverDropped"] ?? 0) >= 8, "\(skipped)")
    }

    /// vivid's `disconnect` control acts as an unplug: the source reports the interruption,
    /// reopens the device and reports that frames flow again.
    @Test func anUnplugIsAnInterruptionAndRecovers() throws {
        var settings = options(640, 360, 30, .yuyv)
        settings.reconnectTimeout = .seconds(10)
        let source = try V4L2Source(path: device, options: settings)
        _ = try capture(source, count: 5)
        // The unplug completes only while the stream is being read, as a camera's would.
        let unplug = try unplugInBackground()
        var events: [String] = []
        var framesAfter = 0
        let deadline = Date().addingTimeInterval(15)
        while framesAfter < 5 && Date() < deadline {
            switch try source.read() {
            case .interrupted(let reason): events.append("interrupted: \(reason)")
            case .resumed: events.append("resumed")
            case .frame: if events.last == "resumed" { framesAfter += 1 }
            case .skipped: continue
            case .end: events.append("end")
            }
            if events.last == "end" { break }
        }
        unplug.wait()
        #expect(events.count == 2, "\(events)")
        #expect(events.first?.hasPrefix("interrupted: \(device): ") == true, "\(events)")
        #expect(events.last == "resumed")
        #expect(framesAfter == 5)
    }

    /// A device that does not come back ends the source after the reconnect timeout.
    @Test func aDeviceThatStaysAwayEndsTheSource() throws {
        let link = NSTemporaryDirectory() + "camera-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: device)
        var settings = options(640, 360, 30, .yuyv)
        settings.reconnectTimeout = .seconds(1)
        let source = try V4L2Source(path: link, options: settings)
        _ = try capture(source, count: 3)
        try FileManager.default.removeItem(atPath: link)  // the node is gone from this path
        let unplug = try unplugInBackground()
        defer { unplug.wait() }
        var last: String = ""
        for _ in 0..<100 {
            let read = try source.read()
            if case .interrupted = read { last = "interrupted" }
            if case .end = read {
                last = "end"
                break
            }
        }
        #expect(last == "end")
        #expect(source.endReason == "\(link) did not come back within 1 s")
    }

    @Test func badRequestsNameTheDeviceAndWhatItSupports() throws {
        #expect(throws: SightlineError.sourceUnavailable(source: "/dev/null", reason: "not a V4L2 device")) {
            try V4L2Source(path: "/dev/null")
        }
        #expect(throws: SightlineError.sourceUnavailable(source: "/dev/video9", reason: "no such device")) {
            try V4L2Source(path: "/dev/video9")
        }
        do {
            _ = try V4L2Source(path: device, options: options(1000, 1000, 30, .yuyv))
            Issue.record("1000x1000 accepted")
        } catch {
            #expect(
                "\(error)".hasPrefix(
                    "cannot open \(device): does not support 1000x1000 at 30 fps in yuyv; it offers yuyv "))
            #expect("\(error)".contains(" 640x480@25/15/"))
        }
        do {
            _ = try V4L2Source(path: device, options: options(640, 480, 25, .mjpeg))
            Issue.record("MJPEG accepted from vivid, which has none")
        } catch {
            #expect("\(error)".hasPrefix("cannot open \(device): no mjpeg capture; it offers "))
        }
        // A second reader of a streaming device.
        let first = try V4L2Source(path: device, options: options(640, 360, 30, .yuyv))
        _ = try capture(first, count: 1)
        #expect(
            throws: SightlineError.sourceUnavailable(
                source: device, reason: "the device is busy: another process is using it")
        ) {
            try V4L2Source(path: device, options: options(640, 360, 30, .yuyv))
        }
    }
}
