import ArgumentParser
import Foundation
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlinePipeline
import SightlineRecorder
import SightlineSamples
import SightlineService

/// Everything about one source: what it is, what to detect, what to publish beside the
/// detections, and how to record it. `run` takes these as options; each entry of `serve`'s
/// config file takes the same names as keys.
struct SourceOptions: ParsableArguments {
    @Option(
        help:
            "A camera (/dev/video0), a media file, or a URL FFmpeg opens (rtsp://, http://). Default: the bundled sample."
    )
    var source: String?

    @Option(
        help: """
            A file whose first line is the password of the stream's user (rtsp://USER@camera/…): kept out of \
            the process list, the config and every log line.
            """)
    var passwordFile: String?

    @Option(help: "Camera frame size, WIDTHxHEIGHT (V4L2 devices). Default: the closest to 640x480.")
    var size: String?

    @Option(help: "Camera frame rate (V4L2 devices). Default: the closest to 30.")
    var fps: Double?

    @Option(help: "Camera pixel format: yuyv, nv12, yu12, grey, mjpeg … (V4L2 devices).")
    var pixelFormat: String?

    @Option(
        name: .customLong("control"),
        help: ArgumentHelp(
            "A camera control, NAME=VALUE (repeatable): v4l2-ctl's name or AVFoundation's (exposureMode=locked); `sightline devices` lists them.",
            valueName: "name=value"))
    var controls: [String] = []

    @Option(help: "Seconds a camera may stay unplugged or failed before the run stops (default 30).")
    var reconnectTimeout: Double?

    @Option(
        help:
            "How the camera is mounted, as an EXIF orientation: 1 upright, 3 upside down, 6 and 8 a quarter turn. Default: what the source says."
    )
    var orientation: Int?

    @Option(help: "Names this source in topics and messages.")
    var sourceID = "cam1"

    @Option(
        help: """
            Take timed metadata (GPS, sensors) and other detectors' objects from other services: bind this \
            endpoint, to which they connect and publish metadata/<source-id>/ and objects/<source-id>/ groups.
            """)
    var metadataIn: String?

    @Option(help: "Metadata groups per second taken in from all clients together; more are dropped as a flood.")
    var metadataRate = 200

    @Option(help: "Seconds of media time a detector's objects stay after its last group before they leave.")
    var objectsHold = 1.0

    @Flag(help: "Pace a file to its timestamps, like a live camera.")
    var realtime = false

    @Flag(help: "Start the file again at its end.")
    var loop = false

    @Option(
        help:
            "Seconds opening a stream (rtsp://, http://), or one read of it, may wait for an answer before the source counts as failed (default 5, at most 600)."
    )
    var networkTimeout: Double?

    @Option(
        help:
            "Seconds a live stream (rtsp://, a camera's http:// feed) may be away, reconnecting, before /health calls it a problem (default 30)."
    )
    var reconnectGrace: Double?

    @Option(help: "How an RTSP stream's packets travel: tcp or udp. Default: UDP, then TCP when UDP gets nothing.")
    var rtspTransport: MediaFileSource.RTSPTransport?

    @OptionGroup(title: "Detection") var detection: DetectionOptions
    @OptionGroup(title: "Identities") var identity: IdentityOptions
    @OptionGroup var models: FaceModelOptions

    @Option(help: "Publish downscaled frames for other services' detectors: gray8 or jpeg.")
    var frames: FrameInfo.Format?

    @Option(help: "Largest size of published frames, WIDTHxHEIGHT (shape kept).")
    var framesSize = "320x240"

    @Option(help: "Published frames per second at most.")
    var framesRate = 5.0

    @Flag(
        help:
            "Analyse every frame: the source waits for its detectors (the default for a file not paced by --realtime).")
    var everyFrame = false

    @Flag(help: "Drop frames that arrive while a detector is busy (the default for cameras, streams and --realtime).")
    var dropLate = false

    @Option(help: "Seconds between status messages with counters.")
    var statusInterval = 5.0

    @Option(help: "Record the video and the faces into .mov files in this directory.")
    var record: String?

