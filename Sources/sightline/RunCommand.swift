import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlinePipeline
import SightlineRecorder
import SightlineSamples

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Capture, detect faces and codes, and publish events until the source ends or SIGINT/SIGTERM.",
        discussion: """
            Examples:
              sightline run --realtime --print
              sightline run --source rtsp://camera.local/stream --source-id door
              sightline run --source clip.mp4 --publish ipc:///tmp/sightline.sock
              sightline run --realtime --record recordings/
              sightline run --source shelf.mp4 --detect faces,barcodes --code-types qr,ean13
              sightline run --source /dev/video0 --size 1280x720 --fps 30 --pixel-format mjpeg
            """)

    @Option(
        help:
            "A camera (/dev/video0), a media file, or a URL FFmpeg opens (rtsp://, http://). Default: the bundled sample."
    )
    var source: String?

    @Option(help: "Camera frame size, WIDTHxHEIGHT (V4L2 devices). Default: the closest to 640x480.")
    var size: String?

    @Option(help: "Camera frame rate (V4L2 devices). Default: the closest to 30.")
    var fps: Double?

    @Option(help: "Camera pixel format: yuyv, nv12, yu12, grey, mjpeg … (V4L2 devices).")
    var pixelFormat: String?

    @Option(help: "Seconds a camera may stay unplugged or failed before the run stops.")
    var reconnectTimeout = 30.0

    @Option(help: "Names this source in topics and messages.")
    var sourceID = "cam1"

    @Option(help: "Where to publish (tcp://HOST:PORT, ipc://PATH). Loopback unless --insecure.")
    var publish = Endpoint.defaultPublish.string

    @Option(
        help: "Publish through a broker: connect to its frontend (see `sightline broker`) instead of binding --publish."
    )
    var publishTo: String?

    @Option(
        help: """
            Take timed metadata (GPS, sensors, other detectors) from other services: bind this endpoint, \
            to which they connect and publish metadata/<source-id>/ groups.
            """)
    var metadataIn: String?

    @Option(help: "Metadata groups per second taken in from all clients together; more are dropped as a flood.")
    var metadataRate = 200

    @Flag(help: "Allow binding a network address without authentication.")
    var insecure = false

    @Option(help: "The publisher's CURVE key pair (.key): subscribers must present an allowed key.")
    var curveKey: String?

    @Option(help: "Allowed subscriber keys: a .pub file or a directory of them (with --curve-key).")
    var allow: String?

    @Option(help: "With --publish-to: the CURVE broker's public key (.pub); --curve-key is then this source's key.")
    var serverKey: String?

    @Flag(help: "Pace a file to its timestamps, like a live camera.")
    var realtime = false

    @Flag(help: "Start the file again at its end.")
    var loop = false

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

    @Option(help: "Wait up to this many seconds for a subscriber before the first message.")
    var waitForSubscriber: Double?

    @Option(help: "Seconds between status messages with counters.")
    var statusInterval = 5.0

    @Flag(help: "Also print every published message as a JSON line on stdout.")
    var print = false

    @Option(help: "Record the video and the faces into .mov files in this directory.")
    var record: String?

    @Option(help: "When to publish video: on-demand (while subscribed), always, off.")
    var video = VideoMode.onDemand

    @Flag(help: "Encode video even when the source is already H.264.")
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

    @OptionGroup var global: GlobalOptions

    private func cameraOptions() throws -> V4L2Source.Options {
        var options = V4L2Source.Options()
        if let size { (options.width, options.height) = try parseSize(size, option: "--size") }
        if let fps {
            guard fps > 0 else { throw ValidationError("--fps must be positive") }
            options.frameRate = fps
        }
        if let pixelFormat {
            guard let format = V4L2PixelFormat(name: pixelFormat) else {
                throw ValidationError(
                    "--pixel-format '\(pixelFormat)' is not a pixel format such as yuyv, nv12 or mjpeg")
            }
            options.pixelFormat = format
        }
        guard reconnectTimeout >= 0 else { throw ValidationError("--reconnect-timeout must not be negative") }
        options.reconnectTimeout = .milliseconds(Int(reconnectTimeout * 1000))
        return options
    }

    func validate() throws {
        guard statusInterval > 0 else { throw ValidationError("--status-interval must be positive") }
        if let wait = waitForSubscriber, wait < 0 {
            throw ValidationError("--wait-for-subscriber must not be negative")
        }
    }

    func run() async throws {
        let logger = global.makeLogger()
        var configuration = PipelineConfiguration(source: source ?? SampleMedia.faces640x480.path)
        configuration.sourceID = sourceID
        configuration.sourceOptions = MediaFileSource.Options(realtime: realtime, loop: loop)
        configuration.camera = try cameraOptions()
        try detection.apply(to: &configuration)
        configuration.models = models.modelFiles
        try identity.apply(to: &configuration)
        if let frames {
            var output = FramesConfiguration(format: frames)
            (output.maximumWidth, output.maximumHeight) = try parseSize(framesSize, option: "--frames-size")
            guard framesRate > 0 else { throw ValidationError("--frames-rate must be positive") }
            output.rate = framesRate
            configuration.frames = output
        }
        configuration.publish = try Endpoint(publishTo ?? publish)
        configuration.connectToBroker = publishTo != nil
        configuration.allowRemote = insecure
        configuration.metadataIn = try metadataIn.map { try Endpoint($0) }
        guard metadataRate > 0 else { throw ValidationError("--metadata-rate must be positive") }
        configuration.metadataInRate = metadataRate
        switch (curveKey, allow, serverKey) {
        case (nil, nil, nil): break
        case (let key?, let allowed?, nil) where publishTo == nil:
            configuration.curve = try CurveServer(keyFile: key, allow: allowed)
        case (let key?, nil, let server?) where publishTo != nil:
            configuration.brokerCurve = try CurveClient(keyFile: key, serverKeyFile: server)
        default:
            throw ValidationError(
                "keys: --curve-key with --allow to bind --publish, or --curve-key with --server-key to --publish-to a broker"
            )
        }
        configuration.waitForSubscriber = waitForSubscriber.map { .milliseconds(Int($0 * 1000)) }
        configuration.statusInterval = .milliseconds(Int(statusInterval * 1000))
        guard !(everyFrame && dropLate) else {
            throw ValidationError("--every-frame and --drop-late exclude each other")
        }
        configuration.discardLateFrames = everyFrame ? false : dropLate ? true : nil
        configuration.video = video
        configuration.reencode = reencode
        configuration.encoder.preset = preset
        configuration.encoder.crf = crf
        configuration.encoder.bitrate = bitrate
        configuration.encoder.keyFrameInterval = gop
        // In-process subscribers (the printer, the recorder) listen on an endpoint only this
        // process can reach, which needs no keys even when the network endpoint does.
        let localEndpoint = try Endpoint("inproc://sightline-run-\(sourceID)")
        configuration.alsoPublish = [localEndpoint]

        let pipeline = try AnalysisPipeline(configuration: configuration, logger: logger)
        // A service group shuts its services down last to first: the pipeline comes last, so
        // it stops first and the printer and recorder still see its final status. Neither
        // ends on its own (a service that returns while the group waits for another is an
        // error): each finishes when the group asks, once the final status is in.
        var services: [any Service] = []
        var recorder: RecorderService?
        if let record {
            recorder = try RecorderService(
                configuration: try recording.configuration(sourceID: sourceID, directory: record),
                endpoints: [localEndpoint], untilSourceStops: false, logger: logger)
            services.append(recorder!)
            _ = await pipeline.publisher.waitForSubscriber(timeout: .seconds(2))
        }
        if print {
            services.append(try EventPrinter(endpoint: localEndpoint, sourceID: sourceID))
            _ = await pipeline.publisher.waitForSubscriber(timeout: .seconds(2))
        }
        services.append(pipeline)
        var failure: (any Error)?
        do { try await runServices(services, logger: logger) } catch { failure = error }
        // The final status must reach remote subscribers before the process exits.
        await pipeline.publisher.close()
        Bus.finish()
        if let failure { throw failure }
        for file in recorder?.recorder.counters.files ?? [] { logger.notice("recording: \(file)") }
        if let counters = pipeline.finalCounters, counters.framesIn == 0 {
            throw SightlineError.sourceFailed(source: configuration.source, reason: "no frame could be decoded")
        }
    }
}

