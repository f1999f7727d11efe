import CDlib
import SightlineCore

/// A face as the detector reports it, in pixels of the image it was given. Right and bottom
/// are inclusive (dlib's convention) and may lie outside the image.
package struct FaceDetection: Sendable, Hashable {
    package var left: Int
    package var top: Int
    package var right: Int
    package var bottom: Int
    package var score: Double
    package var subDetector: Int

    package init(left: Int, top: Int, right: Int, bottom: Int, score: Double, subDetector: Int) {
        self.left = left
        self.top = top
        self.right = right
        self.bottom = bottom
        self.score = score
        self.subDetector = subDetector
    }

    package var width: Int { right - left + 1 }
    package var height: Int { bottom - top + 1 }

    /// Intersection over union of the two boxes, 0 when they do not overlap.
    package func intersectionOverUnion(_ other: FaceDetection) -> Double {
        let width = min(right, other.right) - max(left, other.left) + 1
        let height = min(bottom, other.bottom) - max(top, other.top) + 1
        guard width > 0, height > 0 else { return 0 }
        let intersection = Double(width * height)
        return intersection / (Double(self.width * self.height + other.width * other.height) - intersection)
    }

    /// The box in normalised coordinates of an image of the given size.
    package func normalizedBounds(imageWidth: Int, imageHeight: Int) -> NormalizedRect {
        NormalizedRect(
            x: Double(left) / Double(imageWidth), y: Double(top) / Double(imageHeight),
            width: Double(width) / Double(imageWidth), height: Double(height) / Double(imageHeight))
    }
}

extension FaceDetection {
    /// The face as a metadata object (ID 0 until a tracker gives it one). Yaw is the one its
    /// sub-detector implies; roll is measured on the eye line when `landmarks` are given,
    /// else implied by the sub-detector too.
    package func faceObject(
        imageWidth: Int, imageHeight: Int, time: MediaTime, duration: MediaTime?, landmarks: [PixelPoint]? = nil
    ) -> FaceObject {
        let sub = FaceSubDetector(rawValue: subDetector)
        let (w, h) = (Double(imageWidth), Double(imageHeight))
        return FaceObject(
            faceID: 0, bounds: normalizedBounds(imageWidth: imageWidth, imageHeight: imageHeight),
            rollAngle: landmarks.flatMap(FaceLandmarks.rollAngle) ?? sub?.rollAngle, yawAngle: sub?.yawAngle,
            time: time, duration: duration, score: score, subDetector: subDetector,
            landmarks: landmarks?.map { NormalizedPoint(x: Double($0.x) / w, y: Double($0.y) / h) })
    }
}