    @Option(help: "When to publish video: on-demand (while subscribed), always, off.")
    var video = VideoMode.onDemand

    @Option(
        help: """
            The source's audio: pass (AAC as it is), aac (any codec encoded to AAC), off. \
            Default: AAC passes, other codecs are encoded, a source without audio has none.
            """)
    var audio: AudioMode?

    @Option(
        help: """
            A microphone recorded as the camera's sound: an ALSA capture device (hw:1,0; \
            `sightline devices` lists them), encoded to AAC. Cameras only.
            """)
    var audioDevice: String?

    @Flag(help: "Encode video with libx264 even when the source is already H.264 or H.265.")
    var reencode = false

    @Option(help: "x264 preset for encoding (ultrafast … veryslow).")
    var preset = "superfast"

    @Option(help: "x264 constant quality, 0-51 (lower is better).")
    var crf = 23

    @Option(help: "Target bit rate in bits/s instead of constant quality.")
    var bitrate: Int?

    @Option(help: "Frames between key frames (default: two seconds).")
    var gop: Int?

    @OptionGroup var recording: RecordingOptions

    private func cameraOptions() throws -> V4L2Source.Options {
        var options = V4L2Source.Options()
        if let size { (options.width, options.height) = try parseSize(size, option: "--size") }
        if let fps { options.frameRate = try OptionValues.number(fps, option: "--fps", in: 0.001...10_000) }
        if let pixelFormat {
            guard let format = V4L2PixelFormat(name: pixelFormat) else {
                throw ValidationError(
                    "--pixel-format '\(pixelFormat)' is not a pixel format such as yuyv, nv12 or mjpeg")
            }
            options.pixelFormat = format
        }
        options.controls = try controls.prefix(65).map { try V4L2ControlRequest($0) }
        guard controls.count <= 64 else { throw SightlineError.invalidArgument("at most 64 --control settings") }
        if let reconnectTimeout {
            options.reconnectTimeout = try OptionValues.duration(
                reconnectTimeout, option: "--reconnect-timeout", allowZero: true)
        }
        return options
    }

    /// A camera with its mode and microphone, or media with its pacing and audio; an option
    /// of the other kind is refused with one line that names it and the source.
    private func pipelineSource() throws -> PipelineSource {
        let name = source ?? SampleMedia.faces640x480.path
        let cameraOptions = try cameraOptions()  // checked whichever the source
        guard V4L2Source.isDevice(name) else {
            let given: [(String, Bool)] = [
                ("--size", size != nil), ("--fps", fps != nil), ("--pixel-format", pixelFormat != nil),
                ("--reconnect-timeout", reconnectTimeout != nil), ("--control", !controls.isEmpty),
                ("--audio-device \(audioDevice.map(OptionValues.cut) ?? "")", audioDevice != nil),
            ]
            if let option = given.first(where: \.1)?.0 {
                throw SightlineError.invalidArgument(
                    "\(option) goes with a camera (/dev/video…), not with \(OptionValues.cut(redactingPassword(name)))")
            }
            let url = try passwordFile.map { try Self.url(name, withPasswordFrom: $0) } ?? name
            var options = MediaFileSource.Options(realtime: realtime, loop: loop, audio: audio)
            options.rtspTransport = rtspTransport
            if let networkTimeout {
                options.networkTimeout = try OptionValues.duration(
                    OptionValues.number(networkTimeout, option: "--network-timeout", in: 0.1...600),
                    option: "--network-timeout")
            }
            if let reconnectGrace {
                options.reconnectGrace = try OptionValues.duration(
                    reconnectGrace, option: "--reconnect-grace", allowZero: true)
            }
            return .media(url: url, options: options)
        }
        if let audio, audio != .off {
            throw SightlineError.invalidArgument(
                "--audio \(audio.rawValue): \(name) is a camera, which has no audio stream (--audio-device adds a microphone)"
            )
        }
        let given = [
            ("--realtime", realtime), ("--loop", loop), ("--network-timeout", networkTimeout != nil),
            ("--password-file", passwordFile != nil), ("--rtsp-transport", rtspTransport != nil),
            ("--reconnect-grace", reconnectGrace != nil),
        ]
        if let option = given.first(where: \.1)?.0 {
            throw SightlineError.invalidArgument("\(option) goes with a file, not with \(name), which is a camera")
        }
        return .camera(path: name, options: cameraOptions, microphone: audioDevice)
    }

