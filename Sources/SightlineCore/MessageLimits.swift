/// The ranges a message from the bus must keep to before anything computes with it. JSON
/// decoding checks types; this checks values, so that a subscriber (a recorder, the
/// console) never traps or allocates without bound on what another process sent: every
/// integer a count, size, ID or sequence number can be added, multiplied or converted,
/// every float is finite, every time within `MediaTime.limitSeconds`, every list and text
/// bounded. docs/protocol.md lists the limits.
package enum MessageLimits {
    /// Widths and heights of frames and video, in pixels.
    package static let dimension = 1...65_536
    /// Faces, codes or detected objects in one message.
    package static let objectsPerMessage = 1024
    /// Corners of a code, landmarks of a face.
    package static let pointsPerObject = 256
    /// Floats of a face descriptor.
    package static let descriptorLength = 1024
    /// Normalised coordinates may lie outside 0…1 (a box crossing the frame's edge), not
    /// beyond this.
    package static let coordinate = -1000.0...1000.0
    /// Texts: a code's value, a name, a reason, a URL.
    package static let textBytes = 1 << 16
    /// Counters, IDs and sequence numbers: far beyond any run, small enough to add up.
    package static let count = 0...(1 << 52)

    /// The first field of `message` outside its range, as a path (`faces[0].bounds.x`), or
    /// nil when every field is within limits.
    package static func violation(in message: Message) -> String? {
        var check = Check()
        check.count(Int(clamping: message.seq), "seq")
        if message.wallTimeNs > UInt64(Int64.max) { check.fail("wallTimeNs") }
        check.time(message.time, "time")
        if let faces = message.faces {
            check.list(faces, objectsPerMessage, "faces") { check, face, path in check.face(face, path()) }
        }
        if let codes = message.codes {
            check.list(codes, objectsPerMessage, "codes") { check, code, path in check.code(code, path()) }
        }
        if let objects = message.objects {
            check.text(objects.detector, "objects.detector")
            check.list(objects.items, objectsPerMessage, "objects.items") { check, item, path in
                check.item(item, path())
            }
        }
        if let event = message.event { check.event(event) }
        if let status = message.status { check.status(status) }
        if let video = message.video {
            check.text(video.codec, "video.codec")
            check.time(video.decodeTime, "video.decodeTime")
            check.duration(video.duration, "video.duration")
            check.dimensions(video.width, video.height, "video")
        }
        if let audio = message.audio {
            check.audioFormat(audio.format, "audio.format")
            check.duration(audio.duration, "audio.duration")
        }
        if let metadata = message.metadata {
            check.text(metadata.input, "metadata.input")
            check.duration(metadata.duration, "metadata.duration")
            check.list(metadata.items, 4096, "metadata.items") { check, item, path in
                check.text(item.identifier, "\(path()).identifier")
                check.text(item.dataType, "\(path()).dataType")
            }
        }
        if let frame = message.frame {
            check.dimensions(frame.width, frame.height, "frame")
            check.dimensions(frame.sourceWidth, frame.sourceHeight, "frame.source")
        }
        if let snapshot = message.snapshot {
            check.text(snapshot.object, "snapshot.object")
            check.count(snapshot.id, "snapshot.id")
            check.number(snapshot.score, "snapshot.score")
            check.rect(snapshot.bounds, "snapshot.bounds")
            if let detector = snapshot.detector { check.text(detector, "snapshot.detector") }
        }
        return check.violation
    }
}

/// Keeps the first field found out of range; later checks do nothing once one is.
private struct Check {
    var violation: String?

    mutating func fail(_ path: @autoclosure () -> String) {
        if violation == nil { violation = path() }
    }

    mutating func count(_ value: Int, _ path: @autoclosure () -> String) {
        if !MessageLimits.count.contains(value) { fail(path()) }
    }

    mutating func number(_ value: Double?, _ path: @autoclosure () -> String) {
        if let value, !value.isFinite || value.magnitude > 1e15 { fail(path()) }
    }