/// dlib's HOG frontal face detector, reading the luma plane of a frame in place.
///
/// Not thread-safe: each instance belongs to one thread or serial queue (in the pipeline,
/// the detect output's queue), which spreads each frame over `configuration.threads`
/// threads of its own and waits for them.
package final class FaceDetector {
    package struct Configuration: Sendable, Equatable {
        /// How many times the image is doubled before scanning. dlib's HOG finds faces of
        /// about 80 px and up; each doubling halves that, at about 4x the time.
        package var upsample: Int = 0
        /// Added to dlib's decision threshold; negative finds more faces, and more mistakes.
        package var adjustThreshold: Double = 0
        /// Detections narrower than this many pixels of the frame are ignored.
        package var minimumFaceSize: Int = 0
        /// Threads one frame's scan is spread over (pyramid levels in groups); the answers
        /// are the same with any number.
        package var threads: Int = FaceDetector.availableCores
        /// Every this many analysed frames the whole frame is scanned; the frames between are
        /// scanned only around the faces found in the frame before (1: every frame whole).
        package var fullScanInterval: Int = 1
        /// Frames where nothing moved since the last one scanned are not scanned: the faces
        /// found then are held (`MotionGate`).
        package var motionGate: Bool = false
        /// Whether a live source's region scans also look along the edges a pan brings the
        /// view in at (with full scans made beside, `FullScansBeside`).
        package var panBands: PanBands = .whenCoresIdle

        /// When region scans look along a pan's leading edges, at every size.
        package enum PanBands: Sendable, Equatable {
            /// While the machine leaves a good part of its CPU unused (`IdleCores`).
            case whenCoresIdle
            case always
            case never
        }

        package init(
            upsample: Int = 0, adjustThreshold: Double = 0, minimumFaceSize: Int = 0,
            threads: Int = FaceDetector.availableCores, fullScanInterval: Int = 1, motionGate: Bool = false
        ) {
            self.upsample = upsample
            self.adjustThreshold = adjustThreshold
            self.minimumFaceSize = minimumFaceSize
            self.threads = threads
            self.fullScanInterval = fullScanInterval
            self.motionGate = motionGate
        }

        /// The values `validated()` takes, for options that check them where they are read.
        package static let upsampleRange = 0...3
        package static let adjustThresholdRange = -5.0...5.0
        package static let threadsRange = 1...64
        /// Beyond 10 s at 30 fps a face that appears waits too long to be found.
        package static let fullScanIntervalRange = 1...300

        package func validated() throws -> Configuration {
            guard Self.upsampleRange.contains(upsample) else {
                throw SightlineError.invalidArgument("upsample must be 0 to 3, not \(upsample)")
            }
            guard adjustThreshold.isFinite, Self.adjustThresholdRange.contains(adjustThreshold) else {
                throw SightlineError.invalidArgument("threshold must be between -5 and 5, not \(adjustThreshold)")
            }
            guard minimumFaceSize >= 0 else {
                throw SightlineError.invalidArgument("minimum face size must not be negative")
            }
            guard Self.threadsRange.contains(threads) else {
                throw SightlineError.invalidArgument("detector threads must be 1 to 64, not \(threads)")
            }
            guard Self.fullScanIntervalRange.contains(fullScanInterval) else {
                throw SightlineError.invalidArgument("full scan interval must be 1 to 300, not \(fullScanInterval)")
            }
            return self
        }
    }

    package let configuration: Configuration
    /// Finds each detected face's landmarks when set (the model is optional).
    package var landmarker: FaceLandmarker?
    /// Makes this tracking detector's full scans ahead, on a detector of their own, when set
    /// (a file analysed whole). Its frames are then told of on another queue
    /// (`frameArrived(_:)`), which touches only this.
    package var fullScansAhead: FullScansAhead?
    /// Makes this tracking detector's full scans beside it, on a thread of their own, when
    /// set (a live source): a frame due a full scan is then scanned where faces can be, and
    /// published without waiting for it.
    package var fullScansBeside: FullScansBeside?
    let handle: OpaquePointer
    private var results = [sl_face_detection](repeating: sl_face_detection(), count: 64)
    private var regions: [sl_face_region] = []
    /// Analysed frames since the last full scan, and the faces the last scan found.
    private var framesSinceFullScan = 0
    private var tracking: RegionTracking
    private var lastFound: [FaceDetection] = []
    private let motionGate: MotionGate?
    /// The frame's 8x8 block means, for the motion gate and region tracking.
    private var blocks = LumaBlocks()
    /// The detector's box width at each pyramid level, for frames of the size they were asked for.
    private var levelSizes: (width: Int, height: Int, sizes: [Double]) = (0, 0, [])
    /// Full scans (those made because most of the frame changed counted apart too), region
    /// scans and frames the motion gate held made so far.
    package private(set) var scans = (full: 0, sceneChanges: 0, regions: 0, held: 0)
    /// Region scans that also looked along a pan's leading edges (`Configuration.panBands`).
    package private(set) var scansAlongPans = 0
    /// Region scans of a frame where most of the view changed, zoomed (`ViewZoom`), that
    /// would otherwise have been scanned whole.
    package private(set) var scansAcrossZooms = 0
    /// Whether the last full scan asked for beside could start (the one before was done).
    private var fullScansKeepUp = true
    /// Where the C API writes an error message; kept so the per-frame path allocates nothing.
    private var errorBuffer = [CChar](repeating: 0, count: 256)

    package init(configuration: Configuration = Configuration()) throws {
        self.configuration = try configuration.validated()
        try Self.checkInstructionSet()
        var error = [CChar](repeating: 0, count: 256)
        guard let handle = sl_face_detector_create(Int32(self.configuration.threads), &error, error.count) else {
            throw SightlineError.detector(String(nulTerminated: error))
        }
        self.handle = handle
        motionGate = configuration.motionGate ? MotionGate() : nil
        tracking = RegionTracking(fullScanInterval: self.configuration.fullScanInterval)
    }

    deinit { sl_face_detector_destroy(handle) }

    /// Whether this detector's scans wait, before each of their jobs, while live sources'
    /// frames being analysed fill every core (`FullScansBeside.frameAnalysed(started:)`): for
    /// full scans made beside.
    func yieldToFramePath(_ yields: Bool) { sl_face_detector_yield_to_frame_path(handle, yields ? 1 : 0) }

    /// How many of this detector's jobs waited for live frames being analysed so far.
    var waitsForFramePath: Int { sl_face_detector_waits_for_frame_path(handle) }

    /// Detects faces in a frame that has a luma plane (gray8, yuv420p, nv12).
    package func detect(in pixels: PixelBuffer) throws -> [FaceDetection] {
        let luma = try pixels.requireLumaPlane()
        return try detect(
            luma: luma.baseAddress, width: pixels.width, height: pixels.height, bytesPerRow: luma.bytesPerRow)
    }

    /// Detects faces in 8-bit single-channel pixels read in place.
    package func detect(luma: UnsafeRawPointer, width: Int, height: Int, bytesPerRow: Int) throws -> [FaceDetection] {
        let (upsample, threshold) = (Int32(configuration.upsample), configuration.adjustThreshold)
        let count = try callGrowingResults(&results, empty: sl_face_detection(), error: &errorBuffer) {
            sl_face_detector_detect(
                handle, luma.assumingMemoryBound(to: UInt8.self), Int32(width), Int32(height), bytesPerRow, upsample,
                threshold, &$0, Int32($0.count), &$1, $1.count)
        }
        return detections(count)
    }

    /// Where to look for faces (`detect(in:regions:)`): boxes within `area` (pixels of the
    /// frame; it may reach beyond the frame, as boxes at its edges do) whose widths match
    /// `sizes`, and one pyramid level either side with `neighbourLevels`.
    package struct Region {
        var area: RegionTracking.Box
        var sizes: ClosedRange<Double>
        var neighbourLevels: Bool
    }

    /// Detects faces only within `margin` pixels around each of `faces`, at the scales
    /// that match each one's size: every face returned is one `detect(in:)` finds too, with
    /// the same box and score. Nothing is scanned when `faces` is empty.
    package func detect(in pixels: PixelBuffer, around faces: [FaceDetection], margin: (FaceDetection) -> Int) throws
        -> [FaceDetection]
    {
        try detect(
            in: pixels,
            regions: faces.map {
                let box = RegionTracking.Box($0)
                return Region(
                    area: box.grown(by: Double(margin($0))), sizes: box.size...box.size, neighbourLevels: true)
            })
    }

    /// Detects faces only in `regions`: every face returned is one `detect(in:)` finds too,
    /// with the same box and score.
    package func detect(in pixels: PixelBuffer, regions wanted: [Region]) throws -> [FaceDetection] {
        let luma = try pixels.requireLumaPlane()
        regions = wanted.map {
            sl_face_region(
                left: Self.pixel($0.area.left), top: Self.pixel($0.area.top), right: Self.pixel($0.area.right) - 1,
                bottom: Self.pixel($0.area.bottom) - 1, min_size: $0.sizes.lowerBound, max_size: $0.sizes.upperBound,
                neighbour_levels: $0.neighbourLevels ? 1 : 0)
        }
        let (upsample, threshold) = (Int32(configuration.upsample), configuration.adjustThreshold)
        let count = try callGrowingResults(&results, empty: sl_face_detection(), error: &errorBuffer) {
            sl_face_detector_detect_regions(
                handle, luma.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(pixels.width),
                Int32(pixels.height), luma.bytesPerRow, upsample, threshold, regions, Int32(regions.count), &$0,
                Int32($0.count), &$1, $1.count)
        }
        return detections(count)
    }

    /// A coordinate of a region as the shim takes it, rounded outwards and kept far from
    /// overflowing once scaled by upsampling.
    private static func pixel(_ value: Double) -> Int {
        Int(max(-1_000_000, min(1_000_000, value.rounded(value < 0 ? .down : .up))))
    }

    /// The detector's box width at each level of the pyramid of a frame of this size.
    func boxSizes(width: Int, height: Int) -> [Double] {
        if levelSizes.width != width || levelSizes.height != height {
            var sizes = [Double](repeating: 0, count: 64)
            let count = sl_face_detector_level_box_sizes(
                handle, Int32(width), Int32(height), Int32(configuration.upsample), &sizes, Int32(sizes.count))
            levelSizes = (width, height, Array(sizes.prefix(max(0, min(Int(count), sizes.count)))))
        }
        return levelSizes.sizes
    }

    /// One analysed frame of a stream: scanned whole every `fullScanInterval` frames, and in
    /// between only where faces can be (`RegionTracking`): around the faces being tracked,
    /// where they move and at the sizes they grow to, and along the frame's edges where
    /// something changed, so a face that enters is found as soon as it is in. A frame where
    /// most changed since the one before (a cut, a camera turned) is scanned whole at once
    /// (beside, with `fullScansBeside`: no frame waits for it).
    /// `frameDuration` sets how far a face may move in a frame: three of its widths a second,
    /// a quarter of its width at least. With the motion gate on, a frame where nothing moved
    /// is not scanned and the faces found last are returned. `fullScan`: this frame's full
    /// scan when it was made ahead (used when the frame is due one).
    package func detectTracking(in pixels: PixelBuffer, frameDuration: MediaTime?, fullScan: [FaceDetection]? = nil)
        throws -> [FaceDetection]
    {
        let tracks = configuration.fullScanInterval > 1
        if tracks || motionGate != nil { try blocks.measure(pixels) }
        if let motionGate, !motionGate.moved(blocks) {
            scans.held += 1
            return lastFound
        }
        let sceneChanged = tracks && tracking.compare(&blocks, measuringPan: followsPans)
        if let earlier = try fullScansBeside?.finished() { tracking.add(earlier) }
        let faces: [FaceDetection]
        var fullScanStarted = true
        if let fullScansBeside, scans.full > 0, framesSinceFullScan == 0 || sceneChanged {
            // The first frame is scanned whole in line: there is nothing to follow yet.
            if sceneChanged {
                fullScansBeside.restart(pixels)
                scans.sceneChanges += 1
            } else {
                fullScanStarted = fullScansBeside.start(pixels)
                fullScansKeepUp = fullScanStarted
            }
            if fullScanStarted { scans.full += 1 }
            faces = try detectAround(in: pixels, frameDuration: frameDuration)
        } else if framesSinceFullScan == 0 {
            faces = try fullScan ?? detect(in: pixels)
            scans.full += 1
        } else if sceneChanged {
            faces = try detect(in: pixels)
            scans.full += 1
            scans.sceneChanges += 1
        } else {
            faces = try detectAround(in: pixels, frameDuration: frameDuration)
        }
        // A full scan still under way beside is started at the next frame that can.
        if fullScanStarted { framesSinceFullScan = (framesSinceFullScan + 1) % configuration.fullScanInterval }
        if tracks { tracking.found(faces, width: pixels.width, height: pixels.height) }
        lastFound = faces
        return faces
    }

    /// Whether this frame's region scans may look along a pan's leading edges: only with
    /// full scans made beside (a file analysed whole has its full scans in time, and finds
    /// a face entering during a pan at the next), as the configuration says. Left to the
    /// machine, not while those scans fall behind: they find every other face that comes,
    /// and the bands would take their time.
    private var followsPans: Bool {
        guard fullScansBeside != nil else { return false }
        switch configuration.panBands {
        case .whenCoresIdle: return fullScansKeepUp && IdleCores.shared.room
        case .always: return true
        case .never: return false
        }
    }

    /// A region scan: where `tracking` says faces can be.
    private func detectAround(in pixels: PixelBuffer, frameDuration: MediaTime?) throws -> [FaceDetection] {
        let seconds = frameDuration.map(\.seconds).flatMap { $0 > 0 ? $0 : nil } ?? 1.0 / 30
        let reach = max(0.25, 3 * seconds)
        scans.regions += 1
        let regions = tracking.regions(
            width: pixels.width, height: pixels.height,
            levelSizes: boxSizes(width: pixels.width, height: pixels.height), reach: { $0 * reach })
        if regions.alongPan { scansAlongPans += 1 }
        if tracking.viewZoom != nil { scansAcrossZooms += 1 }
        return try detect(in: pixels, regions: regions.regions)
    }

    private func detections(_ count: Int) -> [FaceDetection] {
        results.prefix(count).compactMap { raw in
            let face = FaceDetection(
                left: raw.left, top: raw.top, right: raw.right, bottom: raw.bottom, score: raw.score,
                subDetector: Int(raw.sub_detector))
            return face.width >= configuration.minimumFaceSize ? face : nil
        }
    }

    /// The instruction set the detector was compiled for, and what the CPU has.
    package struct InstructionSet: Sendable, CustomStringConvertible {
        package let compiledForAVX2: Bool
        package let cpuHasAVX2: Bool
        /// The filters go 16 columns at a time and the HOG gradients 16 pixels: the CPU has
        /// AVX-512, whatever the build.
        package let avx512Kernels: Bool
        /// The build's set, `+AVX-512` when the kernels use it (one word, for the start line).
        package var description: String { (compiledForAVX2 ? "AVX2" : "SSE2") + (avx512Kernels ? "+AVX-512" : "") }

        /// A line to log at start-up when the detector runs slower than it could, else nil.
        package var fallbackNotice: String? {
            if compiledForAVX2 { return nil }
            return cpuHasAVX2
                ? "face detector was built without AVX2 although this CPU has it; rebuild without SIGHTLINE_SIMD=sse2 for about 1.5x the speed"
                : "this CPU has no AVX2: the face detector runs its SSE2 code, about 1.5x slower"
        }
    }

    /// Whether the detector built into the shim is exactly dlib's `get_frontal_face_detector()`.
    package static var embeddedDetectorMatchesDlib: Bool { sl_face_detector_embedded_matches_dlib() != 0 }

    /// How many pixels of the image pyramid the detector builds differ from dlib's own
    /// `pyramid_down<6>` of the frame (built whole, by bands and by rectangles): 0.
    package static func pyramidMismatches(in pixels: PixelBuffer) throws -> Int {
        try mismatches(in: pixels, counted: sl_pyramid_mismatches)
    }

    /// How many pixels of the detector's filter responses, over every level of the frame's
    /// pyramid, differ in any bit from dlib's own `apply_filters_to_fhog`: 0.
    package static func filterMismatches(in pixels: PixelBuffer) throws -> Int {
        try mismatches(in: pixels, counted: sl_filter_mismatches)
    }

    /// How many HOG features the detector extracts, over every level of the frame's pyramid
    /// and crops of each, differ in any bit from dlib's own `extract_fhog_features`: 0.
    package static func featureMismatches(in pixels: PixelBuffer) throws -> Int {
        try mismatches(in: pixels, counted: sl_fhog_mismatches)
    }

    /// Runs one of the shim's checks against dlib on the frame's luma plane.
    private static func mismatches(
        in pixels: PixelBuffer, counted: (UnsafePointer<UInt8>, Int32, Int32, Int) -> Int
    ) throws -> Int {
        let luma = try pixels.requireLumaPlane()
        return counted(
            luma.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(pixels.width), Int32(pixels.height),
            luma.bytesPerRow)
    }

    /// The CPUs this process may use (its affinity mask): the default number of threads.
    package static var availableCores: Int { Int(sl_available_cpus()) }

    package static var instructionSet: InstructionSet {
        InstructionSet(
            compiledForAVX2: sl_dlib_compiled_simd_level() >= 2, cpuHasAVX2: sl_cpu_supports_avx2() != 0,
            avx512Kernels: sl_avx512_kernels() != 0)
    }

    /// A binary built for AVX2 would die of an illegal instruction on a CPU without it:
    /// refuse with a clear message instead.
    static func checkInstructionSet() throws {
        let set = instructionSet
        if set.compiledForAVX2 && !set.cpuHasAVX2 {
            throw SightlineError.detector(
                "this build uses AVX2 but the CPU lacks it; rebuild with SIGHTLINE_SIMD=sse2 swift build")
        }
    }
}
