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
import SightlineService
import Synchronization

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Capture, detect faces and codes, and publish events until the source ends or SIGINT/SIGTERM.",
        discussion: """
            Examples:
              sightline run --realtime --print
              sightline run --source rtsp://camera.local/stream --source-id door
              sightline run --source clip.mp4 --publish ipc:///tmp/sightline.sock
              sightline run --realtime --record recordings/ --keep 7d --max-total 50G
              sightline run --source shelf.mp4 --detect faces,barcodes --code-types qr,ean13
              sightline run --source /dev/video0 --size 1280x720 --fps 30 --pixel-format mjpeg
              sightline run --source /dev/video0 --metrics 127.0.0.1:9560
              sightline run --source /dev/video0 --gallery faces.json --mqtt mqtt://127.0.0.1
            """)

    @OptionGroup var source: SourceOptions

    @Option(help: "Where to publish (tcp://HOST:PORT, ipc://PATH). Loopback unless --insecure.")
    var publish = Endpoint.defaultPublish.string

    @Option(
        help: "Publish through a broker: connect to its frontend (see `sightline broker`) instead of binding --publish."
    )
    var publishTo: String?

    @Flag(help: "Allow binding a network address (bus, metrics) without authentication.")
    var insecure = false

    @Option(help: "The publisher's CURVE key pair (.key): subscribers must present an allowed key.")
    var curveKey: String?

    @Option(help: "Allowed subscriber keys: a .pub file or a directory of them (with --curve-key).")
    var allow: String?

    @Option(help: "With --publish-to: the CURVE broker's public key (.pub); --curve-key is then this source's key.")
    var serverKey: String?

    @Option(help: "Wait up to this many seconds for a subscriber before the first message.")
    var waitForSubscriber: Double?

    @Option(
        name: .customLong("print"), defaultAsFlag: PrintFormat.auto,
        help: ArgumentHelp(
            "Also print every published message on stdout: `text` is a short line each, `json` JSON lines; alone, text on a terminal and JSON into a pipe or file.",
            valueName: "format"))
    var print: PrintFormat? = nil

    @OptionGroup var metrics: MetricsOptions
    @OptionGroup var mqtt: MQTTOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if let wait = waitForSubscriber, wait < 0 {
            throw ValidationError("--wait-for-subscriber must not be negative")
        }
    }

    func run() async throws {
        let logger = global.makeLogger()
        var source = try self.source.configuration()
        var pipeline = source.pipeline!
        let endpoint = try Endpoint(publishTo ?? publish)
        pipeline.bus.allowRemote = insecure
        switch (curveKey, allow, serverKey, publishTo) {
        case (nil, nil, nil, nil): pipeline.bus.publishing = .bind(endpoint)
        case (nil, nil, nil, _?): pipeline.bus.publishing = .broker(endpoint)
        case (let key?, let allowed?, nil, nil):
            pipeline.bus.publishing = .bind(endpoint, curve: try CurveServer(keyFile: key, allow: allowed))
        case (let key?, nil, let server?, _?):
            pipeline.bus.publishing = .broker(endpoint, key: try CurveClient(keyFile: key, serverKeyFile: server))
        default:
            throw ValidationError(
                "keys: --curve-key with --allow to bind --publish, or --curve-key with --server-key to --publish-to a broker"
            )
        }
        pipeline.bus.waitForSubscriber = try waitForSubscriber.map {
            try OptionValues.duration($0, option: "--wait-for-subscriber", allowZero: true)
        }
        source.pipeline = pipeline
        var configuration = ServicesConfiguration()
        configuration.sources = [source]
        configuration.metrics = try metrics.endpoint(insecure: insecure)
        configuration.mqtt = try mqtt.configuration()
        let services = try SightlineServices(configuration: configuration, logger: logger)
        let runner = services.runners[0]
        // In-process subscribers (the printer, the recorder) listen on an inproc endpoint
        // only this process can reach, which needs no keys even when the network one does.
        let printer = try print.map {
            try EventPrinter(
                endpoint: services.localEndpoints[source.id]!, sourceID: source.id,
                readable: $0.isReadable(terminal: isatty(STDOUT_FILENO) != 0), logger: logger)
        }
        var failure: (any Error)?
        do { try await services.run(extra: printer.map { [$0] } ?? []) } catch { failure = error }
        Bus.finish()
        if let failure { throw failure }
        for file in services.recorders.first?.snapshot.counters.files ?? [] { logger.notice("recording: \(file)") }
        // A run stopped (a signal) before its first frame decoded failed at nothing.
        if let running = runner.pipeline, let counters = running.finalCounters, counters.framesIn == 0,
            !running.wasStopped
        {
            throw SightlineError.sourceFailed(source: pipeline.source.name, reason: "no frame could be decoded")
        }
    }
}

/// Prints what a subscriber receives, for `run --print`.
final class EventPrinter: Service, Sendable {
    /// Made by `init`, then used only by `run()`'s thread, which holds the lock while it prints.
    private let subscriber: Mutex<Subscriber>
    /// Short lines for a person (`PrintedLine`) rather than JSON.
    private let readable: Bool
    private let logger: Logger

    init(endpoint: Endpoint, sourceID: String, readable: Bool, logger: Logger) throws {
        self.readable = readable
        self.logger = logger
        subscriber = Mutex(
            try Subscriber(
                endpoints: [endpoint], topics: Subscriber.topics(kinds: MessageKind.analytics, source: sourceID)))
    }

    /// Prints until asked to shut down (the group asks once the pipeline has finished), then
    /// until the pipeline's final status has arrived, or nothing has for two seconds.
    func run() async throws {
        try await BlockingLoop.run(name: "printer") { [self] stop in
            try subscriber.withLock { try printMessages(from: $0, until: stop) }
        }
    }

