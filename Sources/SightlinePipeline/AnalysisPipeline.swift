import Foundation
import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlineMovie
import Synchronization

/// Everything `sightline run` needs to know: where frames come from, what is looked for
/// in them, the video made of them, and where it all is published. Each part holds only
/// the options that go with it, so that a combination that cannot work cannot be written
/// (a camera's mode for a file, server keys for a broker's client).
package struct PipelineConfiguration: Sendable {
    /// A camera or media, with the options of its kind.
    package var source: PipelineSource
    package var sourceID: String = "cam1"
    /// What the log calls the input where its path would say less to a person (the bundled
    /// sample, whose path lies inside the build or install directory); nil: its path or URL.
    package var inputLabel: String?
    /// How the source is mounted, as an EXIF orientation (1-8), over what the source says
    /// (a file's display matrix): a camera mounted turned. Recordings show it turned.
    package var orientation: Int?
    package var detection = PipelineDetection()
    package var video = PipelineVideo()
    package var bus = PipelineBus()
    /// How often a `running` status with counters is published.
    package var statusInterval: Duration = .seconds(5)

    package init(source: PipelineSource) { self.source = source }

    /// A camera (a device node) or media (anything else) with their default options.
    package init(source name: String) { self.init(source: .named(name)) }
}

/// What a pipeline looks for in its frames, and how it keeps up with them.
package struct PipelineDetection: Sendable {
    /// The detectors that run.
    package var detectors: Set<BuiltInDetector> = [.faces]
    package var faces = FaceDetector.Configuration()
    /// Where the landmark and recognition models are (both optional for plain detection).
    package var models = FaceModelFiles.locate()
    /// Whose faces: a gallery to match, or descriptors to publish; nil: neither.
    package var identities: IdentityConfiguration?
    package var codes = BarcodeDetector.Configuration()
    /// Drop late frames at the detectors, or analyse every frame; nil: by the source, as
    /// AVFoundation does: a live source (a camera, a network stream, a file paced with
    /// `realtime`) drops, a file read as fast as it can be waits for its detectors.
    package var discardLateFrames: Bool?
    /// Frames analysed a second, evenly spaced (`--detect-fps`); nil: every frame the
    /// detectors keep up with. The frames left out are still published and recorded.
    package var framesPerSecond: Double?

    package init() {}
}

/// The video a pipeline publishes, and the downscaled frames it hands other services.
package struct PipelineVideo: Sendable {
    /// When to publish video; H.264 and H.265 sources pass their packets on unless `reencode`.
    package var mode = VideoMode.onDemand
    package var encoder = VideoEncoder.Options()
    package var reencode = false
    /// Downscaled frames for other services' detectors; nil: none.
    package var frames: FramesConfiguration?

    package init() {}
}

/// Where a pipeline publishes, and where other services publish to it.
package struct PipelineBus: Sendable {
    /// Where the publisher goes: an address it binds (with the keys subscribers must hold),
    /// or a broker's frontend it connects to (with the key it proves itself with).
    package enum Publishing: Sendable {
        case bind(Endpoint, curve: CurveServer? = nil)
        case broker(Endpoint, key: CurveClient? = nil)
    }

    package var publishing = Publishing.bind(.defaultPublish)
    /// Allow binding a tcp address other machines can reach, without authentication.
    package var allowRemote = false
    /// More endpoints the publisher binds, such as an inproc one for an in-process recorder.
    package var alsoPublish: [Endpoint] = []
    /// Hold the first message until a subscriber is connected, for at most this long.
    package var waitForSubscriber: Duration?
    /// Where other services publish timed metadata (`metadata/<source>/`) and detectors in
    /// other processes their objects (`objects/<source>/`) for this source; nil: none in.
    package var metadataIn: Endpoint?
    /// Groups a second `metadataIn` takes from all clients together.
    package var metadataInRate = 200
    /// How long a detector's objects stay after its last group, in media time.
    package var objectsHold = MediaTime(value: 1, timescale: 1)

    package init() {}

    /// The address published to or bound.
    package var endpoint: Endpoint {
        switch publishing {
        case .bind(let endpoint, _), .broker(let endpoint, _): endpoint
        }
    }

    /// The keys a bound publisher (and metadata-in beside it) asks of the other side.
    var serverCurve: CurveServer? {
        if case .bind(_, let curve) = publishing { return curve }
        return nil
    }

    func publisher(logger: Logger) throws -> Publisher {
        switch publishing {
        case .bind(let endpoint, let curve):
            try Publisher(
                endpoint: endpoint, alsoBind: alsoPublish, allowRemote: allowRemote, curve: curve, logger: logger)
        case .broker(let endpoint, let key):
            try Publisher(
                endpoint: endpoint, alsoBind: alsoPublish, connectsToBroker: true, brokerCurve: key, logger: logger)
        }
    }
}

