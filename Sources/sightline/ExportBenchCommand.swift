import ArgumentParser
import Foundation
import SightlineExport
import SightlineSamples

struct ExportBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration.bench(
        "export",
        abstract: "Measure clip export against ffmpeg on the same 10-minute 720p recording.",
        prints: """
            Makes a 10-minute 1280x720 recording with two faces on every frame (the bundled
            720p clip 60 times over), then prints, measured in the same run:
              trim     a 5-minute clip without re-encoding, metadata kept, against
                       ffmpeg -ss -to -c copy of the same range (video only: ffmpeg drops the
                       metadata tracks), as whole-process times and their ratio
              burn-in  a 30 s clip with the boxes drawn and encoded with libx264 (same preset
                       and crf), in frames a second, against ffmpeg -vf drawbox with two boxes
                       of the same size, and their ratio
              drawing  the drawing alone: ours in memory, and libavfilter's drawbox as ffmpeg's
                       burn-in less the same ffmpeg run without the boxes
            """)

    @Option(help: "Runs of each measurement; the median is printed.")
    var runs = 3

    @Option(help: "x264 preset of both burn-ins.")
    var preset = "veryfast"

    /// The median of `runs` whole-process times of `executable` with `arguments`, in seconds.
    private func medianSeconds(_ executable: String, _ arguments: [String]) throws -> Double {
        median(try (0..<runs).map { _ in try BenchMedia.timed { try BenchMedia.runProcess(executable, arguments) } })
    }

    func run() throws {
        let scratch = try TemporaryFolder()
        let long = scratch.path + "/ten-minutes-720p.mov"
        FileHandle.standardError.write(Data("making a 10-minute 720p recording with faces on every frame…\n".utf8))
        try BenchMedia.writeLongMovie(long, clip: SampleMedia.faces1280x720.path)
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).path
        let out = scratch.path + "/clip"

        let trim = try medianSeconds(
            executable, ["export", long, "-o", out + ".mov", "--from", "120", "--to", "420", "--overwrite", "--quiet"])
        let ffmpegTrim = try medianSeconds(
            "ffmpeg",
            [
                "-v", "error", "-y", "-ss", "120", "-to", "420", "-i", long, "-map", "0:v", "-c", "copy",
                out + "-ffmpeg.mov",
            ])
        print(
            String(
                format:
                    "trim     %6.3f s for 5 minutes with its metadata; ffmpeg -c copy %6.3f s (video only): %.2fx ffmpeg's speed",
                trim, ffmpegTrim, ffmpegTrim / trim))

        let frames = 900.0  // 30 s at 30 fps
        let burnIn = try medianSeconds(
            executable,
            [
                "export", long, "-o", out + ".mp4", "--from", "120", "--to", "150", "--burn-in", "--preset", preset,
                "--crf", "20", "--overwrite", "--quiet",
            ])
        // The same two boxes (0.2 x 0.3 of the frame, 4 px), drawn by libavfilter.
        let boxes =
            "drawbox=x=iw*0.1:y=ih*0.3:w=iw*0.2:h=ih*0.3:color=0x00e050:t=4,"
            + "drawbox=x=iw*0.5:y=ih*0.3:w=iw*0.2:h=ih*0.3:color=0x00e050:t=4"
        let ffmpegBurnIn = try medianSeconds(
            "ffmpeg",
            [
                "-v", "error", "-y", "-ss", "120", "-to", "150", "-i", long, "-map", "0:v", "-vf", boxes, "-c:v",
                "libx264", "-preset", preset, "-crf", "20", out + "-ffmpeg.mp4",
            ])
        print(
            String(
                format:
                    "burn-in  %6.1f frames/s (boxes, IDs, x264 %@); ffmpeg -vf drawbox %6.1f frames/s: %.2fx ffmpeg's speed",
                frames / burnIn, preset, frames / ffmpegBurnIn, ffmpegBurnIn / burnIn))

        // The drawing alone: ours in memory; libavfilter's drawbox as ffmpeg's run with the
        // boxes less the same run without them.
        let ours = try BurnIn.drawingMilliseconds(width: 1280, height: 720, frames: 2000)
        let ffmpegPlain = try medianSeconds(
            "ffmpeg",
            [
                "-v", "error", "-y", "-ss", "120", "-to", "150", "-i", long, "-map", "0:v", "-c:v", "libx264",
                "-preset", preset, "-crf", "20", out + "-ffmpeg.mp4",
            ])
        print(
            String(
                format:
                    "drawing  ours %.3f ms/frame (two boxes and their IDs, 720p); drawbox %.3f ms/frame (two boxes: ffmpeg with them less without)",
                ours, max(0, ffmpegBurnIn - ffmpegPlain) * 1000 / frames))
    }
}
