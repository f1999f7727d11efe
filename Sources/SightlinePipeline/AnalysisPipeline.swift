import Foundation
import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlineMovie
import Synchronization

/// Everything `sightline run` needs to know.
package struct PipelineConfiguration: Sendable {
    /// A camera or media, with the options of its kind.
    package var source: PipelineSource
    package var sourceID: String = "cam1"
    /// How the source is mounted, as an EXIF orientation (1-8), over what the source says
    /// (a file's display matrix): a camera mounted turned. Recordings show it turned.
    package var orientation: Int?
    /// What to look for in the frames.
    package var detect: Set<Detection> = [.faces]
    package var detector = FaceDetector.Configuration()
    /// Where the landmark and recognition models are (both optional for plain detection).
    package var models = FaceModelFiles.locate()
    /// Whose faces: a gallery to match, or descriptors to publish; nil: neither.
    package var identities: IdentityConfiguration?
    package var barcodes = BarcodeDetector.Configuration()
    package var publish: Endpoint = .defaultPublish
    /// Allow binding a tcp address other machines can reach, without authentication.
    package var allowRemote = false
    /// CURVE keys: encrypted, and only allowed subscribers receive anything.
    package var curve: CurveServer?
    /// `publish` is a broker's frontend to connect to, not an address to bind.
    package var connectToBroker = false
    /// This source's key for a CURVE broker.
    package var brokerCurve: CurveClient?
    /// Hold the first message until a subscriber is connected, for at most this long.
    package var waitForSubscriber: Duration?
    /// How often a `running` status with counters is published.
    package var statusInterval: Duration = .seconds(5)
    /// Drop late frames at the detectors, or analyse every frame; nil: by the source, as
    /// AVFoundation does: a live source (a camera, a network stream, a file paced with
    /// `realtime`) drops, a file read as fast as it can be waits for its detectors.
    package var discardLateFrames: Bool?
    /// When to publish video; H.264 sources pass their packets on unless `reencode`.
    package var video = VideoMode.onDemand
    package var encoder = VideoEncoder.Options()
    package var reencode = false
    /// Downscaled frames for other services' detectors; nil: none.
    package var frames: FramesConfiguration?
    /// Where other services publish timed metadata for this source (`metadata/<source>/`),
    /// and how many groups a second it takes; nil: no metadata in.
    package var metadataIn: Endpoint?
    package var metadataInRate = 200
    /// More endpoints the publisher binds, such as an inproc one for an in-process recorder.
    package var alsoPublish: [Endpoint] = []

    package init(source: PipelineSource) { self.source = source }

    /// A camera (a device node) or media (anything else) with their default options.
    package init(source name: String) { self.init(source: .named(name)) }
}

