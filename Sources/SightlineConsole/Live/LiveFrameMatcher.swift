import Foundation
import SightlineCore

/// One frame of the live view with the faces and codes of that same frame: what the console
/// pushes to the browser.
public struct LiveFrame: Sendable, Encodable {
    public var source: String
    public var seq: UInt64
    /// The frame's media time, seconds.
    public var time: Double
    /// When the frame was captured, ns since 1970 (the source's clock).
    public var wallTimeNs: UInt64
    public var width: Int
    public var height: Int
    /// nil when the source does not detect that kind of object.
    public var faces: LiveDetections?
    public var codes: LiveDetections?
    /// The JPEG, base64, ready for a `data:` URL.
    public var jpeg: String
}

/// The objects drawn over a live frame.
public struct LiveDetections: Sendable, Encodable, Equatable {
    /// Media time of the analysed frame the objects come from: the frame's own time, unless
    /// the detector skipped that frame (late) while objects were in view, in which case the
    /// last analysed frame's objects are held and `held` is true.
    public var time: Double?
    public var held: Bool
    public var objects: [LiveObject]
}

/// A face or code as the browser draws it: ID, normalised bounds, and a code's type and text.
public struct LiveObject: Sendable, Encodable, Equatable {
    public var id: Int
    /// x, y, width, height, normalised to the frame.
    public var bounds: [Double]
    public var type: String?
    public var text: String?
    /// A code's four corners, x y pairs.
    public var corners: [Double]?
    /// Whose face, when a gallery named it.
    public var name: String?

    init(_ face: FaceObject) {
        self.init(faceID: face.faceID, bounds: face.bounds, name: face.identity?.name)
    }

    init(faceID: Int, bounds: NormalizedRect, name: String?) {
        id = faceID
        self.bounds = bounds.components
        self.name = name
    }

    init(_ code: MachineReadableCodeObject) { self.init(MachineReadableCodeRecord(code)) }

    init(_ code: MachineReadableCodeRecord) {
        id = code.codeID
        bounds = code.bounds.components
        type = code.type.rawValue
        text = code.stringValue
        corners = code.corners.flatMap { [$0.x, $0.y] }
    }
}

extension NormalizedRect {
    var components: [Double] { [x, y, width, height] }
}

/// The objects one detector published, newest last, and how late they arrive: enough to
/// say which objects a given frame had.
///
/// A detector publishes a message for every analysed frame with objects and one empty
/// message when they are gone, so a frame with no message of its own had no objects if the
/// last message before it was empty, and was skipped by the detector otherwise.
struct DetectionHistory {
    private var messages: [(time: MediaTime, objects: [LiveObject])] = []
    private var lags: [Int64] = []
    /// The newest message's time: frames up to here are settled.
    private(set) var newest: MediaTime?

    static let kept = 512

    mutating func add(time: MediaTime, objects: [LiveObject], lagNs: Int64) {
        if let newest, time < newest { messages.removeAll() }  // the source started again
        messages.append((time, objects))
        if messages.count > Self.kept { messages.removeFirst(messages.count - Self.kept) }
        newest = time
        lags.append(lagNs)
        if lags.count > 32 { lags.removeFirst() }
    }

    mutating func reset() {
        messages.removeAll()
        newest = nil
    }

    /// How long after capture this detector's results arrive, at worst of late: the largest
    /// of the last 32, or a quarter second before any is known.
    var lagNs: Int64 { min(max(lags.max() ?? 250_000_000, 10_000_000), 2_000_000_000) }

    /// Whether every message up to `time` has arrived.
    func isSettled(_ time: MediaTime) -> Bool { newest.map { $0 >= time } ?? false }

    /// What the frame at `time` had.
    func detections(at time: MediaTime) -> LiveDetections {
        guard let index = messages.lastIndex(where: { $0.time <= time }) else {
            return LiveDetections(time: time.seconds, held: false, objects: [])
        }
        let (found, objects) = messages[index]
        if found == time || objects.isEmpty { return LiveDetections(time: time.seconds, held: false, objects: objects) }
        return LiveDetections(time: found.seconds, held: true, objects: objects)
    }
}

/// Pairs a source's live frames with the faces and codes of the same frame. Frames wait
/// until each detector has published past their time, or until its usual delay (plus a
/// margin) has passed since capture: with nothing in view a detector publishes nothing, so
/// silence for that long means the frame had nothing. Lags are measured as arrival time
/// less capture time, so a clock offset between hosts cancels out.
struct LiveFrameMatcher {
    struct Pending {
        var message: Message
        var jpeg: [UInt8]
    }

    private(set) var faces = DetectionHistory()
    private(set) var codes = DetectionHistory()
    /// What the source detects, from its status (`faces`, `barcodes`).
    var detections: Set<String> = ["faces"]
    private var pending: [Pending] = []

    static let margin: Int64 = 50_000_000
    static let maximumPending = 16

    mutating func reset() {
        faces.reset()
        codes.reset()
        pending.removeAll()
    }

    mutating func addObjects(_ message: Message, receivedNs: UInt64) -> [LiveFrame] {
        guard let time = message.time else { return [] }
        let lag = Int64(bitPattern: receivedNs &- message.wallTimeNs)
        if let list = message.faces {
            faces.add(time: time, objects: list.map(LiveObject.init), lagNs: lag)
        } else if let list = message.codes {
            codes.add(time: time, objects: list.map(LiveObject.init), lagNs: lag)
        }
        return release(nowNs: receivedNs)
    }

    mutating func addFrame(_ message: Message, jpeg: [UInt8], receivedNs: UInt64) -> [LiveFrame] {
        guard message.time != nil, message.frame?.format == .jpeg else { return [] }
        pending.append(Pending(message: message, jpeg: jpeg))
        return release(nowNs: receivedNs)
    }

    /// Frames that are ready: settled by every detector, past their deadline, or pushed
    /// out by newer frames.
    mutating func release(nowNs: UInt64) -> [LiveFrame] {
        var ready: [LiveFrame] = []
        while let first = pending.first,
            pending.count > Self.maximumPending || isReady(first.message, nowNs: nowNs)
        {
            ready.append(frame(pending.removeFirst()))
        }
        return ready
    }

    private var watchesFaces: Bool { detections.contains("faces") }
    private var watchesCodes: Bool { detections.contains("barcodes") }

    private func isReady(_ message: Message, nowNs: UInt64) -> Bool {
        guard let time = message.time else { return true }
        func ready(_ history: DetectionHistory) -> Bool {
            history.isSettled(time)
                || Int64(bitPattern: nowNs &- message.wallTimeNs) > history.lagNs + Self.margin
        }
        return (!watchesFaces || ready(faces)) && (!watchesCodes || ready(codes))
    }

    private func frame(_ item: Pending) -> LiveFrame {
        let message = item.message
        let time = message.time ?? .zero
        let info = message.frame
        return LiveFrame(
            source: message.source, seq: message.seq, time: time.seconds, wallTimeNs: message.wallTimeNs,
            width: info?.width ?? 0, height: info?.height ?? 0,
            faces: watchesFaces ? faces.detections(at: time) : nil,
            codes: watchesCodes ? codes.detections(at: time) : nil,
            jpeg: Data(item.jpeg).base64EncodedString())
    }
}
