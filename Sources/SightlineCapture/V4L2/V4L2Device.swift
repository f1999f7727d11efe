import CV4L2
import Foundation
import SightlineCore

/// A V4L2 pixel format by its four-character code, with the names the command line uses.
package struct V4L2PixelFormat: Sendable, Hashable, Codable, CustomStringConvertible {
    package let fourCC: UInt32

    package init(fourCC: UInt32) { self.fourCC = fourCC }

    init(_ code: String) {
        fourCC = code.utf8.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    package static let yuyv = V4L2PixelFormat("YUYV")
    package static let uyvy = V4L2PixelFormat("UYVY")
    package static let nv12 = V4L2PixelFormat("NV12")
    package static let yu12 = V4L2PixelFormat("YU12")
    package static let grey = V4L2PixelFormat("GREY")
    package static let mjpeg = V4L2PixelFormat("MJPG")
    package static let jpeg = V4L2PixelFormat("JPEG")
    package static let rgb24 = V4L2PixelFormat("RGB3")
    package static let bgr24 = V4L2PixelFormat("BGR3")

    /// The formats Sightline captures, in the order it prefers them: raw formats with a
    /// luma plane need no conversion; MJPEG needs decoding.
    package static let supported: [V4L2PixelFormat] = [
        .nv12, .yu12, .grey, .yuyv, .uyvy, .rgb24, .bgr24, .mjpeg, .jpeg,
    ]

    static let names: [V4L2PixelFormat: String] = [
        .yuyv: "yuyv", .uyvy: "uyvy", .nv12: "nv12", .yu12: "yu12", .grey: "grey", .mjpeg: "mjpeg", .jpeg: "jpeg",
        .rgb24: "rgb24", .bgr24: "bgr24",
    ]

    /// Parses a name (`yuyv`, `mjpeg` …) or a four-character code (`YUYV`).
    package init?(name: String) {
        if let known = Self.names.first(where: { $0.value == name.lowercased() })?.key {
            self = known
        } else if name.utf8.count == 4 {
            self.init(name)
        } else {
            return nil
        }
    }

    package var code: String {
        String((0..<4).map { Character(Unicode.Scalar(UInt8((fourCC >> (8 * $0)) & 0xFF))) })
    }

    /// The name, or the four-character code for formats without one (`Y10 `).
    package var description: String { Self.names[self] ?? code }

    package var isSupported: Bool { Self.supported.contains(self) }

    package func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    package init(from decoder: Decoder) throws {
        let name = try decoder.singleValueContainer().decode(String.self)
        guard let format = V4L2PixelFormat(name: name) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "unknown format \(name)"))
        }
        self = format
    }
}

