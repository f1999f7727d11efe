import ArgumentParser
import Foundation
import SightlineCapture
import SightlineCore
import SightlineMovie
import SightlineSamples

struct MovieBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration.bench(
        "movie",
        abstract: "Measure movie writing and reading against ffmpeg's remux of the same video.",
        prints: """
            Prints, measured in the same run:
              mux      H.264 packets held in memory written with a face track (two faces on every
                       frame) in 2 s fragments, synced, then finalised: times real time
              remux    the same, counting the demux of the input (what ffmpeg does)
              ffmpeg   ffmpeg -c copy of the same video to .mov, as a whole process, and our
                       remux's speed as a ratio of it
              inspect  sightline inspect --metadata of a 10-minute recording with faces on every
                       frame, as a whole process
            Without --input, a 30 s 1080p30 clip (x264, B-frames) is made with the ffmpeg CLI.
            """)

    @Option(help: "An H.264 file to mux (default: a generated 1080p30 clip).")
    var input: String?

    @Option(help: "Runs of each measurement; the median is printed.")
    var runs = 3

    @Option(
        help: "Only write the 10-minute recording with two faces on every frame to this path, for other benchmarks.")
    var writeLongRecording: String?

    func run() throws {
        if let writeLongRecording { return try BenchMedia.writeLongMovie(writeLongRecording) }
        let scratch = try TemporaryFolder()
        let source = try input ?? BenchMedia.makeClip(in: scratch.path)
        let started = ContinuousClock.now
        let (format, packets) = try BenchMedia.demux(source)
        let demuxSeconds = (ContinuousClock.now - started).milliseconds / 1000
        let mediaSeconds = BenchMedia.duration(of: packets)
        let megabytes = Double(packets.reduce(0) { $0 + $1.data.count }) / 1e6
        print(
            String(
                format: "input    %@: %dx%d, %d frames, %.1f s, %.1f MB", source, format.width, format.height,
                packets.count, mediaSeconds, megabytes))

        let output = scratch.path + "/out.mov"
        let mux = try median(
            (0..<runs).map { _ in
                try BenchMedia.timed { try BenchMedia.writeMovie(output, format: format, packets: packets) }
            })
        print(String(format: "mux      %7.3f s  %6.1f x real time", mux, mediaSeconds / mux))
        let remux = mux + demuxSeconds
        print(String(format: "remux    %7.3f s  %6.1f x real time (with demux)", remux, mediaSeconds / remux))
        let ffmpeg = try median(
            (0..<runs).map { _ in
                try BenchMedia.timed {
                    try BenchMedia.runProcess(
                        "ffmpeg",
                        ["-v", "error", "-y", "-i", source, "-map", "0:v", "-c", "copy", scratch.path + "/ffmpeg.mov"])
                }
            })
        print(
            String(
                format:
                    "ffmpeg   %7.3f s  %6.1f x real time; sightline remux = %.2f x ffmpeg's speed (ffmpeg -c copy, no metadata)",
                ffmpeg, mediaSeconds / ffmpeg, ffmpeg / remux))

        let long = scratch.path + "/ten-minutes.mov"
        try BenchMedia.writeLongMovie(long)
        let groups = try MovieReader(path: long).metadataGroups(track: 2).count
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).path
        let inspect = try median(
            (0..<runs).map { _ in
                try BenchMedia.timed {
                    try BenchMedia.runProcess(executable, ["inspect", long, "--metadata"], discardOutput: true)
                }
            })
        print(
            String(
                format: "inspect  %7.3f s  for 10 min with faces on every frame (%d groups, %.1f MB file)", inspect,
                groups,
                Double(try FileManager.default.attributesOfItem(atPath: long)[.size] as? Int ?? 0) / 1e6))
    }
}

/// A scratch directory removed when the command ends.
final class TemporaryFolder {
    let path = NSTemporaryDirectory() + "sightline-bench-\(UUID().uuidString.prefix(8))"
    init() throws { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Media the benchmarks make and time: recordings with faces on every frame, clips, and
/// whole processes.
enum BenchMedia {
    /// A bundled clip 60 times over (10 minutes) with two faces on every frame.
    static func writeLongMovie(_ path: String, clip: String = SampleMedia.faces640x480.path) throws {
        let (format, packets) = try demux(clip)
        try writeMovie(path, format: format, packets: packets, loops: 60)
    }

    static func demux(_ path: String) throws -> (VideoTrackFormat, [EncodedVideoReader.Packet]) {
        let reader = try EncodedVideoReader(url: path)
        var packets: [EncodedVideoReader.Packet] = []
        while let packet = try reader.next() { packets.append(packet) }
        let format = try VideoTrackFormat(
            configuration: reader.codecConfiguration, width: reader.width, height: reader.height,
            timescale: reader.timescale)
        return (format, packets)
    }

    static func duration(of packets: [EncodedVideoReader.Packet]) -> Double {
        let times = packets.map(\.presentationTime.seconds)
        return (times.max() ?? 0) - (times.min() ?? 0) + (packets.first?.duration?.seconds ?? 0)
    }

    /// Writes `packets` (repeated `loops` times, times running on) with two faces per frame.
    static func writeMovie(
        _ path: String, format: VideoTrackFormat, packets: [EncodedVideoReader.Packet], loops: Int = 1
    ) throws {
        let writer = try MovieWriter(path: path, video: format, metadataTracks: [.detectedFaces])
        let span = MediaTime(seconds: duration(of: packets), timescale: format.timescale)
        for loop in 0..<loops {
            let shift = MediaTime(value: span.value * Int64(loop), timescale: format.timescale)
            for (index, packet) in packets.enumerated() {
                let time = packet.presentationTime + shift
                let faces = (1...2).map { id in
                    FaceObject(
                        faceID: id,
                        bounds: NormalizedRect(
                            x: 0.1 + 0.4 * Double(id - 1) + Double(index % 50) * 0.002, y: 0.3, width: 0.2, height: 0.3),
                        rollAngle: 0, yawAngle: 0, time: time, duration: nil, score: 1, subDetector: 0)
                }
                try writer.append(TimedMetadataGroup(time: time, items: [.detectedFaces(faces)]), toMetadataTrack: 0)
                try writer.append(
                    VideoAccessUnit(
                        storedSample: packet.data, decodeTime: packet.decodeTime + shift, presentationTime: time,
                        duration: packet.duration,
                        isKeyFrame: packet.isKeyFrame))
            }
        }
        try writer.finish()
    }

    static func makeClip(in directory: String) throws -> String {
        let path = directory + "/1080p30.mp4"
        FileHandle.standardError.write(Data("making a 30 s 1080p30 H.264 clip with ffmpeg…\n".utf8))
        try runProcess(
            "ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30:duration=30", "-c:v",
                "libx264",
                "-preset", "ultrafast", "-bf", "2", "-g", "60", "-pix_fmt", "yuv420p", path,
            ])
        return path
    }

    static func timed(_ body: () throws -> Void) rethrows -> Double {
        let started = ContinuousClock.now
        try body()
        return (ContinuousClock.now - started).milliseconds / 1000
    }

    static func runProcess(_ name: String, _ arguments: [String], discardOutput: Bool = false) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: name.hasPrefix("/") ? name : "/usr/bin/env")
        process.arguments = name.hasPrefix("/") ? arguments : [name] + arguments
        if discardOutput { process.standardOutput = FileHandle.nullDevice }
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ValidationError(
                "\(name) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
    }
}
