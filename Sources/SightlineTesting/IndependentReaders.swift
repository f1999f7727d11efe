import Foundation
import SightlineCore

/// What ffprobe, exiftool and mediainfo say about a file, parsed for assertions.
package enum IndependentReaders {
    /// ffprobe's streams: codec type, codec tag and packet count.
    package static func streams(_ path: String) throws -> [(type: String, tag: String, frames: Int)] {
        let json = try ExternalTool.json(
            "ffprobe",
            ["-v", "error", "-show_entries", "stream=codec_type,codec_tag_string,nb_frames", "-of", "json", path])
        let streams = (json as? [String: Any])?["streams"] as? [[String: Any]] ?? []
        return streams.map {
            (
                $0["codec_type"] as? String ?? "", $0["codec_tag_string"] as? String ?? "",
                Int($0["nb_frames"] as? String ?? "") ?? -1
            )
        }
    }

    /// Decodes every video frame with FFmpeg, which stops at the first decoding error
    /// (`-xerror`); returns the count, or -1 on an error.
    package static func decodedFrames(_ path: String) throws -> Int {
        let output = try ExternalTool.run(
            "ffmpeg", ["-v", "error", "-xerror", "-i", path, "-map", "0:v:0", "-f", "framemd5", "-"])
        guard output.status == 0 else { return -1 }
        return output.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
    }

    /// exiftool -ee's timed metadata: one entry per sample ("Doc"), each tag's values in order.
    package static func exiftoolDocuments(_ path: String) throws -> [Int: [String: [String]]] {
        let output = try ExternalTool.run("exiftool", ["-ee", "-G3", "-a", "-n", "-s", path])
        var documents: [Int: [String: [String]]] = [:]
        for line in output.stdout.split(separator: "\n") where line.hasPrefix("[Doc") {
            guard let close = line.firstIndex(of: "]"),
                let number = Int(line[line.index(line.startIndex, offsetBy: 4)..<close]),
                let colon = line.range(of: ": ")
            else { continue }
            let tag = line[line.index(after: close)..<colon.lowerBound].trimmingCharacters(in: .whitespaces)
            documents[number, default: [:]][tag, default: []].append(String(line[colon.upperBound...]))
        }
        return documents
    }

    /// One frame as ffmpeg decodes it, as RGB: the frame shown at `seconds`.
    package static func rgbFrame(_ path: String, at seconds: Double, width: Int, height: Int) throws -> RGBImage {
        let raw = path + ".rgb"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        // A still image has no time to seek to.
        let seek = seconds > 0 ? ["-ss", String(seconds)] : []
        let decoded = try ExternalTool.run(
            "ffmpeg",
            ["-v", "error", "-y"] + seek + ["-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", raw])
        guard decoded.status == 0 else { throw SightlineError.invalidArgument(decoded.stderr) }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
        guard bytes.count == width * height * 3 else {
            throw SightlineError.invalidArgument("decoded \(bytes.count) bytes, not \(width)x\(height)")
        }
        return RGBImage(bytes: bytes, width: width)
    }
}

/// Packed RGB pixels, for checking what was drawn.
package struct RGBImage: Sendable {
    package let bytes: [UInt8]
    package let width: Int

    package func pixel(_ x: Int, _ y: Int) -> [Int] { (0..<3).map { Int(bytes[(y * width + x) * 3 + $0]) } }

    /// Near the boxes' face green, #00e050 (after JPEG or H.264 and back).
    package func isFaceGreen(_ x: Int, _ y: Int) -> Bool {
        let p = pixel(x, y)
        return p[1] > 170 && p[0] < 90 && p[2] < 150
    }

    /// Near `colour` in each channel (after H.264 and back).
    package func isNear(_ colour: RGBColour, _ x: Int, _ y: Int) -> Bool {
        zip(pixel(x, y), [colour.red, colour.green, colour.blue]).allSatisfy { abs($0 - Int($1)) <= 60 }
    }
}
