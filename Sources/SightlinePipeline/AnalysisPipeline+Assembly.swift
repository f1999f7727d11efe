import Foundation
import Logging
import ServiceLifecycle
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import Synchronization

/// How a pipeline is put together from its configuration: the source, the detectors, the
/// outputs frames go to, and the sound. `AnalysisPipeline.init` calls these in that order.
extension AnalysisPipeline {
    /// What the configuration is refused for before anything opens.
    static func check(_ configuration: PipelineConfiguration) throws {
        guard SourceID.isValid(configuration.sourceID) else {
            throw SightlineError.invalidArgument(
                "source ID '\(configuration.sourceID)' must be 1-64 letters, digits, '.', '_' or '-'")
        }
        guard !configuration.detection.detectors.isEmpty else {
            throw SightlineError.invalidArgument("nothing to detect")
        }
        if let orientation = configuration.orientation, !(1...8).contains(orientation) {
            throw SightlineError.invalidArgument("orientation \(orientation) is not an EXIF orientation 1-8")
        }
    }

    /// Opens a pipeline on a thread of its own, for callers on Swift's cooperative threads
    /// (`serve`'s sources): opening a stream waits on the network up to its timeout, and
    /// would hold one of those threads (two on two cores) and everything queued behind it.
    /// A graceful shutdown or cancellation gives the opening up at once, and it throws.
    package static func opening(configuration: PipelineConfiguration, logger: Logger) async throws
        -> AnalysisPipeline
    {
        let interrupt = InterruptFlag()
        // Some opens cannot be interrupted (a FIFO with no writer blocks in open(2)): a
        // shutdown answers at once, and the thread, when it returns, closes what it opened.
        let waiting = Mutex<CheckedContinuation<AnalysisPipeline, Error>?>(nil)
        return try await cancelWhenGracefulShutdown {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    waiting.withLock { $0 = continuation }
                    if Task.isCancelled { waiting.withLock { $0.take() }?.resume(throwing: CancellationError()) }
                    Thread.start(named: "opening") {
                        let result = Result {
                            try AnalysisPipeline(configuration: configuration, logger: logger, interrupt: interrupt)
                        }
                        waiting.withLock { $0.take() }?.resume(with: result)
                    }
                }
            } onCancel: {
                interrupt.set()
                waiting.withLock { $0.take() }?.resume(throwing: CancellationError())
            }
        }
    }

    /// The source's frames, and the same as media when it is a file or stream (its packets,
    /// its audio). `interrupt` gives up opening a stream; a camera opens without waiting.
    static func open(_ source: PipelineSource, logger: Logger, interrupt: InterruptFlag) throws
        -> (any FrameSource, MediaFileSource?)
    {
        switch source {
        case .camera(let path, let options, _):
            let camera = try V4L2Source(path: path, options: options, logger: logger)
            logger.info(
                "camera",
                metadata: ["device": "\(camera.path)", "mode": "\(camera.mode)", "chosen": "\(camera.modeWasChosen)"])
            return (camera, nil)
        case .media(let url, let options):
            let media = try MediaFileSource(url: url, options: options, interrupt: interrupt)
            return (media, media)
        case .frames(let frames, let input):
            return (MemoryFrameSource(frames: frames, input: input), nil)
        }
    }

    /// Frames that come in their own time (a camera, a stream, a file paced in real time),
    /// not as fast as they can be read.
    static func isLive(_ source: PipelineSource, file: MediaFileSource?) -> Bool {
        switch source {
        case .camera: true
        case .media: file.map { $0.isNetworkStream || $0.options.realtime } ?? true
        case .frames: false
        }
    }

    /// The detectors the configuration asks for, their settings checked and their models
    /// loaded.
    struct Detectors {
        var faces: [FaceDetector] = []
        /// What names faces, when identities are asked for.
        var identification: FaceIdentification?
        var codes: BarcodeDetector?

        init(
            _ configuration: PipelineDetection, input: InputDescription, analysingWholeFile: Bool, logger: Logger
        ) throws {
            if configuration.detectors.contains(.faces) {
                // At a chosen rate, frames are not batched nor scanned ahead: a frame held for
                // its batch's next would be a second of video or more, and its faces would
                // reach a recorder after the video had passed them.
                faces = try AnalysisPipeline.faceDetectors(
                    configuration.faces, analysingWholeFile: analysingWholeFile,
                    framesAhead: analysingWholeFile && configuration.framesPerSecond == nil)
                identification = try AnalysisPipeline.loadFaceModels(into: faces, configuration, logger)
                if let notice = FaceDetector.instructionSet.fallbackNotice { logger.warning("\(notice)") }
            }
            if configuration.detectors.contains(.codes) {
                codes = try BarcodeDetector(configuration: configuration.codes)
            }
            // Where frames keep time, the first ones are detected as fast as the rest; a file
            // analysed whole has no latency to keep and skips the blank scans.
            if !analysingWholeFile {
                for detector in faces { try detector.prepare(for: input) }
                try codes?.prepare(for: input)
            }
        }
    }

    /// The outputs frames go to, each with its own queue, so a slow one never holds up
    /// another.
    struct Outputs {
        let publisher: Publisher
        let sourceID: String
        let discardLateFrames: Bool
        /// Frames analysed a second; nil: all the detectors keep up with.
        let analysisRate: Double?
        let stills: StillImageOutput?
        let logger: Logger
        private(set) var all: [FrameDataOutput] = []

        init(
            publisher: Publisher, sourceID: String, discardLateFrames: Bool, analysisRate: Double?,
            stills: StillImageOutput?, logger: Logger
        ) {
            (self.publisher, self.sourceID, self.discardLateFrames, self.analysisRate, self.stills, self.logger) = (
                publisher, sourceID, discardLateFrames, analysisRate, stills, logger
            )
        }

        /// Detectors behind an output of their own. Analysing every frame of a file: the
        /// file waits for them (bounded memory); a live source's frames being analysed have
        /// the full scans beside tracking give way.
        mutating func analysis<Detector: MetadataObjectDetector>(
            _ detectors: [Detector], annotator: (any TrackedObjectAnnotator<Detector.Object>)? = nil, name: String
        ) -> ObjectAnalysis<Detector> {
            let analysis = ObjectAnalysis(
                detectors: detectors, annotator: annotator, publisher: publisher, sourceID: sourceID, stills: stills,
                logger: logger)
            all.append(
                FrameDataOutput(
                    name: name, delegate: analysis, alwaysDiscardsLateFrames: discardLateFrames,
                    maximumFramesInFlight: 4, rate: analysisRate.map(AnalysisRate.init(framesPerSecond:)),
                    onDelegate: discardLateFrames ? FullScansBeside.frameAnalysed(started:) : nil))
            return analysis
        }

        /// Downscaled frames for other services' detectors: newest wins, one frame waits at
        /// most, the rest are dropped as late.
        mutating func frames(_ configuration: FramesConfiguration) throws -> FramesPublishing {
            let output = try FramesPublishing(
                configuration: configuration, publisher: publisher, sourceID: sourceID, logger: logger)
            all.append(
                FrameDataOutput(
                    name: "frames", delegate: output, alwaysDiscardsLateFrames: true, maximumFramesInFlight: 1))
            return output
        }

        /// The video: an H.264 or H.265 file or stream passes its packets on unless re-encoded;
        /// otherwise every frame is encoded, and a file waits for the encoder rather than
        /// dropping frames.
        mutating func video(_ video: VideoPublishing, from file: MediaFileSource?, reencode: Bool) {
            if let file, file.passThrough != nil, !reencode {
                file.onCompressedPacket = { video.publishCompressed($0, width: $1, height: $2) }
                return
            }
            all.append(
                FrameDataOutput(
                    name: "encode", delegate: video, alwaysDiscardsLateFrames: false,
                    maximumFramesInFlight: VideoPublishing.maximumBacklog))
        }
    }

    /// The source's sound: a camera's microphone, or a file's or stream's own audio.
    struct Sound {
        /// The microphone's publishing (a file's is driven by the file).
        var publishing: AudioPublishing?
        var counters: AudioCountersCell?

        /// A camera's microphone, opened with the camera and before the bus is bound, so that
        /// a missing or busy sound card is the error reported, not a busy port.
        static func openMicrophone(_ configuration: PipelineConfiguration, logger: Logger) throws -> Microphone? {
            guard case .camera(_, _, let device?) = configuration.source else { return nil }
            let microphone = try Microphone(device: device, logger: logger)
            logger.info(
                "microphone",
                metadata: [
                    "device": "\(device)", "mode": "\(microphone.mode)", "chosen": "\(microphone.modeWasChosen)",
                ])
            return microphone
        }

        init(
            _ configuration: PipelineConfiguration, microphone: Microphone?, file: MediaFileSource?,
            publisher: Publisher, logger: Logger
        ) {
            if let microphone {
                publishing = AudioPublishing(
                    publisher: publisher, sourceID: configuration.sourceID, format: microphone.description.output)
                counters = microphone.counters
            } else if let file, let audio = file.input.audio {
                let publishing = AudioPublishing(
                    publisher: publisher, sourceID: configuration.sourceID, format: audio.output)
                file.onAudioPacket = { publishing.publish($0) }
                counters = file.audioCounters
            }
            if let problem = file?.audioProblem {
                logger.warning("the source's audio is left out", metadata: ["reason": "\(problem)"])
            }
        }
    }

    /// The face detectors: for a file analysed whole, scanning each frame whole, one per
    /// thread, each detecting a frame of its own at the same time, so the cores never wait
    /// for each other within a frame; tracking a file analysed whole, one whose full scans
    /// are made ahead on a thread of their own; otherwise one that spreads each frame over
    /// the threads, for a live source's latency and because tracking and the motion gate
    /// start each frame from the one before, and, tracking a live source, whose full scans
    /// are made beside it, so that no frame waits for one.
    fileprivate static func faceDetectors(
        _ configuration: FaceDetector.Configuration, analysingWholeFile: Bool, framesAhead: Bool
    ) throws -> [FaceDetector] {
        let configuration = try configuration.validated()
        guard framesAhead, configuration.threads > 1, !configuration.motionGate else {
            let detector = try FaceDetector(configuration: configuration)
            if !analysingWholeFile, configuration.fullScanInterval > 1, !configuration.motionGate {
                detector.fullScansBeside = try FullScansBeside(for: configuration)
            }
            return [detector]
        }
        if configuration.fullScanInterval > 1 {
            // Tracking: one detector in capture order, its full scans made ahead on threads of their own.
            var tracking = configuration
            tracking.threads -= FullScansAhead.threads(of: configuration)
            let detector = try FaceDetector(configuration: tracking)
            detector.fullScansAhead = try FullScansAhead(for: configuration)
            return [detector]
        }
        var oneThread = configuration
        oneThread.threads = 1
        return try (0..<configuration.threads).map { _ in try FaceDetector(configuration: oneThread) }
    }

    /// Gives the face detectors the landmark model when there is one (one line when not),
    /// and returns what names faces when identities are asked for; that needs both models.
    /// The detectors share the model, which dlib reads from any number of threads.
    fileprivate static func loadFaceModels(
        into detectors: [FaceDetector], _ configuration: PipelineDetection, _ logger: Logger
    ) throws -> FaceIdentification? {
        let models = configuration.models
        guard let identities = try configuration.identities?.validated() else {
            let landmarker = try models.landmarkerIfPresent()
            for detector in detectors { detector.landmarker = landmarker }
            if landmarker == nil {
                logger.notice(
                    "no landmark model: faces have no landmarks, roll comes from the HOG filter and there are no identities; fetch it with tools/fetch-models.sh",
                    metadata: ["missing": "\(models.landmarksPath)"])
            }
            return nil
        }
        let landmarker = try models.landmarkerForIdentities()
        let recognizer = try models.recognizer()
        for detector in detectors { detector.landmarker = landmarker }
        logger.info(
            "naming faces",
            metadata: [
                "people": "\(identities.gallery?.people.count ?? 0)", "threshold": "\(identities.matchThreshold)",
                "refresh": "\(identities.refreshInterval)s", "publish-descriptors": "\(identities.publishDescriptors)",
            ])
        return FaceIdentification(configuration: identities, recognizer: recognizer, logger: logger)
    }
}