    mutating func coordinate(_ value: Double, _ path: @autoclosure () -> String) {
        if !MessageLimits.coordinate.contains(value) { fail(path()) }  // NaN is in no range
    }

    mutating func text(_ value: String, _ path: @autoclosure () -> String) {
        if value.utf8.count > MessageLimits.textBytes { fail(path()) }
    }

    mutating func time(_ time: MediaTime?, _ path: @autoclosure () -> String) {
        if let time, !time.isWithinLimits { fail(path()) }
    }

    mutating func duration(_ duration: MediaTime?, _ path: @autoclosure () -> String) {
        if let duration, !duration.isWithinLimits || duration.value < 0 { fail(path()) }
    }

    mutating func dimensions(_ width: Int, _ height: Int, _ path: @autoclosure () -> String) {
        if !MessageLimits.dimension.contains(width) || !MessageLimits.dimension.contains(height) {
            fail("\(path()).width/height")
        }
    }

    mutating func list<Element>(
        _ elements: [Element], _ limit: Int, _ path: @autoclosure () -> String,
        _ each: (inout Check, Element, () -> String) -> Void
    ) {
        guard elements.count <= limit else { return fail(path()) }
        // An element's path is made only if it is reported: this runs on every message.
        withoutActuallyEscaping(path) { path in
            for (index, element) in elements.enumerated() where violation == nil {
                each(&self, element, { "\(path())[\(index)]" })
            }
        }
    }

    mutating func rect(_ rect: NormalizedRect, _ path: @autoclosure () -> String) {
        coordinate(rect.x, "\(path()).x")
        coordinate(rect.y, "\(path()).y")
        coordinate(rect.width, "\(path()).width")
        coordinate(rect.height, "\(path()).height")
    }

    mutating func points(_ points: [NormalizedPoint], _ path: @autoclosure () -> String) {
        list(points, MessageLimits.pointsPerObject, path()) { check, point, path in
            check.coordinate(point.x, "\(path()).x")
            check.coordinate(point.y, "\(path()).y")
        }
    }

    mutating func face(_ face: FaceObject, _ path: @autoclosure () -> String) {
        count(face.faceID, "\(path()).faceID")
        rect(face.bounds, "\(path()).bounds")
        number(face.rollAngle, "\(path()).rollAngle")
        number(face.yawAngle, "\(path()).yawAngle")
        time(face.time, "\(path()).time")
        duration(face.duration, "\(path()).duration")
        number(face.score, "\(path()).score")
        count(face.subDetector, "\(path()).subDetector")
        if let landmarks = face.landmarks { points(landmarks, "\(path()).landmarks") }
        if let identity = face.identity {
            text(identity.name, "\(path()).identity.name")
            number(identity.distance, "\(path()).identity.distance")
        }
        if let descriptor = face.descriptor {
            list(descriptor, MessageLimits.descriptorLength, "\(path()).descriptor") { check, value, path in
                check.number(Double(value), path())
            }
        }
    }

    mutating func code(_ code: MachineReadableCodeObject, _ path: @autoclosure () -> String) {
        count(code.codeID, "\(path()).codeID")
        text(code.stringValue, "\(path()).stringValue")
        points(code.corners, "\(path()).corners")
        rect(code.bounds, "\(path()).bounds")
        time(code.time, "\(path()).time")
        duration(code.duration, "\(path()).duration")
    }

    mutating func item(_ item: DetectedObject, _ path: @autoclosure () -> String) {
        text(item.type, "\(path()).type")
        rect(item.bounds, "\(path()).bounds")
        number(item.confidence, "\(path()).confidence")
        if let label = item.label { text(label, "\(path()).label") }
        if let id = item.id { count(id, "\(path()).id") }
        count(item.objectID, "\(path()).objectID")
    }

    mutating func event(_ event: ObjectEvent) {
        text(event.object, "event.object")
        count(event.id, "event.id")
        if let face = event.face { self.face(face, "event.face") }
        if let code = event.code { self.code(code, "event.code") }
        if let item = event.item { self.item(item, "event.item") }
        if let detector = event.detector { text(detector, "event.detector") }
    }