/// The detectors a pipeline has built in, each named by the kind of object it finds
/// (`--detect faces,barcodes`), so the names live with the kinds.
package enum BuiltInDetector: Sendable, CaseIterable {
    case faces, codes

    /// The kind of object the detector finds.
    package var kind: ObjectKind {
        switch self {
        case .faces: .faces
        case .codes: .codes
        }
    }

    /// The detector that finds the kind a status names (`faces`, `barcodes`).
    package init?(named name: some StringProtocol) {
        guard let detector = Self.allCases.first(where: { $0.kind.detection == name }) else { return nil }
        self = detector
    }
}

/// capture → detect → publish for one source, as a swift-service-lifecycle service.
///
/// `init` opens the source, the detector and the endpoint, so bad input fails before
/// anything runs. `run()` goes until the source ends or a graceful shutdown (SIGINT,
/// SIGTERM) arrives, then publishes a final `stopped` status with every counter.
package final class AnalysisPipeline: Service, Sendable {
    package let configuration: PipelineConfiguration
    package let publisher: Publisher
    private let session: CaptureSession
    /// A camera's controls, which the operations server lists and changes; nil for media.
    package let cameraControls: CameraControls?
    /// Pictures of a live source taken while it runs (`latest.jpg`); nil for a file read
    /// as fast as it goes.
    package let stills: StillImageOutput?
    private let faces: ObjectAnalysis<FaceDetector>?
    /// Whether the face detector's full scans are made beside it (a live source, tracking).
    private let fullScansBeside: Bool
    private let codes: ObjectAnalysis<BarcodeDetector>?
    private let video: VideoPublishing
    private let audioCounters: AudioCountersCell?
    private let microphone: Microphone?
    private let microphonePublishing: AudioPublishing?
    private let metadataInput: MetadataInput?
    private let framesOutput: FramesPublishing?
    private let logger: Logger
    private let result = Mutex<PipelineCounters?>(nil)
    private let currentState: StateCell
    private let microphoneState = StateCell(SourceStatus(state: .running, device: "microphone"))
    /// Whether the detectors drop late frames or see every one, as the status says.
    package let analysisMode: SourceStatus.Analysis
    /// Frames come in their own time (a camera, a stream, a paced file), so that a pause in
    /// them is a stall, not detectors the source waits for.
    private let isLive: Bool
    /// A live network stream, which reconnects by itself when it drops.
    package let isLiveStream: Bool
    /// How long a live source may go without a frame before it counts as stalled: three
    /// frame intervals, 2 s at least.
    private let stallLimit: Duration
    /// Whether the stall in progress has been said (log and status).
    private let stallSaid = Atomic<Bool>(false)

    /// `interrupt`, set from another thread, gives up opening a stream at once.
    package init(
        configuration: PipelineConfiguration, logger: Logger, interrupt: InterruptFlag = InterruptFlag()
    ) throws {
        try Self.check(configuration)
        self.configuration = configuration
        // Every line of the pipeline's parts names the source: `serve` runs several.
        var logger = logger
        logger[metadataKey: "source"] = "\(configuration.sourceID)"
        self.logger = logger
        let (source, file) = try Self.open(configuration.source, logger: logger, interrupt: interrupt)
        microphone = try Sound.openMicrophone(configuration, logger: logger)
        cameraControls = (source as? V4L2Source)?.controls
        let isLive = Self.isLive(configuration.source, file: file)
        self.isLive = isLive
        isLiveStream = file?.isLiveStream ?? false
        stallLimit = max(.seconds(2), .seconds(3 / max(source.input.frameRate ?? 30, 0.1)))
        let discardLateFrames = configuration.detection.discardLateFrames ?? isLive
        analysisMode = discardLateFrames ? .dropLate : .everyFrame
        // The source and its microphone open, and detectors check their settings, before
        // anything is bound, so a missing device or a bad option is the error reported, not a
        // busy port.
        let detectors = try Detectors(
            configuration.detection, input: source.input, analysingWholeFile: !isLive && !discardLateFrames,
            logger: logger)
        publisher = try configuration.bus.publisher(logger: logger)
        stills = isLive ? StillImageOutput() : nil
        var outputs = Outputs(
            publisher: publisher, sourceID: configuration.sourceID, discardLateFrames: discardLateFrames,
            analysisRate: configuration.detection.framesPerSecond, stills: stills, logger: logger)
        fullScansBeside = detectors.faces.contains { $0.fullScansBeside != nil }
        faces =
            detectors.faces.isEmpty
            ? nil : outputs.analysis(detectors.faces, annotator: detectors.identification, name: "detect")
        codes = detectors.codes.map { outputs.analysis([$0], name: "codes") }
        framesOutput = try configuration.video.frames.map { try outputs.frames($0) }
        video = VideoPublishing(
            publisher: publisher, sourceID: configuration.sourceID, mode: configuration.video.mode,
            encoder: configuration.video.encoder, frameRate: source.input.frameRate ?? 30,
            isLive: isLive, logger: logger)
        if configuration.video.mode != .off {
            outputs.video(video, from: file, reencode: configuration.video.reencode)
        }
        let sound = Sound(configuration, microphone: microphone, file: file, publisher: publisher, logger: logger)
        (microphonePublishing, audioCounters) = (sound.publishing, sound.counters)
        let (publisher, sourceID, currentState) = (self.publisher, configuration.sourceID, StateCell())
        self.currentState = currentState
        let controls = cameraControls
        let session = CaptureSession(source: source, outputs: outputs.all, logger: logger) { event in
            Self.publish(
                event, publisher: publisher, sourceID: sourceID, state: currentState, device: nil, controls: controls)
        }
        self.session = session
        let (bus, recentFrames) = (configuration.bus, framesOutput?.recent)
        metadataInput = try bus.metadataIn.map { endpoint in
            try MetadataInput(
                configuration: .init(
                    endpoint: endpoint, allowRemote: bus.allowRemote, curve: bus.serverCurve,
                    maximumRate: bus.metadataInRate, detectors: .init(hold: bus.objectsHold)),
                sourceID: configuration.sourceID, publisher: publisher, clock: session,
                recentFrames: recentFrames, logger: logger)
        }
    }

    /// A device's interruption or return (the video source's, or the microphone's with
    /// `device`), as a status message and the state health checks read. Called on the
    /// device's thread.
    private static func publish(
        _ event: CaptureSession.SourceEvent, publisher: Publisher, sourceID: String, state: StateCell, device: String?,
        controls: CameraControls? = nil
    ) {
        var status: SourceStatus =
            switch event {
            case .interrupted(let reason): SourceStatus(state: .interrupted, reason: reason, device: device)
            case .resumed: SourceStatus(state: .resumed, device: device)
            }
        if status.state == .resumed { status.controls = controls?.reported }
        state.value.withLock { $0 = status }
        publisher.publish(
            Message(kind: .status, source: sourceID, time: nil, wallTimeNs: WallClock.nowNanoseconds(), status: status))
    }

    /// What the source delivers, turned as `orientation` says when given, with the
    /// microphone's sound when it has one.
    package var input: InputDescription {
        var input = session.input
        if let orientation = configuration.orientation { input.orientation = orientation == 1 ? nil : orientation }
        if let microphone { input.audio = microphone.description }
        return input
    }

    /// The counters as they stand: frames in, drops by reason, detection time, messages.
    package var counters: PipelineCounters {
        var counters = session.counters
        counters.detection = faces?.timing
        counters.codeDetection = codes?.timing
        counters.encoding = video.encodingTiming
        counters.videoPackets = video.packetsPublished
        counters.audio = audioCounters?.counters
        counters.metadataIn = metadataInput?.counters
        counters.objectsIn = metadataInput?.detectorCounters
        counters.framesPublishing = framesOutput?.timing
        (counters.messagesPublished, counters.bytesPublished) = publisher.totals
        return counters
    }

    /// Stops capture as a graceful shutdown would; `run()` then publishes the final status
    /// and returns. Any thread.
    package func stop() {
        session.stop()
        microphone?.stop()  // sound and picture end together
    }

    /// Where the source stands, for health checks: `started` until it runs, `interrupted`
    /// (with the reason) while a device is gone, `resumed` once back, then `stopped` or
    /// `failed`. Any thread.
    package var state: SourceStatus {
        let state = currentState.value.withLock { $0 }
        if [.running, .resumed].contains(state.state), let stall = stallReason {
            return SourceStatus(state: .interrupted, reason: stall)
        }
        return state
    }

    /// How long the source has been interrupted (a camera or stream away), while it is.
    /// Any thread.
    package var timeInterrupted: Duration? { session.timeInterrupted }

    /// Why the live source counts as stalled now (no frame for `stallLimit` while it should
    /// be running); nil otherwise. Any thread.
    package var stallReason: String? {
        guard isLive, [.running, .resumed].contains(currentState.value.withLock({ $0.state })),
            let without = session.timeWithoutFrames, without > stallLimit
        else { return nil }
        return "stalled: no frame for \(String(format: "%.1f", without.seconds)) s"
    }

    /// Says a stall once when it starts (a warning and an `interrupted` status with its
    /// reason) and once when frames come again (`resumed`). Called by the status reports.
    private func reportStall() {
        let stall = stallReason
        guard stallSaid.exchange(stall != nil, ordering: .relaxed) != (stall != nil) else { return }
        if let stall {
            logger.warning("source stalled", metadata: ["reason": "\(stall)"])
            publishStatus(SourceStatus(state: .interrupted, reason: stall))
        } else {
            logger.notice("source no longer stalled")
            publishStatus(SourceStatus(state: .resumed))
        }
    }

    /// Where the microphone stands (`running`, `interrupted` with the reason, `resumed`);
    /// nil without one. It has a state of its own because the video goes on without it.
    /// Any thread.
    package var microphoneStatus: SourceStatus? { microphone == nil ? nil : microphoneState.value.withLock { $0 } }

    /// The reason of the final status of a source asked to stop (a signal, a shutdown); a
    /// source that ended gives its own.
    static let stoppedReason = "stopped"

    /// Whether `run()` ended because the pipeline was asked to stop, not because its source
    /// ended or failed. Any thread.
    package var wasStopped: Bool {
        let final = state
        return final.state == .stopped && final.reason == Self.stoppedReason
    }

    /// The final counters, once `run()` has returned.
    package var finalCounters: PipelineCounters? { result.withLock { $0 } }

    package func run() async throws {
        let counters = try await runToCompletion()
        result.withLock { $0 = counters }
    }

    /// Runs and returns the final counters.
    package func runToCompletion() async throws -> PipelineCounters {
        let input = self.input
        await announce(input)
        let capture = Capture(pipeline: self)
        let parts = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: parts(input, capture: capture), logger: logger))
        try await parts.run()
        return try await finish(capture.completion)
    }

    /// The pipeline's parts in the order they start; a graceful shutdown stops them in the
    /// reverse order, each once the one after it has ended: capture (with the microphone,
    /// so sound and picture end together; frames in flight drain through the outputs, which
    /// then finish), the status reports, the microphone's thread, and last the metadata
    /// input. The source's end shuts them down the same way; cancellation stops them all at
    /// once, and capture still finishes its outputs after they have drained.
    private func parts(_ input: InputDescription, capture: Capture) -> [ServiceGroupConfiguration.ServiceConfiguration]
    {
        var parts: [any Service] = []
        if let metadataInput {
            parts.append(Part(name: "metadata-in", start: { metadataInput.start() }, stop: { metadataInput.stop() }))
        }
        if let microphone, let microphonePublishing {
            let (publisher, sourceID, state) = (publisher, configuration.sourceID, microphoneState)
            parts.append(
                Part(
                    name: "microphone",
                    start: {
                        microphone.start(
                            onPacket: { microphonePublishing.publish($0) },
                            onEvent: {
                                Self.publish(
                                    $0, publisher: publisher, sourceID: sourceID, state: state, device: "microphone")
                            })
                    }, stop: { microphone.finish() }))
        }
        parts.append(StatusReports(pipeline: self, input: input))
        return parts.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) } + [
            .init(service: capture, successTerminationBehavior: .gracefullyShutdownGroup)
        ]
    }

    /// Waits for a subscriber if asked to, and says the source started (log and status).
    private func announce(_ input: InputDescription) async {
        if let wait = configuration.bus.waitForSubscriber {
            logger.info("waiting for a subscriber", metadata: ["endpoint": "\(publisher.endpoint)"])
            // A shutdown (Ctrl-C) ends the wait at once.
            let arrived = await cancelWhenGracefulShutdown { [publisher] in
                await publisher.waitForSubscriber(timeout: wait)
            }
            if !arrived && !Task.isShuttingDownGracefully {
                logger.warning("no subscriber after \(wait); publishing anyway")
            }
        }
        logger.info(
            "started",
            metadata: [
                "source": "\(configuration.sourceID)", "input": "\(configuration.inputLabel ?? input.url)",
                "size": "\(input.width)x\(input.height)",
                "fps": "\(input.frameRate.map { String(format: "%.2f", $0) } ?? "?")",
                "audio": "\(input.audio?.summary ?? "none")",
                "publish": "\(publisher.endpoint)",
                "detect": "\(detections.joined(separator: ","))", "analysis": "\(analysisMode.rawValue)",
                "detect-fps": "\(configuration.detection.framesPerSecond.map { "\($0)" } ?? "all")",
                "simd": "\(FaceDetector.instructionSet)",
                "frames-at-once": "\(faces?.framesAtOnce ?? 1)",
                "full-scans-ahead": "\(faces?.framesAhead ?? 0 > 0)", "full-scans-beside": "\(fullScansBeside)",
                "full-scan-interval": "\(configuration.detection.faces.fullScanInterval)",
                "motion-gate": "\(configuration.detection.faces.motionGate)",
            ])
        var started = SourceStatus(state: .started, input: input, detections: detections, analysis: analysisMode)
        started.controls = cameraControls?.reported
        publishStatus(started)
        currentState.value.withLock { $0 = SourceStatus(state: .running) }
        // A change of the camera's controls (the operations server's PUT) is published at
        // once, so recordings and subscribers know from when exposure was locked.
        cameraControls?.onChange { [weak self] _, change in
            guard let self else { return }
            var status = runningStatus(input)
            status.reason = change
            publishStatus(status)
        }
    }

    /// A part that runs beside capture: started with the others, stopped when shut down or
    /// cancelled.
    private struct Part: Service, CustomStringConvertible {
        let description: String
        let start: @Sendable () -> Void
        let stop: @Sendable () -> Void

        init(name: String, start: @escaping @Sendable () -> Void = {}, stop: @escaping @Sendable () -> Void) {
            (description, self.start, self.stop) = (name, start, stop)
        }

        func run() async {
            start()
            try? await gracefulShutdown()
            stop()
        }
    }

    /// A `running` status with the counters every `statusInterval`, and a stall said when it
    /// starts and ends (looked for every second at most), until shut down.
    private struct StatusReports: Service {
        let pipeline: AnalysisPipeline
        let input: InputDescription

        func run() async {
            let interval = pipeline.configuration.statusInterval
            let tick = min(.seconds(1), interval)
            try? await cancelWhenGracefulShutdown {
                var nextReport = ContinuousClock.now + interval
                while true {
                    try await Task.sleep(for: tick)
                    pipeline.reportStall()
                    if ContinuousClock.now >= nextReport {
                        pipeline.publishRunningStatus(input)
                        nextReport = .now + interval
                    }
                }
            }
        }
    }

    /// The capture session, until the source ends or it is stopped, then the outputs'
    /// last results (once the session has drained them, so nothing else delivers to them);
    /// its completion, or the error it failed with, is kept for the final status.
    private final class Capture: Service, Sendable {
        private let pipeline: AnalysisPipeline
        private let result = Mutex<Result<CaptureSession.Completion, Error>>(.success(.stopped))

        init(pipeline: AnalysisPipeline) { self.pipeline = pipeline }

        var completion: Result<CaptureSession.Completion, Error> { result.withLock { $0 } }

        func run() async {
            let (session, pipeline) = (pipeline.session, pipeline)
            let completion: Result<CaptureSession.Completion, Error>
            do {
                completion = .success(
                    try await withGracefulShutdownHandler {
                        try await session.run()
                    } onGracefulShutdown: {
                        pipeline.stop()
                    })
            } catch {
                completion = .failure(error)
            }
            pipeline.faces?.finish()
            pipeline.codes?.finish()
            pipeline.video.finish()
            result.withLock { $0 = completion }
        }
    }

    private func publishRunningStatus(_ input: InputDescription) { publishStatus(runningStatus(input)) }

    /// The periodic status: `running`, or `interrupted` with its reason while the source is
    /// away or stalled, with the counters either way.
    private func runningStatus(_ input: InputDescription) -> SourceStatus {
        let now = state
        var status = SourceStatus(
            state: now.state == .interrupted ? .interrupted : .running, input: input, counters: counters,
            detections: detections, analysis: analysisMode)
        if now.state == .interrupted { status.reason = now.reason }
        status.controls = cameraControls?.reported
        return status
    }

    /// Ends the inputs and outputs, publishes the final status with every counter, and
    /// returns the counters (or the capture's error).
    private func finish(_ completion: Result<CaptureSession.Completion, Error>) async throws -> PipelineCounters {
        await publisher.flush()
        let final = counters
        switch completion {
        case .success(let how):
            let reason = how == .endOfSource ? session.endReason ?? "end of source" : Self.stoppedReason
            publishStatus(SourceStatus(state: .stopped, reason: reason, counters: final))
            currentState.value.withLock { $0 = SourceStatus(state: .stopped, reason: reason) }
            logger.info("stopped", metadata: Self.summary(final).merging(["reason": "\(reason)"]) { $1 })
        case .failure(let error):
            publishStatus(SourceStatus(state: .failed, reason: "\(error)", counters: final))
            currentState.value.withLock { $0 = SourceStatus(state: .failed, reason: "\(error)") }
        }
        await publisher.flush()
        return try completion.map { _ in final }.get()
    }

    /// What the source detects, as its status says: each kind's name (`faces`, `barcodes`),
    /// and the faces' extra fields (`identities`) when a gallery names faces (a recorder then
    /// declares them).
    private var detections: [String] {
        let named =
            configuration.detection.identities?.gallery != nil
            ? ObjectKind.faces.extraFields.map { [$0.detection] } : nil
        return (configuration.detection.detectors.map(\.kind.detection) + (named ?? [])).sorted()
    }

    private func publishStatus(_ status: SourceStatus) {
        publisher.publish(
            Message(
                kind: .status, source: configuration.sourceID, time: nil, wallTimeNs: WallClock.nowNanoseconds(),
                status: status))
    }

    static func summary(_ counters: PipelineCounters) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "framesIn": "\(counters.framesIn)", "messages": "\(counters.messagesPublished)",
            "bytes": "\(counters.bytesPublished)",
        ]
        for (name, output) in counters.outputs {
            metadata["\(name).delivered"] = "\(output.delivered)"
            for (reason, count) in output.dropped { metadata["\(name).dropped.\(reason)"] = "\(count)" }
        }
        for (reason, count) in counters.sourceSkipped { metadata["skipped.\(reason)"] = "\(count)" }
        if let detection = counters.detection {
            metadata["detectMs.mean"] = "\(String(format: "%.2f", detection.meanMs))"
        }
        return metadata
    }
}

/// A device's state, shared with its event handler.
private final class StateCell: Sendable {
    let value: Mutex<SourceStatus>
    init(_ initial: SourceStatus = SourceStatus(state: .started)) { value = Mutex(initial) }
}
