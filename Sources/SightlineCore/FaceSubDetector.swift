/// dlib's frontal face detector is five HOG filters; which one fired tells the head pose
/// coarsely. dlib's own training notes give the rotations (frontal_face_detector.h).
package enum FaceSubDetector: Int, Sendable, CaseIterable {
    case front = 0
    case leftLooking = 1
    case rightLooking = 2
    /// Trained on frontal faces rotated left (counter-clockwise) by 27 degrees.
    case rotatedLeft = 3
    /// Trained on frontal faces rotated right (clockwise) by 27 degrees.
    case rotatedRight = 4

    /// Yaw in AVFoundation's convention (degrees, 0…360): 0 for filters trained on
    /// frontal faces, 315 and 45 for the left- and right-looking filters.
    package var yawAngle: Double {
        switch self {
        case .front, .rotatedLeft, .rotatedRight: 0
        case .leftLooking: 315
        case .rightLooking: 45
        }
    }

    /// Roll in degrees, 0…360, clockwise positive as seen in the image: the filters
    /// trained on rotated faces give ±27, the others 0. Turned-head filters say nothing
    /// about roll, so they report none.
    package var rollAngle: Double? {
        switch self {
        case .front: 0
        case .rotatedLeft: 333
        case .rotatedRight: 27
        case .leftLooking, .rightLooking: nil
        }
    }
}