/// The detectors `sightline run --detect` can turn on, by the names of the kinds they find.
package enum Detection: String, Sendable, CaseIterable {
    case faces, barcodes

    /// The kind of object the detector finds.
    package var kind: ObjectKind {
        switch self {
        case .faces: .faces
        case .barcodes: .codes
        }
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
    private let faces: ObjectAnalysis<FaceDetector>?
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

    package init(configuration: PipelineConfiguration, logger: Logger) throws {
        try Self.check(configuration)
        self.configuration = configuration
        self.logger = logger
        let (source, file) = try Self.open(configuration.source, logger: logger)
        let isLive =
            switch configuration.source {
            case .camera: true
            case .media: file.map { $0.isNetworkStream || $0.options.realtime } ?? true
            case .frames: false
            }
        let discardLateFrames = configuration.discardLateFrames ?? isLive
        analysisMode = discardLateFrames ? .dropLate : .everyFrame
        // Detectors check their settings before anything is bound, so a bad option is the
        // error reported, not a busy port.
        let detectors = try Detectors(
            configuration, input: source.input, analysingWholeFile: !isLive && !discardLateFrames, logger: logger)
        publisher = try Publisher(
            endpoint: configuration.publish, alsoBind: configuration.alsoPublish,
            allowRemote: configuration.allowRemote, curve: configuration.curve,
            connectsToBroker: configuration.connectToBroker, brokerCurve: configuration.brokerCurve,
            logger: logger)
        var outputs = Outputs(
            publisher: publisher, sourceID: configuration.sourceID, discardLateFrames: discardLateFrames,
            logger: logger)
        faces =
            detectors.faces.isEmpty
            ? nil : outputs.analysis(detectors.faces, annotator: detectors.identification, name: "detect")
        codes = detectors.codes.map { outputs.analysis([$0], name: "codes") }
        framesOutput = try configuration.frames.map { try outputs.frames($0) }
        video = VideoPublishing(
            publisher: publisher, sourceID: configuration.sourceID, mode: configuration.video,
            encoder: configuration.encoder, frameRate: source.input.frameRate ?? 30,
            isLive: isLive, logger: logger)
        if configuration.video != .off { outputs.video(video, from: file, reencode: configuration.reencode) }
        let sound = try Sound(configuration, file: file, publisher: publisher, logger: logger)
        (microphone, microphonePublishing, audioCounters) = (sound.microphone, sound.publishing, sound.counters)
        let (publisher, sourceID, currentState) = (self.publisher, configuration.sourceID, StateCell())
        self.currentState = currentState
        let session = CaptureSession(source: source, outputs: outputs.all, logger: logger) { event in
            Self.publish(event, publisher: publisher, sourceID: sourceID, state: currentState, device: nil)
        }
        self.session = session
        metadataInput = try configuration.metadataIn.map { endpoint in
            try MetadataInput(
                configuration: .init(
                    endpoint: endpoint, allowRemote: configuration.allowRemote, curve: configuration.curve,
                    maximumRate: configuration.metadataInRate),
                sourceID: configuration.sourceID, publisher: publisher,
                mediaTime: { session.mediaTime(atWallTimeNs: $0) }, logger: logger)
        }
    }

    /// A device's interruption or return (the video source's, or the microphone's with
    /// `device`), as a status message and the state health checks read. Called on the
    /// device's thread.
    private static func publish(
        _ event: CaptureSession.SourceEvent, publisher: Publisher, sourceID: String, state: StateCell, device: String?
    ) {
        let status: SourceStatus =
            switch event {
            case .interrupted(let reason): SourceStatus(state: .interrupted, reason: reason, device: device)
            case .resumed: SourceStatus(state: .resumed, device: device)
            }
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
    package var state: SourceStatus { currentState.value.withLock { $0 } }

    /// Where the microphone stands (`running`, `interrupted` with the reason, `resumed`);
    /// nil without one. It has a state of its own because the video goes on without it.
    /// Any thread.
    package var microphoneStatus: SourceStatus? { microphone == nil ? nil : microphoneState.value.withLock { $0 } }

    /// The final counters, once `run()` has returned.
    package var finalCounters: PipelineCounters? { result.withLock { $0 } }

    package func run() async throws {
        let counters = try await runToCompletion()
        result.withLock { $0 = counters }
    }

    /// Runs and returns the final counters.
    package func runToCompletion() async throws -> PipelineCounters {
        let input = self.input
        await start(input)
        let completion: Result<CaptureSession.Completion, Error>
        do {
            completion = .success(try await capture(input))
        } catch {
            completion = .failure(error)
        }
        return try await finish(completion)
    }

    /// Waits for a subscriber if asked to, says the source started (log and status), and
    /// starts the inputs beside the capture: metadata from other services, the microphone.
    private func start(_ input: InputDescription) async {
        if let wait = configuration.waitForSubscriber {
            logger.info("waiting for a subscriber", metadata: ["endpoint": "\(publisher.endpoint)"])
            if await !publisher.waitForSubscriber(timeout: wait) {
                logger.warning("no subscriber after \(wait); publishing anyway")
            }
        }
        logger.info(
            "started",
            metadata: [
                "source": "\(configuration.sourceID)", "input": "\(input.url)",
                "size": "\(input.width)x\(input.height)",
                "fps": "\(input.frameRate.map { String(format: "%.2f", $0) } ?? "?")",
                "audio": "\(input.audio?.summary ?? "none")",
                "publish": "\(publisher.endpoint)",
                "detect": "\(detections.joined(separator: ","))", "analysis": "\(analysisMode.rawValue)",
                "simd": "\(FaceDetector.instructionSet)",
                "frames-at-once": "\(faces?.framesAtOnce ?? 1)",
                "full-scans-ahead": "\(faces?.framesAhead ?? 0 > 0)",
                "full-scan-interval": "\(configuration.detector.fullScanInterval)",
                "motion-gate": "\(configuration.detector.motionGate)",
            ])
        publishStatus(SourceStatus(state: .started, input: input, detections: detections, analysis: analysisMode))
        currentState.value.withLock { $0 = SourceStatus(state: .running) }
        metadataInput?.start()
        if let microphone, let microphonePublishing {
            let (publisher, sourceID, state) = (publisher, configuration.sourceID, microphoneState)
            microphone.start(
                onPacket: { microphonePublishing.publish($0) },
                onEvent: {
                    Self.publish($0, publisher: publisher, sourceID: sourceID, state: state, device: "microphone")
                })
        }
    }

    /// Captures until the source ends, a graceful shutdown or cancellation, with a `running`
    /// status and its counters every `statusInterval` meanwhile.
    private func capture(_ input: InputDescription) async throws -> CaptureSession.Completion {
        let session = self.session
        return try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: CaptureSession.Completion?.self) { group in
                group.addTask { try await session.run() }
                group.addTask { [self] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: configuration.statusInterval)
                        if Task.isCancelled { break }
                        publishStatus(
                            SourceStatus(
                                state: .running, input: input, counters: counters, detections: detections,
                                analysis: analysisMode))
                    }
                    return nil
                }
                // The status task ends only when cancelled; wait for the session.
                while let next = try await group.next() {
                    if let completion = next {
                        group.cancelAll()
                        return completion
                    }
                }
                return .stopped
            }
        } onGracefulShutdown: { [self] in
            stop()
        }
    }

    /// Ends the inputs and outputs, publishes the final status with every counter, and
    /// returns the counters (or the capture's error).
    private func finish(_ completion: Result<CaptureSession.Completion, Error>) async throws -> PipelineCounters {
        metadataInput?.stop()
        microphone?.finish()
        faces?.finish()  // session.run() has drained the detector and encoder outputs
        codes?.finish()
        video.finish()
        await publisher.flush()
        let final = counters
        switch completion {
        case .success(let how):
            let reason = how == .endOfSource ? session.endReason ?? "end of source" : "stopped"
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
        let named = configuration.identities?.gallery != nil ? ObjectKind.faces.extraFields.map { [$0.detection] } : nil
        return (configuration.detect.map(\.kind.detection) + (named ?? [])).sorted()
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