/// Prints what a subscriber receives, for `run --print`.
final class EventPrinter: Service, @unchecked Sendable {
    private let subscriber: Subscriber

    init(endpoint: Endpoint, sourceID: String) throws {
        subscriber = try Subscriber(
            endpoints: [endpoint], topics: Subscriber.topics(kinds: MessageKind.analytics, source: sourceID))
    }

    /// Prints until asked to shut down (the group asks once the pipeline has finished), then
    /// until the pipeline's final status has arrived, or nothing has for two seconds.
    func run() async throws {
        var idleSince = ContinuousClock.now
        var sawFinalStatus = false
        while true {
            if Task.isShuttingDownGracefully && (sawFinalStatus || ContinuousClock.now - idleSince > .seconds(2)) {
                subscriber.close()
                return
            }
            guard let received = try subscriber.receive(timeout: .milliseconds(50)) else {
                await Task.yield()
                continue
            }
            idleSince = .now
            printLine(received.json)
            if let state = received.message.status?.state, state == .stopped || state == .failed {
                sawFinalStatus = true
            }
        }
    }
}

func printLine(_ json: [UInt8]) {
    FileHandle.standardOutput.write(Data(json + [UInt8(ascii: "\n")]))
}

extension VideoMode: ExpressibleByArgument {}
extension FrameInfo.Format: ExpressibleByArgument {}

