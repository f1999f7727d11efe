import Foundation
import SightlineTesting

/// What ffprobe, exiftool and mediainfo say about a file, parsed for assertions.
enum IndependentReaders {
    /// ffprobe's streams: codec type, codec tag and packet count.
    static func streams(_ path: String) throws -> [(type: String, tag: String, frames: Int)] {
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
    static func decodedFrames(_ path: String) throws -> Int {
        let output = try ExternalTool.run(
            "ffmpeg", ["-v", "error", "-xerror", "-i", path, "-map", "0:v:0", "-f", "framemd5", "-"])
        guard output.status == 0 else { return -1 }
        return output.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
    }

    /// exiftool -ee's timed metadata: one entry per sample ("Doc"), each tag's values in order.
    static func exiftoolDocuments(_ path: String) throws -> [Int: [String: [String]]] {
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
}
