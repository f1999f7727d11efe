import CDlib
import Foundation
import SightlineCore

/// A point in whole pixels of an image, as dlib's landmark predictor gives it.
package struct PixelPoint: Sendable, Hashable {
    package var x: Int
    package var y: Int

    package init(x: Int, y: Int) {
        self.x = x
        self.y = y
    }
}

/// dlib's shape predictor on the luma plane of a frame: the landmarks of a detected face.
///
/// `landmarks(of:in:)` of one face is not thread-safe: it belongs to one thread or serial
/// queue. Of many faces, it is: face detectors share one instance, which they read only
/// (dlib's model is immutable), with buffers of their own.
package final class FaceLandmarker {
    let handle: OpaquePointer
    private var points = [Int](repeating: 0, count: 2 * 68)
    private var errorBuffer = [CChar](repeating: 0, count: 256)

    package init(modelPath: String) throws {
        var error = [CChar](repeating: 0, count: 512)
        guard let handle = sl_face_landmarker_create(modelPath, &error, error.count) else {
            throw SightlineError.model(path: modelPath, reason: Self.reason(String(nulTerminated: error)))
        }
        self.handle = handle
    }

    deinit { sl_face_landmarker_destroy(handle) }

    /// The landmarks of `face` in a frame that has a luma plane.
    package func landmarks(of face: FaceDetection, in pixels: PixelBuffer) throws -> [PixelPoint] {
        let luma = try pixels.requireLumaPlane()
        return try landmarks(
            of: face, luma: luma.baseAddress, width: pixels.width, height: pixels.height,
            bytesPerRow: luma.bytesPerRow)
    }

    /// The landmarks of `face` in 8-bit single-channel pixels read in place.
    package func landmarks(of face: FaceDetection, luma: UnsafeRawPointer, width: Int, height: Int, bytesPerRow: Int)
        throws -> [PixelPoint]
    {
        let count = Int(
            sl_face_landmarker_run(
                handle, luma.assumingMemoryBound(to: UInt8.self), Int32(width), Int32(height), bytesPerRow, face.left,
                face.top, face.right, face.bottom, &points, Int32(points.count / 2), &errorBuffer, errorBuffer.count))
        guard count >= 0 else { throw SightlineError.detector(String(nulTerminated: errorBuffer)) }
        return (0..<min(count, points.count / 2)).map { PixelPoint(x: points[2 * $0], y: points[2 * $0 + 1]) }
    }

    /// Each of `faces`' landmarks, in a frame that has a luma plane. Any thread, at the same
    /// time as any other call of this method (detectors share a landmarker): the C API takes
    /// turns where dlib needs them, and the buffers are the call's own. `sharingThreadsOf`:
    /// a detector whose scan threads share the faces out, for a frame's latency; then only on
    /// the detector's own queue, which is not scanning meanwhile. The same points either way.
    package func landmarks(
        of faces: [FaceDetection], in pixels: PixelBuffer, sharingThreadsOf detector: FaceDetector? = nil
    ) throws -> [[PixelPoint]] {
        guard !faces.isEmpty else { return [] }
        let luma = try pixels.requireLumaPlane()
        let raw = faces.map {
            sl_face_detection(
                left: $0.left, top: $0.top, right: $0.right, bottom: $0.bottom, score: $0.score,
                sub_detector: Int32($0.subDetector))
        }
        var error = [CChar](repeating: 0, count: 256)
        var pointsPerFace = 5
        while true {
            var points = [Int](repeating: 0, count: 2 * pointsPerFace * faces.count)
            let parts = Int(
                sl_face_landmarker_run_faces(
                    handle, luma.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(pixels.width),
                    Int32(pixels.height), luma.bytesPerRow, raw, Int32(raw.count), &points, Int32(pointsPerFace),
                    detector?.handle, &error, error.count))
            guard parts >= 0 else { throw SightlineError.detector(String(nulTerminated: error)) }
            if parts > pointsPerFace {
                pointsPerFace = parts  // a 68-point model
                continue
            }
            return faces.indices.map { face in
                (0..<parts).map { p in
                    let index = 2 * (face * pointsPerFace + p)
                    return PixelPoint(x: points[index], y: points[index + 1])
                }
            }
        }
    }

    /// dlib says "Error deserializing object of type …" for a file of the wrong kind.
    static func reason(_ message: String) -> String {
        let line = message.split(separator: "\n").first.map(String.init) ?? message
        return line.isEmpty ? "cannot be read" : "not a usable dlib model (\(line))"
    }
}

/// What the landmarks say about a face.
package enum FaceLandmarks {
    /// The centres of the eye on the image's left and the eye on its right: for dlib's 5
    /// points, the means of points 2-3 and 0-1; for the 68 of iBUG 300-W, of 36-41 and 42-47.
    package static func eyeCentres(_ points: [PixelPoint]) -> (
        left: (x: Double, y: Double), right: (x: Double, y: Double)
    )? {
        let (left, right): (ClosedRange<Int>, ClosedRange<Int>)
        switch points.count {
        case 5: (left, right) = (2...3, 0...1)
        case 68: (left, right) = (36...41, 42...47)
        default: return nil
        }
        func centre(_ range: ClosedRange<Int>) -> (x: Double, y: Double) {
            let n = Double(range.count)
            return (
                range.map { Double(points[$0].x) }.reduce(0, +) / n, range.map { Double(points[$0].y) }.reduce(0, +) / n
            )
        }
        return (centre(left), centre(right))
    }

    /// Roll in degrees, 0..<360, clockwise positive as seen in the image (AVFoundation's
    /// `rollAngle`): the angle of the line from the eye on the image's left to the other.
    /// Level eyes give 0; a head tilted towards its left shoulder (the picture turned
    /// clockwise) gives a small positive angle, one tilted the other way an angle near 360.
    package static func rollAngle(_ points: [PixelPoint]) -> Double? {
        guard let eyes = eyeCentres(points) else { return nil }
        let (dx, dy) = (eyes.right.x - eyes.left.x, eyes.right.y - eyes.left.y)
        guard dx != 0 || dy != 0 else { return nil }
        let degrees = atan2(dy, dx) * 180 / .pi
        return degrees < 0 ? degrees + 360 : degrees
    }
}