/// A V4L2 capture device and what it can deliver, like `AVCaptureDevice` and its `formats`.
package struct V4L2Device: Sendable, Codable, Equatable {
    package struct FrameSize: Sendable, Codable, Equatable {
        package var width: Int
        package var height: Int
        /// Frames per second the device offers at this size (discrete values; for a
        /// continuous range, its ends).
        package var frameRates: [Double]
    }

    package struct Format: Sendable, Codable, Equatable {
        package var pixelFormat: V4L2PixelFormat
        package var description: String
        package var sizes: [FrameSize]
        /// For devices that describe sizes as a range: "min–max step".
        package var sizeRange: String?
    }

    package var path: String
    package var driver: String
    package var card: String
    package var bus: String
    package var formats: [Format]
    /// Its controls and their values now (`VIDIOC_QUERY_EXT_CTRL`).
    package var controls: [V4L2Control]

    /// Every V4L2 video capture device on this machine (`/dev/video*`), in order.
    package static func list() -> [V4L2Device] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []
        let paths = names.filter { $0.hasPrefix("video") && Int($0.dropFirst(5)) != nil }
            .sorted { Int($0.dropFirst(5))! < Int($1.dropFirst(5))! }.map { "/dev/\($0)" }
        return paths.compactMap { try? V4L2Device(path: $0) }
    }

    /// Opens `path` and reads its capabilities and formats.
    package init(path: String) throws {
        let fd = try V4L2Handle.open(path)
        defer { v4l2_close(fd) }
        try self.init(path: path, fd: fd)
    }

    init(path: String, fd: Int32) throws {
        var capability = v4l2_capability()
        guard cv4l2_ioctl(fd, cv4l2_querycap(), &capability) == 0 else {
            throw SightlineError.sourceUnavailable(source: path, reason: "not a V4L2 device")
        }
        let caps =
            capability.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0
            ? capability.device_caps : capability.capabilities
        guard caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 else {
            throw SightlineError.sourceUnavailable(
                source: path, reason: "not a video capture device (an output or metadata node)")
        }
        self.path = path
        driver = cString(&capability.driver)
        card = cString(&capability.card)
        bus = cString(&capability.bus_info)
        formats = Self.formats(fd)
        controls = CameraControls.list(fd)
    }

    private static func formats(_ fd: Int32) -> [Format] {
        var formats: [Format] = []
        for index in 0..<256 {
            var description = v4l2_fmtdesc()
            description.index = UInt32(index)
            description.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            guard cv4l2_ioctl(fd, cv4l2_enum_fmt(), &description) == 0 else { break }
            let pixelFormat = V4L2PixelFormat(fourCC: description.pixelformat)
            var sizes: [FrameSize] = []
            var range: String?
            for sizeIndex in 0..<512 {
                var size = v4l2_frmsizeenum()
                size.index = UInt32(sizeIndex)
                size.pixel_format = description.pixelformat
                guard cv4l2_ioctl(fd, cv4l2_enum_framesizes(), &size) == 0 else { break }
                if size.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                    let (width, height) = (Int(size.discrete.width), Int(size.discrete.height))
                    sizes.append(
                        FrameSize(
                            width: width, height: height,
                            frameRates: frameRates(fd, description.pixelformat, width, height)))
                } else {
                    let s = size.stepwise
                    range =
                        "\(s.min_width)x\(s.min_height)-\(s.max_width)x\(s.max_height) step \(s.step_width)x\(s.step_height)"
                    // The common sizes within the range, so a user sees what to ask for.
                    for (width, height) in [(320, 240), (640, 480), (1280, 720), (1920, 1080)]
                    where (Int(s.min_width)...Int(s.max_width)).contains(width)
                        && (Int(s.min_height)...Int(s.max_height)).contains(height)
                    {
                        sizes.append(
                            FrameSize(
                                width: width, height: height,
                                frameRates: frameRates(fd, description.pixelformat, width, height)))
                    }
                    break
                }
            }
            formats.append(
                Format(
                    pixelFormat: pixelFormat, description: cString(&description.description), sizes: sizes,
                    sizeRange: range))
        }
        return formats
    }

    private static func frameRates(_ fd: Int32, _ pixelFormat: UInt32, _ width: Int, _ height: Int) -> [Double] {
        var rates: [Double] = []
        for index in 0..<64 {
            var interval = v4l2_frmivalenum()
            interval.index = UInt32(index)
            interval.pixel_format = pixelFormat
            interval.width = UInt32(width)
            interval.height = UInt32(height)
            guard cv4l2_ioctl(fd, cv4l2_enum_frameintervals(), &interval) == 0 else { break }
            func rate(_ fraction: v4l2_fract) -> Double? {
                fraction.numerator > 0
                    ? (Double(fraction.denominator) / Double(fraction.numerator) * 1000).rounded() / 1000 : nil
            }
            if interval.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                if let value = rate(interval.discrete) { rates.append(value) }
            } else {
                rates += [rate(interval.stepwise.max), rate(interval.stepwise.min)].compactMap { $0 }
                break
            }
        }
        return rates.sorted(by: >)
    }

    /// The modes Sightline can capture, in one line for errors.
    package var supportedSummary: String {
        formats.filter(\.pixelFormat.isSupported).map { format in
            let sizes = format.sizes.map { size in
                "\(size.width)x\(size.height)@\(size.frameRates.map { formatRate($0) }.joined(separator: "/"))"
            }
            return "\(format.pixelFormat) \(sizes.joined(separator: " "))"
        }.joined(separator: "; ")
    }
}

func formatRate(_ rate: Double) -> String {
    rate == rate.rounded() ? String(Int(rate)) : String(format: "%.2f", rate)
}

func cString<T>(_ tuple: inout T) -> String {
    withUnsafeBytes(of: &tuple) { bytes in String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
}

/// Opening a device node, with one clear line for each way it can fail.
enum V4L2Handle {
    static func open(_ path: String) throws -> Int32 {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw SightlineError.sourceUnavailable(
                source: path, reason: errno == EACCES ? "permission denied" : "no such device")
        }
        guard (info.st_mode & S_IFMT) == S_IFCHR else {
            throw SightlineError.sourceUnavailable(source: path, reason: "not a V4L2 device (not a character device)")
        }
        let fd = cv4l2_open(path)
        guard fd >= 0 else {
            let reason =
                switch errno {
                case EACCES: "permission denied (add the user to the 'video' group)"
                case EBUSY: "the device is busy: another process is using it"
                case ENODEV, ENXIO, ENOENT: "no such device (unplugged?)"
                case ENOTTY, EINVAL: "not a V4L2 device"
                default: String(cString: strerror(errno))
                }
            throw SightlineError.sourceUnavailable(source: path, reason: reason)
        }
        return fd
    }
}