/// `WIDTHxHEIGHT`, both positive.
func parseSize(_ text: String, option: String) throws -> (width: Int, height: Int) {
    let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
    guard parts.count == 2, parts.allSatisfy({ $0 > 0 }) else {
        throw ValidationError("\(option) '\(text)' is not WIDTHxHEIGHT, for example 1280x720")
    }
    return (parts[0], parts[1])
}

/// What to detect, and how: `run`'s detection options.
struct DetectionOptions: ParsableArguments {
    @Option(help: "What to detect: faces, barcodes, or both (faces,barcodes).")
    var detect = "faces"

    @Option(help: "Double the image this many times before detecting (0-3): finds faces half the size, 4x slower.")
    var upsample = 0

    @Option(help: "Added to the detector's threshold; negative finds more faces (and more mistakes).")
    var threshold = 0.0

    @Option(help: "Ignore faces narrower than this many pixels.")
    var minFaceSize = 0

    @Option(help: "Threads each frame's face scan is spread over (1-64; same answers). Default: the usable cores.")
    var detectorThreads = FaceDetector.availableCores

    @Option(help: "Code types to read (qr, ean13, code128 … or all).")
    var codeTypes = "all"

    @Flag(help: "Read codes harder: more rows and rotations, about 3x slower; for poor or turned images.")
    var tryHarder = false

    func apply(to configuration: inout PipelineConfiguration) throws {
        var detections = Set<Detection>()
        for name in detect.split(separator: ",") {
            guard let detection = Detection(rawValue: String(name)) else {
                throw ValidationError("--detect '\(name)' is not one of: faces, barcodes")
            }
            detections.insert(detection)
        }
        guard !detections.isEmpty else { throw ValidationError("--detect needs faces, barcodes or both") }
        configuration.detect = detections
        configuration.detector = FaceDetector.Configuration(
            upsample: upsample, adjustThreshold: threshold, minimumFaceSize: minFaceSize, threads: detectorThreads)
        configuration.barcodes = BarcodeDetector.Configuration(
            types: try MachineReadableCodeType.list(codeTypes), tryHarder: tryHarder)
    }
}
