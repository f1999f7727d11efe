import Foundation
import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineMovie

/// Object kinds are described once (`ObjectKind`): every module finds a kind's messages,
/// track and drawing through it, so the descriptions must tell kinds apart, and what a
/// recording holds must draw as what the bus carried.
@Suite struct ObjectKindTests {
    @Test func eachKindIsFoundByEachOfItsNames() {
        let kinds = ObjectKind.all
        for names in [kinds.map(\.name), kinds.map(\.objectName), kinds.map(\.detection), kinds.map(\.trackIdentifier)]
        {
            #expect(Set(names).count == kinds.count, "\(names)")
        }
        for kind in kinds {
            #expect(ObjectKind.carried(by: kind.messageKind)?.name == kind.name)
            #expect(ObjectKind.recorded(in: kind.trackFormat)?.name == kind.name)
            #expect(ObjectKind.listed(in: ["status", kind.detection]).map(\.name) == [kind.name])
            if let extra = kind.extraFields { #expect(ObjectKind.recorded(in: extra.trackFormat)?.name == kind.name) }
        }
        #expect(ObjectKind.carried(by: .video) == nil)
        #expect(ObjectKind.recorded(in: .videoOrientation) == nil)
        // Only faces are in every recording, iOS's exact face track first.
        #expect(kinds.filter(\.recordedFromStart).map(\.trackIdentifier) == [MetadataIdentifier.detectedFace])
    }

    /// What a message carries, recorded as a track's items and read back, draws as the
    /// message itself does: IDs, names, texts and corners exactly, bounds to float32.
    @Test func recordedObjectsDrawAsTheyWereSent() throws {
        var random = SplitMix(seed: UInt64(ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ_SEED"] ?? "") ?? 42)
        for round in 0..<500 {
            for message in [Self.faces(&random), Self.codes(&random), Self.objects(&random)] {
                let kind = try #require(ObjectKind.carried(by: message.kind))
                let sent = try #require(kind.drawn(message))
                let recorded = try #require(kind.recorded(message))
                #expect(recorded.items.isEmpty == sent.isEmpty)
                #expect(recorded.usesExtraFields == (message.faces?.contains { $0.identity != nil } ?? false))
                let read = kind.drawn(recorded.items) ?? []
                #expect(read.count == sent.count, "round \(round)")
                for (a, b) in zip(read, sent) {
                    #expect(a.id == b.id && a.name == b.name && a.text == b.text && a.type == b.type)
                    #expect(a.corners == b.corners)
                    #expect(zip(a.bounds, b.bounds).allSatisfy { abs($0 - $1) < 1e-6 }, "\(a.bounds) \(b.bounds)")
                    #expect(!kind.label(a).isEmpty)
                }
            }
        }
    }

    /// The codes track's text, exactly as recordings have held it (docs/movie-format.md).
    @Test func codesAreRecordedAsTheirJSON() throws {
        let code = MachineReadableCodeObject(
            codeID: 3, type: .qr, stringValue: "https://example.com/a",
            corners: [.init(x: 0.25, y: 0.5), .init(x: 0.5, y: 0.5), .init(x: 0.5, y: 0.75), .init(x: 0.25, y: 0.75)],
            time: .zero, duration: nil)
        let message = Message(kind: .codes, source: "cam1", time: .zero, wallTimeNs: 0, codes: [code])
        let item = try #require(ObjectKind.codes.recorded(message)?.items.first)
        #expect(item.identifier == MetadataIdentifier.detectedMachineReadableCodes)
        #expect(
            item.value
                == .string(
                    #"[{"bounds":{"height":0.25,"width":0.25,"x":0.25,"y":0.5},"codeID":3,"corners":[{"x":0.25,"y":0.5},{"x":0.5,"y":0.5},{"x":0.5,"y":0.75},{"x":0.25,"y":0.75}],"stringValue":"https://example.com/a","type":"qr"}]"#
                ))
        #expect(ObjectKind.codes.label(try #require(ObjectKind.codes.drawn([item])?.first)) == "https://example.com/a")
    }

    /// A face track declared without the identity fields gets named faces without them;
    /// declared with them, with them; Apple's fields stay either way.
    @Test func aTrackKeepsTheFieldsItDeclares() throws {
        let face = FaceObject(
            faceID: 9, bounds: NormalizedRect(x: 0.25, y: 0.25, width: 0.5, height: 0.5), rollAngle: 30, yawAngle: 45,
            time: .zero, duration: nil, score: 1, subDetector: 0, identity: FaceIdentity(name: "ada", distance: 0.25))
        let message = Message(kind: .faces, source: "cam1", time: .zero, wallTimeNs: 0, faces: [face])
        let kind = ObjectKind.faces
        let item = try #require(kind.recorded(message)?.items.first)
        func fields(_ item: MetadataItem) -> [String] {
            guard case .records(let records) = item.value else { return [] }
            return records.flatMap { $0.map(\.identifier) }.sorted()
        }
        let apple = [
            MetadataIdentifier.detectedFaceBounds, MetadataIdentifier.detectedFaceID,
            MetadataIdentifier.detectedFaceRollAngle, MetadataIdentifier.detectedFaceYawAngle,
        ].sorted()
        #expect(fields(kind.trackFormat.fitting(item)) == apple)
        let named = try #require(kind.extraFields?.trackFormat)
        #expect(fields(named.fitting(item)) == fields(item))
        #expect(Set(fields(item)).isSuperset(of: apple) && fields(item).count == apple.count + 2)
        #expect(kind.label(try #require(kind.drawn([item])?.first)) == "ada #9")
    }

    static func faces(_ random: inout SplitMix) -> Message {
        let faces = (0..<random.next(below: 4)).map { n in
            FaceObject(
                faceID: random.next(below: 1000), bounds: rect(&random), rollAngle: nil, yawAngle: nil, time: .zero,
                duration: nil, score: 1, subDetector: 0,
                identity: random.next(below: 2) == 0 ? nil : FaceIdentity(name: "person \(n)", distance: 0.5))
        }
        return Message(kind: .faces, source: "cam1", time: .zero, wallTimeNs: 0, faces: faces)
    }

    static func codes(_ random: inout SplitMix) -> Message {
        let codes = (0..<random.next(below: 4)).map { n in
            let r = rect(&random)
            return MachineReadableCodeObject(
                codeID: random.next(below: 1000), type: MachineReadableCodeType.allCases[n % 3],
                stringValue: "code \(random.next())",
                corners: [
                    .init(x: r.x, y: r.y), .init(x: r.x + r.width, y: r.y),
                    .init(x: r.x + r.width, y: r.y + r.height), .init(x: r.x, y: r.y + r.height),
                ], time: .zero, duration: nil)
        }
        return Message(kind: .codes, source: "cam1", time: .zero, wallTimeNs: 0, codes: codes)
    }

    static func objects(_ random: inout SplitMix) -> Message {
        let objects = (0..<random.next(below: 4)).map { n in
            var object = DetectedObject(
                type: ["humanBody", "org.example.forklift"][n % 2], bounds: rect(&random),
                objectID: random.next(below: 1000))
            if random.next(below: 2) == 0 { object.label = "label \(n)" }
            if random.next(below: 2) == 0 { object.id = random.next(below: 1 << 40) }
            if random.next(below: 2) == 0 { object.confidence = 0.5 }
            return object
        }
        return Message(
            kind: .objects, source: "cam1", time: .zero, wallTimeNs: 0,
            objects: DetectedObjectGroup(detector: "people", items: objects))
    }

    /// A detector's objects read back from their items as they were sent, every field, the
    /// bounds to float32.
    @Test func detectedObjectsAreReadBackWhole() throws {
        var random = SplitMix(seed: 3)
        for _ in 0..<200 {
            let message = Self.objects(&random)
            let sent = try #require(message.objects?.items)
            let read = ObjectKind.detectedObjects(in: try #require(ObjectKind.detectedObjects.recorded(message)).items)
            #expect(read.map(\.objectID) == sent.map(\.objectID) && read.map(\.type) == sent.map(\.type))
            #expect(read.map(\.label) == sent.map(\.label) && read.map(\.id) == sent.map(\.id))
            #expect(read.map(\.confidence) == sent.map(\.confidence))
            #expect(read.map(\.bounds.x) == sent.map { Double(Float($0.bounds.x)) })
        }
    }

    static func rect(_ random: inout SplitMix) -> NormalizedRect {
        func unit() -> Double { Double(random.next(below: 1 << 20)) / Double(1 << 20) }
        let (x, y) = (unit() * 0.5, unit() * 0.5)
        return NormalizedRect(x: x, y: y, width: unit() * 0.5, height: unit() * 0.5)
    }
}
