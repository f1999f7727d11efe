import SightlineCore

/// What the pipeline needs of a detector: the metadata objects in a frame, their IDs unset
/// (a tracker gives them). The extension point for a new in-process detector.
///
/// Each instance is called on one serial queue only (the detector's frame output, or a queue
/// of its own when several detect successive frames at once); implementations need not be
/// thread-safe.
public protocol MetadataObjectDetector: SendableMetatype {
    associatedtype Object: MetadataObject
    func objects(in frame: VideoFrame) throws -> [Object]
}

extension FaceDetector: MetadataObjectDetector {
    public func objects(in frame: VideoFrame) throws -> [FaceObject] {
        let faces = try detectTracking(in: frame.pixels, frameDuration: frame.duration)
        let landmarks = try landmarker.map { try self.landmarks(of: faces, in: frame.pixels, by: $0) }
        return faces.enumerated().map { index, face in
            face.faceObject(
                imageWidth: frame.pixels.width, imageHeight: frame.pixels.height, time: frame.time,
                duration: frame.duration, landmarks: landmarks?[index])
        }
    }
}

extension BarcodeDetector: MetadataObjectDetector {
    public func objects(in frame: VideoFrame) throws -> [MachineReadableCodeObject] {
        try detect(in: frame.pixels).map {
            $0.object(
                imageWidth: frame.pixels.width, imageHeight: frame.pixels.height, time: frame.time,
                duration: frame.duration)
        }
    }
}

/// Calls a C detector that writes at most `results.count` results and returns how many it
/// found (or -1 with a message in `error`); when it found more, grows `results` and calls
/// again. Returns the count.
func callGrowingResults<Result>(
    _ results: inout [Result], empty: Result, error: inout [CChar], _ call: (inout [Result], inout [CChar]) -> Int32
) throws -> Int {
    while true {
        let count = Int(call(&results, &error))
        guard count >= 0 else { throw SightlineError.detector(String(nulTerminated: error)) }
        if count <= results.count { return count }
        results = [Result](repeating: empty, count: count)  // rare: many objects in one frame
    }
}
