import Foundation
import SightlineCore
import SightlineDetection

/// Region tracking and the motion gate measured against scanning every frame whole: the
/// time per frame, and how many of the full scans' faces they find (recall) and how many
/// of theirs the full scans found (precision), boxes matched by overlap (IoU >= 0.5).
struct TrackingBench {
    let frames: [VideoFrame]
    /// Each frame's faces scanned whole.
    let reference: [[FaceDetection]]

    init(frames: [VideoFrame], configuration: FaceDetector.Configuration) throws {
        let detector = try FaceDetector(configuration: configuration)
        self.frames = frames
        reference = try frames.map { try detector.detect(in: $0.pixels) }
    }

    struct Result {
        var msPerFrame: Double
        var recall: Double
        var precision: Double
        /// Faces found with the very box and score of a full scan.
        var exact: Int
        var found: Int
        var expected: Int
        var scans: (full: Int, sceneChanges: Int, regions: Int, held: Int)
        /// Region scans of frames zoomed, that would otherwise have been scanned whole.
        var acrossZooms: Int
    }

    func measure(_ configuration: FaceDetector.Configuration) throws -> Result {
        let detector = try FaceDetector(configuration: configuration)
        var (matched, exact, found, expected) = (0, 0, 0, 0)
        var elapsed = Duration.zero
        for (frame, truth) in zip(frames, reference) {
            let started = ContinuousClock.now
            let faces = try detector.detectTracking(in: frame.pixels, frameDuration: frame.duration)
            elapsed += ContinuousClock.now - started
            let pairs = Self.match(faces, truth)
            matched += pairs.count
            exact += pairs.filter { faces[$0.0] == truth[$0.1] }.count
            found += faces.count
            expected += truth.count
        }
        return Result(
            msPerFrame: elapsed.milliseconds / Double(frames.count),
            recall: expected == 0 ? 1 : Double(matched) / Double(expected),
            precision: found == 0 ? 1 : Double(matched) / Double(found), exact: exact, found: found,
            expected: expected, scans: detector.scans, acrossZooms: detector.scansAcrossZooms)
    }

    func line(_ size: String, _ configuration: FaceDetector.Configuration, detectorMs: Double) throws -> String {
        let result = try measure(configuration)
        let name =
            "every \(configuration.fullScanInterval)" + (configuration.motionGate ? " + motion gate" : "")
        let figures = String(
            format: "%6.2f ms/frame = %.2f x full scans' speed, recall %.3f, precision %.3f", result.msPerFrame,
            detectorMs / result.msPerFrame, result.recall, result.precision)
        return
            "\(size) tracking  \(name): \(figures)  (\(result.found) of \(result.expected) faces, \(result.exact) exact; \(result.scans.full) full (\(result.scans.sceneChanges) on a scene change), \(result.scans.regions) region scans (\(result.acrossZooms) across a zoom), \(result.scans.held) held)"
    }

    /// Greedy one-to-one matching by overlap, best first: (index in found, index in truth).
    static func match(_ found: [FaceDetection], _ truth: [FaceDetection]) -> [(Int, Int)] {
        var candidates: [(Double, Int, Int)] = []
        for (f, a) in found.enumerated() {
            for (t, b) in truth.enumerated() {
                let iou = a.intersectionOverUnion(b)
                if iou >= 0.5 { candidates.append((iou, f, t)) }
            }
        }
        var (usedFound, usedTruth) = (Set<Int>(), Set<Int>())
        var pairs: [(Int, Int)] = []
        for (_, f, t) in candidates.sorted(by: { $0.0 > $1.0 })
        where !usedFound.contains(f) && !usedTruth.contains(t) {
            usedFound.insert(f)
            usedTruth.insert(t)
            pairs.append((f, t))
        }
        return pairs
    }

}
