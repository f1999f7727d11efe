/// A rectangle in normalised coordinates: 0…1 across the unrotated frame, origin top-left
/// (AVFoundation's metadata-object convention). Values may lie slightly outside 0…1 when a
/// detector's box crosses the frame's edge.
public struct NormalizedRect: Sendable, Hashable, Codable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var area: Double { max(width, 0) * max(height, 0) }

    /// Intersection over union, 0 when the rectangles do not overlap.
    public func intersectionOverUnion(_ other: NormalizedRect) -> Double {
        let left = max(x, other.x)
        let right = min(x + width, other.x + other.width)
        let top = max(y, other.y)
        let bottom = min(y + height, other.y + other.height)
        guard right > left, bottom > top else { return 0 }
        let intersection = (right - left) * (bottom - top)
        return intersection / (area + other.area - intersection)
    }
}

/// A detected face, modelled on `AVMetadataFaceObject` and extended with what dlib adds.
public struct FaceObject: Sendable, Hashable, Codable {
    /// Stable while the face is tracked from frame to frame; a new face gets a new ID.
    public var faceID: Int
    public var bounds: NormalizedRect
    /// Degrees, when it can be estimated (see docs/face-detection.md).
    public var rollAngle: Double?
    /// Degrees, AVFoundation's convention (0, 45, 315 …), when it can be estimated.
    public var yawAngle: Double?
    public var time: MediaTime
    public var duration: MediaTime?
    /// dlib's detection score (higher is surer; 0 is the default threshold).
    public var score: Double
    /// Which of dlib's five HOG filters fired (see `FaceSubDetector`).
    public var subDetector: Int

    public init(
        faceID: Int, bounds: NormalizedRect, rollAngle: Double?, yawAngle: Double?, time: MediaTime,
        duration: MediaTime?, score: Double, subDetector: Int
    ) {
        self.faceID = faceID
        self.bounds = bounds
        self.rollAngle = rollAngle
        self.yawAngle = yawAngle
        self.time = time
        self.duration = duration
        self.score = score
        self.subDetector = subDetector
    }
}
