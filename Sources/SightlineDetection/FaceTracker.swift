import SightlineCore

/// Gives faces stable IDs from frame to frame and says when they enter and leave.
///
/// Each analysed frame's detections are matched to the faces seen before, greedily by
/// overlap (intersection over union of the boxes). A matched face keeps its ID; an
/// unmatched detection is a new face with a new ID. A face that goes unmatched is kept for
/// `maximumMissedFrames` analysed frames (a detector misses now and then), then it leaves.
/// Not thread-safe: one tracker per source, used on the detect output's queue.
public final class FaceTracker {
    public struct Update: Sendable {
        /// The faces detected in this frame, with their IDs.
        public var faces: [FaceObject]
        public var entered: [FaceObject]
        /// Faces that left, as last seen.
        public var left: [FaceObject]
    }

    public var minimumOverlap: Double
    public var maximumMissedFrames: Int
    private var tracks: [Track] = []
    private var nextID = 1

    private struct Track {
        var face: FaceObject
        var missed = 0
    }

    public init(minimumOverlap: Double = 0.3, maximumMissedFrames: Int = 5) {
        self.minimumOverlap = minimumOverlap
        self.maximumMissedFrames = maximumMissedFrames
    }

    /// Matches one analysed frame's detections against the tracked faces.
    public func update(
        detections: [FaceDetection], imageWidth: Int, imageHeight: Int, time: MediaTime, duration: MediaTime?
    ) -> Update {
        let boxes = detections.map { $0.normalizedBounds(imageWidth: imageWidth, imageHeight: imageHeight) }
        // Every (track, detection) pair that overlaps enough, best first.
        var pairs: [(overlap: Double, track: Int, detection: Int)] = []
        for (t, track) in tracks.enumerated() {
            for (d, box) in boxes.enumerated() {
                let overlap = track.face.bounds.intersectionOverUnion(box)
                if overlap >= minimumOverlap { pairs.append((overlap, t, d)) }
            }
        }
        pairs.sort { $0.overlap > $1.overlap }
        var trackFor = [Int?](repeating: nil, count: detections.count)
        var matchedTracks = Set<Int>()
        for pair in pairs where trackFor[pair.detection] == nil && !matchedTracks.contains(pair.track) {
            trackFor[pair.detection] = pair.track
            matchedTracks.insert(pair.track)
        }

        var update = Update(faces: [], entered: [], left: [])
        for (d, detection) in detections.enumerated() {
            let sub = FaceSubDetector(rawValue: detection.subDetector)
            var face = FaceObject(
                faceID: 0, bounds: boxes[d], rollAngle: sub?.rollAngle, yawAngle: sub?.yawAngle, time: time,
                duration: duration, score: detection.score, subDetector: detection.subDetector)
            if let t = trackFor[d] {
                face.faceID = tracks[t].face.faceID
                tracks[t] = Track(face: face)
            } else {
                face.faceID = nextID
                nextID += 1
                tracks.append(Track(face: face))
                update.entered.append(face)
            }
            update.faces.append(face)
        }
        var kept: [Track] = []
        for (t, var track) in tracks.enumerated() {
            if !matchedTracks.contains(t) && track.face.time != time {
                track.missed += 1
                if track.missed > maximumMissedFrames {
                    update.left.append(track.face)
                    continue
                }
            }
            kept.append(track)
        }
        tracks = kept
        return update
    }

    /// Ends tracking (the source ended or stopped): every face still tracked leaves.
    public func finish() -> [FaceObject] {
        defer { tracks.removeAll() }
        return tracks.map(\.face)
    }
}
