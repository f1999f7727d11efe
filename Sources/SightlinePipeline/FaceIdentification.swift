import Logging
import SightlineCapture
import SightlineCore
import SightlineDetection
import Synchronization

/// What `run --gallery` and `--publish-descriptors` ask for.
package struct IdentityConfiguration: Sendable {
    /// The people faces are matched to; nil: descriptors only (`--publish-descriptors`).
    package var gallery: FaceGallery?
    /// Distances below this are a match (dlib's 0.6 by default).
    package var matchThreshold: Double = 0.6
    /// A tracked face is described again after this many seconds of media time, so a face
    /// first seen turned away can still be named, at a bounded cost.
    package var refreshInterval: Double = 5
    /// Put the descriptor on the bus (in `faces` messages when computed, and in events).
    package var publishDescriptors = false

    package init(
        gallery: FaceGallery?, matchThreshold: Double = 0.6, refreshInterval: Double = 5,
        publishDescriptors: Bool = false
    ) {
        self.gallery = gallery
        self.matchThreshold = matchThreshold
        self.refreshInterval = refreshInterval
        self.publishDescriptors = publishDescriptors
    }

    package func validated() throws -> IdentityConfiguration {
        guard matchThreshold.isFinite, (0...2).contains(matchThreshold) else {
            throw SightlineError.invalidArgument("match threshold must be between 0 and 2, not \(matchThreshold)")
        }
        guard refreshInterval.isFinite, refreshInterval > 0 else {
            throw SightlineError.invalidArgument("identity refresh interval must be positive, not \(refreshInterval)")
        }
        return self
    }
}

/// Whose faces these are: describes a tracked face with dlib's recognition network when it
/// enters and again every `refreshInterval` of media time (never on every frame), and
/// matches the descriptor against the gallery. A face keeps the last name it was matched
/// to for as long as it is tracked; a later match to another person replaces it.
///
/// It is called on its analysis's queue only; the recognizer and the faces it tracks are
/// that queue's, through a lock nobody else takes.
final class FaceIdentification: TrackedObjectAnnotator, Sendable {
    private let configuration: IdentityConfiguration
    private let logger: Logger
    private let state: Mutex<State>

    private struct State {
        let recognizer: FaceRecognizer
        var tracked: [Int: TrackedFace] = [:]
    }

    private struct TrackedFace {
        var identity: FaceIdentity?
        var describedAt: MediaTime
    }

    init(configuration: IdentityConfiguration, recognizer: sending FaceRecognizer, logger: Logger) {
        self.configuration = configuration
        state = Mutex(State(recognizer: recognizer))
        self.logger = logger
    }

    func annotate(_ faces: inout [FaceObject], in frame: VideoFrame) -> [FaceObject] {
        state.withLock { annotate(&faces, in: frame, &$0) }
    }

    private func annotate(_ faces: inout [FaceObject], in frame: VideoFrame, _ state: inout State) -> [FaceObject] {
        var rgb: PixelBuffer?  // converted once per frame, and only when a face is due
        var changed: [FaceObject] = []
        for index in faces.indices {
            let id = faces[index].faceID
            let previous = state.tracked[id]
            if previous.map({ (frame.time - $0.describedAt).seconds >= configuration.refreshInterval }) ?? true,
                let landmarks = faces[index].landmarks
            {
                rgb = rgb ?? frame.pixels.converted(to: .rgb24)
                guard let rgb else { continue }
                let points = landmarks.map {
                    PixelPoint(
                        x: Int(($0.x * Double(rgb.width)).rounded()), y: Int(($0.y * Double(rgb.height)).rounded()))
                }
                do {
                    let descriptor = try state.recognizer.descriptor(of: points, in: rgb)
                    let match = configuration.gallery?.match(descriptor, threshold: configuration.matchThreshold)
                    let identity = match ?? previous?.identity
                    state.tracked[id] = TrackedFace(identity: identity, describedAt: frame.time)
                    if configuration.publishDescriptors { faces[index].descriptor = descriptor.values }
                    if let match, match.name != previous?.identity?.name {
                        faces[index].identity = match
                        changed.append(faces[index])
                    }
                } catch {
                    // Leave the face unnamed for now; it is tried again at the next refresh.
                    state.tracked[id] = TrackedFace(identity: previous?.identity, describedAt: frame.time)
                    logger.warning("face description failed", metadata: ["id": "\(id)", "error": "\(error)"])
                }
            }
            faces[index].identity = state.tracked[id]?.identity
        }
        return changed
    }

    func objectsLeft(_ faces: inout [FaceObject]) {
        state.withLock { state in
            for index in faces.indices {
                faces[index].identity = state.tracked.removeValue(forKey: faces[index].faceID)?.identity
            }
        }
    }
}
