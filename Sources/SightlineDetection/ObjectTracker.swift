import SightlineCore

/// Gives detected objects (faces, codes, other processes' objects) stable IDs from frame to frame and says when they
/// enter and leave.
///
/// Each analysed frame's objects are matched to the ones seen before, greedily by overlap
/// (intersection over union of the boxes) among those that `mayBe` the same, and first to
/// the one it `isSurely` whatever the overlap. A matched
/// object keeps its ID; an unmatched one is new and gets a new ID. An object that goes
/// unmatched is kept for `maximumMissedFrames` analysed frames (detectors miss now and
/// then), then it leaves. Not thread-safe: one tracker per source and kind, used on its
/// output's queue.
package final class ObjectTracker<Object: TrackableObject> {
    package struct Update: Sendable {
        /// The objects in this frame, with their IDs.
        package var objects: [Object]
        package var entered: [Object]
        /// Objects that left, as last seen.
        package var left: [Object]
    }

    package var minimumOverlap: Double
    package var maximumMissedFrames: Int
    /// The ID the next new object gets. Trackers that hand it on to each other (a source's
    /// detectors) never give two objects the same ID.
    package var nextID = 1
    private var tracks: [Track] = []

    private struct Track {
        var object: Object
        /// The frame it was last seen in.
        var seen: MediaTime
        var missed = 0
    }

    package init(minimumOverlap: Double = Object.minimumOverlap, maximumMissedFrames: Int = 5) {
        self.minimumOverlap = minimumOverlap
        self.maximumMissedFrames = maximumMissedFrames
    }

    /// Matches one analysed frame's objects (their IDs are ignored) against the tracked ones.
    ///
    /// Specialised for each kind of object: called from other modules, the generic code
    /// would look up type metadata for every pair it compares (a tenth of a source's CPU
    /// under a detector sending 10,000 objects a second).
    @_specialize(exported:true,where Object == DetectedObject)
    @_specialize(exported:true,where Object == FaceObject)
    @_specialize(exported:true,where Object == MachineReadableCodeObject)
    package func update(_ detected: [Object], time: MediaTime) -> Update {
        // Every (track, object) pair that may match, best overlap first.
        var pairs: [(overlap: Double, track: Int, object: Int)] = []
        for (t, track) in tracks.enumerated() {
            for (o, object) in detected.enumerated() where track.object.mayBe(object) {
                // Above any overlap (at most 1): what is surely the same is matched first.
                let overlap =
                    track.object.isSurely(object) ? 2 : track.object.bounds.intersectionOverUnion(object.bounds)
                if overlap >= minimumOverlap { pairs.append((overlap, t, o)) }
            }
        }
        pairs.sort { $0.overlap > $1.overlap }
        var trackFor = [Int?](repeating: nil, count: detected.count)
        var matchedTracks = Set<Int>()
        for pair in pairs where trackFor[pair.object] == nil && !matchedTracks.contains(pair.track) {
            trackFor[pair.object] = pair.track
            matchedTracks.insert(pair.track)
        }

        var update = Update(objects: [], entered: [], left: [])
        for (o, var object) in detected.enumerated() {
            if let t = trackFor[o] {
                object.objectID = tracks[t].object.objectID
                tracks[t] = Track(object: object, seen: time)
            } else {
                object.objectID = nextID
                nextID += 1
                tracks.append(Track(object: object, seen: time))
                update.entered.append(object)
            }
            update.objects.append(object)
        }
        var kept: [Track] = []
        for (t, var track) in tracks.enumerated() {
            if !matchedTracks.contains(t) && track.seen != time {
                track.missed += 1
                if track.missed > maximumMissedFrames {
                    update.left.append(track.object)
                    continue
                }
            }
            kept.append(track)
        }
        tracks = kept
        return update
    }

    /// Ends tracking (the source ended or stopped): every object still tracked leaves.
    package func finish() -> [Object] {
        defer { tracks.removeAll() }
        return tracks.map(\.object)
    }
}

/// Faces, tracked; see `ObjectTracker`.
package typealias FaceTracker = ObjectTracker<FaceObject>

extension ObjectTracker where Object == FaceObject {
    /// Tracks one frame's face detections, in pixels of an image of the given size.
    package func update(
        detections: [FaceDetection], imageWidth: Int, imageHeight: Int, time: MediaTime, duration: MediaTime?
    ) -> Update {
        update(
            detections.map {
                $0.faceObject(imageWidth: imageWidth, imageHeight: imageHeight, time: time, duration: duration)
            }, time: time)
    }
}

/// Adds to tracked objects what one frame alone does not tell, such as whose face it is:
/// it sees every analysed frame's objects after the tracker has given them their IDs, and
/// remembers what it learnt about each ID. The extension point for per-track analysis.
///
/// Called on the detector output's serial queue only; implementations need not be
/// thread-safe.
package protocol TrackedObjectAnnotator<Object>: AnyObject, Sendable {
    associatedtype Object: MetadataObject
    /// Annotates one analysed frame's objects (IDs set) and returns those whose annotation
    /// changed in this frame, as annotated.
    func annotate(_ objects: inout [Object], in frame: VideoFrame) -> [Object]
    /// Objects that left, annotated as they were last known; their IDs are then forgotten.
    func objectsLeft(_ objects: inout [Object])
}