    /// An `audio` message's format is what a recorder writes, so it must be one; a status
    /// only describes, and may say 0 for what it does not know.
    mutating func audioFormat(_ format: AudioFormat, _ path: @autoclosure () -> String, unknownAllowed: Bool = false) {
        let least = unknownAllowed ? 0 : 1
        text(format.codec, "\(path()).codec")
        text(format.config, "\(path()).config")
        if !(least...1_000_000).contains(format.sampleRate) { fail("\(path()).sampleRate") }
        if !(least...255).contains(format.channels) { fail("\(path()).channels") }
    }

    mutating func status(_ status: SourceStatus) {
        if let reason = status.reason { text(reason, "status.reason") }
        if let device = status.device { text(device, "status.device") }
        list(status.detections ?? [], 64, "status.detections") { check, name, path in check.text(name, path()) }
        if let input = status.input {
            text(input.url, "status.input.url")
            text(input.pixelFormat, "status.input.pixelFormat")
            dimensions(input.width, input.height, "status.input")
            number(input.frameRate, "status.input.frameRate")
            if let orientation = input.orientation, !(1...8).contains(orientation) { fail("status.input.orientation") }
            if let audio = input.audio {
                text(audio.codec, "status.input.audio.codec")
                if !(0...1_000_000).contains(audio.sampleRate) { fail("status.input.audio.sampleRate") }
                if !(0...255).contains(audio.channels) { fail("status.input.audio.channels") }
                audioFormat(audio.output, "status.input.audio.output", unknownAllowed: true)
            }
        }
        if let counters = status.counters { self.counters(counters) }
    }

    /// Every counter a count, so that sums and rates of them cannot overflow.
    mutating func counters(_ counters: PipelineCounters) {
        for (name, value) in [
            ("framesIn", counters.framesIn), ("interruptions", counters.interruptions),
            ("videoPackets", counters.videoPackets), ("messagesPublished", counters.messagesPublished),
            ("bytesPublished", counters.bytesPublished),
        ] {
            count(value, "status.counters.\(name)")
        }
        reasons(counters.sourceSkipped, "status.counters.sourceSkipped")
        list(Array(counters.outputs), 64, "status.counters.outputs") { check, output, path in
            check.text(output.key, path())
            check.count(output.value.delivered, "\(path()).delivered")
            check.reasons(output.value.dropped, "\(path()).dropped")
        }
        for (name, timing) in [
            ("detection", counters.detection), ("codeDetection", counters.codeDetection),
            ("encoding", counters.encoding), ("framesPublishing", counters.framesPublishing),
            ("audio.transcoding", counters.audio?.transcoding),
        ] {
            guard let timing else { continue }
            count(timing.count, "status.counters.\(name).count")
            number(timing.totalMs, "status.counters.\(name).totalMs")
            number(timing.maxMs, "status.counters.\(name).maxMs")
        }
        if let input = counters.metadataIn {
            count(input.accepted, "status.counters.metadataIn.accepted")
            reasons(input.rejected, "status.counters.metadataIn.rejected")
        }
        list(Array(counters.objectsIn ?? [:]), 64, "status.counters.objectsIn") { check, detector, path in
            check.text(detector.key, path())
            check.count(detector.value.groups, "\(path()).groups")
            check.count(detector.value.objects, "\(path()).objects")
            check.reasons(detector.value.rejected, "\(path()).rejected")
        }
        if let audio = counters.audio {
            count(audio.packets, "status.counters.audio.packets")
            count(audio.timestampJumps, "status.counters.audio.timestampJumps")
            count(audio.interruptions ?? 0, "status.counters.audio.interruptions")
            reasons(audio.skipped, "status.counters.audio.skipped")
        }
    }

    mutating func reasons(_ reasons: [String: Int], _ path: @autoclosure () -> String) {
        list(Array(reasons), 64, path()) { check, reason, path in
            check.text(reason.key, path())
            check.count(reason.value, "\(path()).\(reason.key.prefix(40))")
        }
    }
}