    private func printMessages(from subscriber: Subscriber, until stop: StopRequest) throws {
        var idleSince = ContinuousClock.now
        var sawFinalStatus = false
        var printing = true
        while !(stop.isRequested && (sawFinalStatus || ContinuousClock.now - idleSince > .seconds(2))) {
            // A message or the stop; then what still comes, in steps the bound above sees.
            let received =
                stop.isRequested
                ? try subscriber.receive(timeout: .milliseconds(50))
                : try subscriber.receive(timeout: .seconds(3600), wakingOn: stop.wakeUp)
            guard let received else { continue }
            let line = readable ? PrintedLine.describe(received.message).map { Array($0.utf8) } : received.json
            if printing, let line, !printLine(line) {
                // The reader went away (`| head`): the run and its recording go on.
                logger.warning("standard output is closed: no more lines are printed; the run goes on")
                printing = false
            }
            // After the write: a reader slow to take standard output is not silence.
            idleSince = .now
            if let state = received.message.status?.state, state == .stopped || state == .failed {
                sawFinalStatus = true
            }
        }
        subscriber.close()
    }
}

/// Writes one JSON line to standard output; false once nobody reads it any more (EPIPE:
/// `main` ignores SIGPIPE, which would otherwise end the process and a recording with it).
func printLine(_ json: [UInt8]) -> Bool {
    (try? FileHandle.standardOutput.write(contentsOf: Data(json + [UInt8(ascii: "\n")]))) != nil
}

extension VideoMode: ExpressibleByArgument {}
extension AudioMode: ExpressibleByArgument {}
extension MediaFileSource.RTSPTransport: ExpressibleByArgument {}
extension FrameInfo.Format: ExpressibleByArgument {}

/// `WIDTHxHEIGHT`, both positive.
func parseSize(_ text: String, option: String) throws -> (width: Int, height: Int) {
    let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
    guard parts.count == 2, parts.allSatisfy({ (1...65_536).contains($0) }) else {
        throw ValidationError("\(option) \(OptionValues.shown(text)) is not WIDTHxHEIGHT, for example 1280x720")
    }
    return (parts[0], parts[1])
}

/// What to detect, and how: `run`'s detection options.
struct DetectionOptions: ParsableArguments {
    @Option(help: "What to detect: faces, barcodes, or both (faces,barcodes).")
    var detect = "faces"

    @Option(
        parsing: .unconditional,
        help: "Double the image this many times before detecting (0-3): finds faces half the size, 4x slower.")
    var upsample = 0

    // `.unconditional`: a negative value ("-0.5") is the option's value, not another option.
    @Option(
        parsing: .unconditional,
        help: "Added to the detector's threshold; negative finds more faces (and more mistakes).")
    var threshold = 0.0

    @Option(help: "Ignore faces narrower than this many pixels.")
    var minFaceSize = 0

    @Option(
        help:
            "Threads each frame's face scan is spread over (1-64; same answers); a file analysed whole detects this many frames at once. Default: the usable cores."
    )
    var detectorThreads = FaceDetector.availableCores

    @Option(
        help:
            "Scan the whole frame every N analysed frames (1-300), and between them only around the faces being tracked (1: every frame whole; new faces are found at the next full scan)."
    )
    var fullScanInterval = 1

    @Option(
        help:
            "Analyse this many frames a second (0.1-1000), evenly spaced; every frame is still published and recorded, and the ones left out are counted as dropped for `rate`. Default: every frame the detectors keep up with."
    )
    var detectFps: Double?

    @Flag(help: "Skip face detection on frames where nothing moved since the last one analysed, holding its faces.")
    var motionGate = false

    @Option(help: "Code types to read (qr, ean13, code128 … or all).")
    var codeTypes = "all"

    @Flag(help: "Read codes harder: more rows and rotations, about 3x slower; for poor or turned images.")
    var tryHarder = false

    func apply(to configuration: inout PipelineConfiguration) throws {
        let names = BuiltInDetector.allCases.map(\.kind.detection).joined(separator: ", ")
        var detections = Set<BuiltInDetector>()
        for name in detect.split(separator: ",") {
            guard let detection = BuiltInDetector(named: name) else {
                throw ValidationError("--detect '\(name)' is not one of: \(names)")
            }
            detections.insert(detection)
        }
        guard !detections.isEmpty else { throw ValidationError("--detect needs one or more of: \(names)") }
        configuration.detection.detectors = detections
        // Checked here too, with the ranges the detector checks, so that each error names its option.
        typealias Faces = FaceDetector.Configuration
        configuration.detection.faces = Faces(
            upsample: try OptionValues.integer(upsample, option: "--upsample", in: Faces.upsampleRange),
            adjustThreshold: try OptionValues.number(threshold, option: "--threshold", in: Faces.adjustThresholdRange),
            minimumFaceSize: try OptionValues.integer(minFaceSize, option: "--min-face-size", in: 0...65_536),
            threads: try OptionValues.integer(detectorThreads, option: "--detector-threads", in: Faces.threadsRange),
            fullScanInterval: try OptionValues.integer(
                fullScanInterval, option: "--full-scan-interval", in: Faces.fullScanIntervalRange),
            motionGate: motionGate)
        configuration.detection.codes = BarcodeDetector.Configuration(
            types: try MachineReadableCodeType.list(codeTypes), tryHarder: tryHarder)
        configuration.detection.framesPerSecond = try detectFps.map {
            try OptionValues.number($0, option: "--detect-fps", in: 0.1...1000)
        }
    }
}
