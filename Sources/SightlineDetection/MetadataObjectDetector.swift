import SightlineCore

/// What the pipeline needs of a detector: the metadata objects in a frame, their IDs unset
/// (a tracker gives them). The extension point for a new in-process detector.
///
/// Each instance is called on one serial queue only (the detector's frame output, or a queue
/// of its own when several detect successive frames at once); implementations need not be
/// thread-safe.
package protocol MetadataObjectDetector: SendableMetatype {
    associatedtype Object: MetadataObject
    func objects(in frame: VideoFrame) throws -> [Object]

    /// How many frames the detector wants to be told of before it is asked for the objects
    /// of the first of them, to start work on some early. 0 (the default): none.
    var framesAhead: Int { get }

    /// A frame whose objects will be asked for, told as it arrives, in capture order, on the
    /// output's queue, while `objects(in:)` may be running for an earlier frame on another.
    /// Only called when `framesAhead` > 0.
    func frameArrived(_ frame: VideoFrame)

    /// `objects(in:)` in two steps: what detecting the next frame depends on, done when
    /// called (finding the faces tracking carries on), and the rest, returned to be done on
    /// another queue while the next frame is detected (their landmarks). Only called when
    /// `framesAhead` > 0. Default: everything in the first step.
    func objectsInTwoSteps(in frame: VideoFrame) throws -> () throws -> [Object]

    /// Makes ready, before the first frame, what detecting frames of this size needs (buffers,
    /// threads' first work), so that the first frames are detected as fast as the rest: a
    /// live source's first events keep their latency. Called at most once, on the thread that
    /// builds the pipeline, before any other requirement; not for a file analysed whole.
    /// Default: nothing.
    func prepare(for input: InputDescription) throws
}

extension MetadataObjectDetector {
    package var framesAhead: Int { 0 }
    package func prepare(for input: InputDescription) throws {}
    package func frameArrived(_ frame: VideoFrame) {}
    package func objectsInTwoSteps(in frame: VideoFrame) throws -> () throws -> [Object] {
        let objects = try objects(in: frame)
        return { objects }
    }
}

extension FaceDetector: MetadataObjectDetector {
    package var framesAhead: Int { fullScansAhead?.framesAhead ?? 0 }

    package func frameArrived(_ frame: VideoFrame) { fullScansAhead?.frameArrived(frame) }

    /// Scans a blank frame of the input's size and finds landmarks in it: the first frame
    /// otherwise sizes the pyramid, the features and the filters' buffers, and was the slowest
    /// of a real-time run (41 ms at 1280x720 against a median of 20). Twice, because which
    /// thread takes the largest level, and sizes its buffers for it, changes from scan to
    /// scan. Leaves the tracking state as it was.
    package func prepare(for input: InputDescription) throws {
        guard input.width > 0, input.height > 0 else { return }
        let blank = PixelBuffer(
            format: .gray8, width: input.width, height: input.height,
            packedPlanes: [[UInt8](repeating: 0, count: input.width * input.height)])
        for _ in 0..<2 { _ = try detect(in: blank) }
        try fullScansBeside?.prepare(blank)
        let side = min(input.width, input.height) / 2
        let centre = FaceDetection(
            left: (input.width - side) / 2, top: (input.height - side) / 2, right: (input.width + side) / 2,
            bottom: (input.height + side) / 2, score: 1, subDetector: 0)
        _ = try landmarker?.landmarks(of: [centre], in: blank)
    }

    /// The faces, then their landmarks on the scan's threads, which are idle by then: a frame
    /// with two faces has both faces' landmarks found at once.
    package func objects(in frame: VideoFrame) throws -> [FaceObject] {
        try Self.faceObjects(faces(in: frame), in: frame, landmarker: landmarker, sharingThreadsOf: self)
    }

    /// The faces now (tracking carries them on to the next frame), their landmarks later, on
    /// the calling thread alone: the scan's threads are scanning the next frame by then.
    package func objectsInTwoSteps(in frame: VideoFrame) throws -> () throws -> [FaceObject] {
        let faces = try faces(in: frame)
        return { [landmarker] in
            try Self.faceObjects(faces, in: frame, landmarker: landmarker, sharingThreadsOf: nil)
        }
    }

    private func faces(in frame: VideoFrame) throws -> [FaceDetection] {
        try detectTracking(
            in: frame.pixels, frameDuration: frame.duration, fullScan: fullScansAhead?.fullScan(of: frame))
    }

    /// `faces` as metadata objects, with their landmarks when there is a landmarker.
    private static func faceObjects(
        _ faces: [FaceDetection], in frame: VideoFrame, landmarker: FaceLandmarker?,
        sharingThreadsOf detector: FaceDetector?
    ) throws -> [FaceObject] {
        let landmarks = try landmarker?.landmarks(of: faces, in: frame.pixels, sharingThreadsOf: detector)
        return faces.enumerated().map { index, face in
            face.faceObject(
                imageWidth: frame.pixels.width, imageHeight: frame.pixels.height, time: frame.time,
                duration: frame.duration, landmarks: landmarks?[index])
        }
    }
}

extension BarcodeDetector: MetadataObjectDetector {
    package func objects(in frame: VideoFrame) throws -> [MachineReadableCodeObject] {
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