    /// `url` with the password `file` holds given to its user.
    private static func url(_ url: String, withPasswordFrom file: String) throws -> String {
        let password =
            try readSecret(file, option: "--password-file").split(separator: "\n").first.map(String.init) ?? ""
        guard !password.isEmpty, password.utf8.count <= 1024 else {
            throw ValidationError("--password-file \(file) must hold a password of 1-1024 bytes on its first line")
        }
        guard let withPassword = settingPassword(password, in: url) else {
            throw ValidationError(
                "--password-file needs a user in the URL to give the password to (rtsp://USER@camera/…), not \(OptionValues.cut(redactingPassword(url)))"
            )
        }
        return withPassword
    }

    /// The source as `SightlineServices` runs it; the bus (where it publishes, with which
    /// keys) is the command's to set.
    func configuration() throws -> ServicesConfiguration.Source {
        // The same check the recorder and the bus make, here where `run`, `serve` and
        // `serve --check` all pass.
        guard SourceID.isValid(sourceID) else {
            throw ValidationError(
                "source ID \(OptionValues.shown(sourceID)) must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        }
        let statusInterval = try OptionValues.duration(statusInterval, option: "--status-interval")
        var configuration = PipelineConfiguration(source: try pipelineSource())
        configuration.sourceID = sourceID
        if source == nil {
            configuration.inputLabel = "the bundled sample \(SampleMedia.faces640x480.lastPathComponent)"
        }
        if let orientation {
            guard (1...8).contains(orientation) else {
                throw ValidationError("--orientation \(orientation) is not an EXIF orientation 1-8")
            }
            configuration.orientation = orientation
        }
        try detection.apply(to: &configuration)
        configuration.detection.models = models.modelFiles
        try identity.apply(to: &configuration)
        let framesLimit = try parseSize(framesSize, option: "--frames-size")  // checked whether used or not
        if let frames {
            var output = FramesConfiguration(format: frames)
            (output.maximumWidth, output.maximumHeight) = framesLimit
            output.rate = try OptionValues.number(framesRate, option: "--frames-rate", in: 0.001...1000)
            configuration.video.frames = output
        }
        configuration.bus.metadataIn = try metadataIn.map { try Endpoint($0) }
        configuration.bus.metadataInRate = try OptionValues.integer(
            metadataRate, option: "--metadata-rate", in: 1...100_000)
        configuration.bus.objectsHold = MediaTime(
            seconds: try OptionValues.number(objectsHold, option: "--objects-hold", in: 0.001...3600),
            timescale: 1_000_000)
        configuration.statusInterval = statusInterval
        guard !(everyFrame && dropLate) else {
            throw ValidationError("--every-frame and --drop-late exclude each other")
        }
        configuration.detection.discardLateFrames = everyFrame ? false : dropLate ? true : nil
        configuration.video.mode = video
        configuration.video.reencode = reencode
        configuration.video.encoder.preset = preset
        configuration.video.encoder.crf = try OptionValues.integer(crf, option: "--crf", in: 0...51)
        configuration.video.encoder.bitrate = try bitrate.map {
            try OptionValues.integer($0, option: "--bitrate", in: 1000...1_000_000_000)
        }
        configuration.video.encoder.keyFrameInterval = try gop.map {
            try OptionValues.integer($0, option: "--gop", in: 1...100_000)
        }
        // The recording options are checked even when nothing is recorded: a value that is
        // wrong is refused the same whether or not it is used yet.
        let recorder = try recording.configuration(sourceID: sourceID, directory: record ?? ".")
        return ServicesConfiguration.Source(
            id: sourceID, pipeline: configuration, recording: record.map { _ in recorder })
    }
}
