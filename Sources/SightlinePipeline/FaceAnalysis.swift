import Logging
import SightlineBus
import SightlineCapture
import SightlineCore
import SightlineDetection
import Synchronization

/// The detect output's delegate: finds faces in each frame it is given, gives them stable
/// IDs and publishes `faces` and `events` messages.
///
/// Everything but `timing` runs on the detect output's serial queue, which owns the
/// detector and the tracker.
public final class FaceAnalysis: FrameDataOutputDelegate, @unchecked Sendable {
    private let detector: FaceDetector
    private let tracker = FaceTracker()
    private let publisher: Publisher
    private let sourceID: String
    private let logger: Logger
    private let timingState = Mutex(TimingCounters())
    private var facesWerePresent = false
    private var lastFrame: (time: MediaTime, wallTimeNs: UInt64)?

    public init(detector: FaceDetector, publisher: Publisher, sourceID: String, logger: Logger) {
        self.detector = detector
        self.publisher = publisher
        self.sourceID = sourceID
        self.logger = logger
    }

    /// Detection time of every analysed frame. Any thread.
    public var timing: TimingCounters { timingState.withLock { $0 } }

    public func frameDataOutput(_ output: FrameDataOutput, didOutput frame: VideoFrame) {
        let started = ContinuousClock.now
        let detections: [FaceDetection]
        do {
            detections = try detector.detect(in: frame.pixels)
        } catch {
            logger.error("face detection failed; frame skipped", metadata: ["error": "\(error)"])
            return
        }
        let elapsed = ContinuousClock.now - started
        timingState.withLock { $0.record(milliseconds: elapsed.milliseconds) }
        let update = tracker.update(
            detections: detections, imageWidth: frame.pixels.width, imageHeight: frame.pixels.height, time: frame.time,
            duration: frame.duration)
        lastFrame = (frame.time, frame.wallClockNanoseconds)

        for face in update.left { publishEvent(.leave, face: face, wallTimeNs: frame.wallClockNanoseconds) }
        for face in update.entered { publishEvent(.enter, face: face, wallTimeNs: frame.wallClockNanoseconds) }
        // A message for every frame with faces, and one empty message when they are gone.
        if !update.faces.isEmpty || facesWerePresent {
            publisher.publish(
                Message(
                    kind: .faces, source: sourceID, time: frame.time, wallTimeNs: frame.wallClockNanoseconds,
                    faces: update.faces))
        }
        facesWerePresent = !update.faces.isEmpty
    }

    /// At the end of the run: faces still tracked leave. Call only after the detect output
    /// has drained, when its queue no longer touches the tracker.
    public func finish() {
        let wallTime = lastFrame?.wallTimeNs ?? WallClock.nowNanoseconds()
        if facesWerePresent, let last = lastFrame {
            publisher.publish(Message(kind: .faces, source: sourceID, time: last.time, wallTimeNs: wallTime, faces: []))
            facesWerePresent = false
        }
        for face in tracker.finish() { publishEvent(.leave, face: face, wallTimeNs: wallTime) }
    }

    private func publishEvent(_ change: ObjectEvent.Change, face: FaceObject, wallTimeNs: UInt64) {
        logger.info(
            "face \(change.rawValue == "enter" ? "entered" : "left")",
            metadata: [
                "faceID": "\(face.faceID)", "time": "\(String(format: "%.3f", face.time.seconds))s",
                "score": "\(String(format: "%.2f", face.score))",
            ])
        publisher.publish(
            Message(
                kind: .events, source: sourceID, time: face.time, wallTimeNs: wallTimeNs,
                event: ObjectEvent(change: change, object: "face", id: face.faceID, face: face)))
    }
}
