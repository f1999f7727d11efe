import Foundation
import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineMQTT

/// What the MQTT output publishes for a script of bus messages (the broker itself is tested
/// in tools/test-mqtt.py, against mosquitto).
@Suite struct MQTTTopicsTests {
    var topics = MQTTTopics(prefix: "home/sightline", unknownName: "stranger")

    static func face(_ id: Int, x: Double, named name: String? = nil) -> FaceObject {
        FaceObject(
            faceID: id, bounds: NormalizedRect(x: x, y: 0.2, width: 0.2, height: 0.3), rollAngle: 0, yawAngle: 0,
            time: MediaTime(value: 0, timescale: 30), duration: nil, score: 1.5, subDetector: 0,
            identity: name.map { FaceIdentity(name: $0, distance: 0.4) })
    }

    static func event(
        _ change: ObjectEvent.Change, face: FaceObject, at second: Int64, source: String = "door"
    ) -> Message {
        Message(
            kind: .events, source: source, time: MediaTime(value: second, timescale: 1),
            wallTimeNs: UInt64(1_795_000_000 + second) * 1_000_000_000,
            event: ObjectEvent(change: change, object: "face", id: face.faceID, face: face))
    }

    static func status(_ state: SourceStatus.State, source: String = "door", identities: Bool = true) -> Message {
        Message(
            kind: .status, source: source, time: nil, wallTimeNs: 1_795_000_000_000_000_000,
            status: SourceStatus(state: state, detections: identities ? ["faces", "identities"] : ["faces"]))
    }

    func json(_ publication: MQTTConnection.Publication) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(publication.payload)) as? [String: Any])
    }

    @Test mutating func aFaceIsNewThenUpdatedWhenNamedThenEnds() throws {
        _ = topics.publications(for: Self.status(.started))
        let new = topics.publications(for: Self.event(.enter, face: Self.face(3, x: 0.1), at: 10))
        #expect(new.map(\.topic) == ["home/sightline/events", "home/sightline/door/face", "home/sightline/door/all"])
        #expect(new.map(\.retain) == [false, true, true])
        #expect(new[1].payload == Array("1".utf8))
        let first = try json(new[0])
        #expect(first["type"] as? String == "new")
        let after = try #require(first["after"] as? [String: Any])
        #expect(after["id"] as? String == "1795000010.000000-door-face-3")
        #expect(after["camera"] as? String == "door" && after["label"] as? String == "face")
        let box = try #require(after["box"] as? [Double])
        #expect(zip(box, [0.1, 0.2, 0.3, 0.5]).allSatisfy { abs($0 - $1) < 1e-12 } && box.count == 4)
        #expect(after["start_time"] as? Double == 1_795_000_010 && after["end_time"] is NSNull)
        #expect(after["sub_label"] is NSNull && after["score"] as? Double == 1.5)

        let named = topics.publications(for: Self.event(.identified, face: Self.face(3, x: 0.2, named: "Ada"), at: 12))
        #expect(named.map(\.topic) == ["home/sightline/events", "home/sightline/people/Ada"])
        let update = try json(named[0])
        #expect(update["type"] as? String == "update")
        #expect((update["before"] as? [String: Any])?["sub_label"] is NSNull)
        let sub = (update["after"] as? [String: Any])?["sub_label"] as? [Any]
        #expect(sub?.first as? String == "Ada" && sub?.last as? Double == 0.4)
        let person = try json(named[1])
        #expect(person["camera"] as? String == "door" && person["event_id"] as? String == after["id"] as? String)
        #expect(named[1].retain)

        let end = topics.publications(for: Self.event(.leave, face: Self.face(3, x: 0.3), at: 15))
        #expect(end.map(\.topic) == ["home/sightline/events", "home/sightline/door/face", "home/sightline/door/all"])
        let ended = try #require(try json(end[0])["after"] as? [String: Any])
        #expect(ended["end_time"] as? Double == 1_795_000_015 && ended["start_time"] as? Double == 1_795_000_010)
        #expect((ended["sub_label"] as? [Any])?.first as? String == "Ada")
        #expect(end[1].payload == Array("0".utf8) && end[2].payload == Array("0".utf8))
    }

    @Test mutating func aFaceNobodyNamedIsTheUnknownOneOnSourcesWithAGallery() throws {
        _ = topics.publications(for: Self.status(.running))
        _ = topics.publications(for: Self.event(.enter, face: Self.face(1, x: 0.1), at: 1))
        let end = topics.publications(for: Self.event(.leave, face: Self.face(1, x: 0.1), at: 2))
        #expect(end.map(\.topic).last == "home/sightline/people/stranger")
        // Without a gallery, a face is not "unknown": nobody could have named it.
        _ = topics.publications(for: Self.status(.running, source: "yard", identities: false))
        _ = topics.publications(for: Self.event(.enter, face: Self.face(1, x: 0.1), at: 1, source: "yard"))
        let other = topics.publications(for: Self.event(.leave, face: Self.face(1, x: 0.1), at: 2, source: "yard"))
        #expect(!other.map(\.topic).contains("home/sightline/people/stranger"))
    }

    @Test mutating func aSourceThatStartsAgainEndsWhatItTracked() throws {
        _ = topics.publications(for: Self.event(.enter, face: Self.face(1, x: 0.1), at: 1))
        _ = topics.publications(for: Self.event(.enter, face: Self.face(2, x: 0.5), at: 1))
        let restart = topics.publications(for: Self.status(.started))
        let ends = try restart.filter { $0.topic.hasSuffix("/events") }.map { try json($0)["type"] as? String }
        #expect(ends == ["end", "end"])
        #expect(restart.last?.topic == "home/sightline/door/status")
        #expect(try json(restart.last!)["state"] as? String == "started")
        // Their leave events, if they come after all, are nothing new.
        #expect(topics.publications(for: Self.event(.leave, face: Self.face(1, x: 0.1), at: 2)).isEmpty)
    }

    @Test mutating func otherDetectorsObjectsCountByTheirLabels() throws {
        func object(_ id: Int, label: String?, type: String = "humanBody", _ change: ObjectEvent.Change) -> Message {
            var item = DetectedObject(
                type: type, bounds: NormalizedRect(x: 0.1, y: 0.1, width: 0.1, height: 0.1), confidence: 0.8,
                label: label)
            item.objectID = id
            return Message(
                kind: .events, source: "door", time: MediaTime(value: 1, timescale: 1), wallTimeNs: 1_000_000_000,
                event: ObjectEvent(change: change, object: type, id: id, item: item, detector: "people"))
        }
        #expect(topics.publications(for: object(1, label: nil, .enter))[1].topic == "home/sightline/door/person")
        let labelled = topics.publications(for: object(2, label: "a/b+#c", type: "org.example.badge", .enter))
        #expect(labelled[1].topic == "home/sightline/door/a_b__c")
        let event = try json(labelled[0])["after"] as? [String: Any]
        #expect(event?["detector"] as? String == "people" && event?["type"] as? String == "org.example.badge")
        #expect(event?["score"] as? Double == 0.8 && event?["top_score"] as? Double == 0.8)
        // Labels beyond the limit share one count topic, so that a detector cannot grow the
        // retained topics without bound.
        var last: [MQTTConnection.Publication] = []
        for id in 10..<(10 + MQTTTopics.maximumLabels + 5) {
            last = topics.publications(for: object(id, label: "label\(id)", .enter))
        }
        #expect(last[1].topic == "home/sightline/door/other")
    }

    @Test func homeAssistantIsToldOfEachEntityOnceAsItFirstAppears() throws {
        var topics = MQTTTopics(prefix: "sightline", unknownName: "unknown", discoveryPrefix: "ha")
        let first = topics.publications(for: Self.status(.running, source: "front.door"))
        let configs = first.filter { $0.topic.hasPrefix("ha/") }
        #expect(
            configs.map(\.topic) == [
                "ha/binary_sensor/sightline_sightline/face_front_door/config",
                "ha/sensor/sightline_sightline/all_front_door/config",
                "ha/sensor/sightline_sightline/status_front_door/config",
            ])
        #expect(configs.allSatisfy { $0.retain })
        let face = try json(configs[0])
        #expect(face["state_topic"] as? String == "sightline/front.door/face")
        #expect(face["availability_topic"] as? String == "sightline/available")
        #expect(face["payload_not_available"] as? String == "offline")
        #expect(
            (face["device"] as? [String: Any])?["identifiers"] as? [String] == ["sightline_sightline_source_front_door"]
        )
        // Again: nothing more to announce.
        #expect(
            !topics.publications(for: Self.status(.running, source: "front.door")).contains {
                $0.topic.hasPrefix("ha/")
            })
        let named = topics.publications(
            for: Self.event(.enter, face: Self.face(1, x: 0.1, named: "Ada"), at: 3, source: "front.door"))
        #expect(
            named.filter { $0.topic.hasPrefix("ha/") }.map(\.topic) == [
                "ha/sensor/sightline_sightline/count_front_door_face/config",
                "ha/sensor/sightline_sightline/person_Ada/config",
            ])
        let ada = try #require(named.first { $0.topic == "sightline/people/Ada" })
        #expect(try json(ada)["last_seen"] as? String == "2026-11-18T11:06:43Z")
    }

    static func snapshot(of face: FaceObject, at second: Int64, jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xD9]) -> (
        Message, [UInt8]
    ) {
        (
            Message(
                kind: .snapshots, source: "door", time: MediaTime(value: second, timescale: 1),
                wallTimeNs: UInt64(1_795_000_000 + second) * 1_000_000_000,
                frame: FrameInfo(format: .jpeg, width: 640, height: 480, sourceWidth: 640, sourceHeight: 480),
                snapshot: ObjectSnapshot(object: "face", id: face.faceID, score: 2.5, bounds: face.bounds)),
            jpeg
        )
    }

    @Test func aSnapshotIsAnUpdateAndTheNewestFaceIsTheLabelsSnapshot() throws {
        var topics = MQTTTopics(prefix: "s", unknownName: "unknown", discoveryPrefix: "ha")
        _ = topics.publications(for: Self.event(.enter, face: Self.face(1, x: 0.1), at: 1))
        _ = topics.publications(for: Self.event(.enter, face: Self.face(2, x: 0.5), at: 2))
        // The older face's snapshot: an update, not the label's picture (a newer face is in view).
        let (older, jpeg) = Self.snapshot(of: Self.face(1, x: 0.15), at: 3)
        let first = topics.publications(for: older, payload: jpeg)
        #expect(first.map(\.topic) == ["s/events"])
        let update = try json(first[0])
        #expect(update["type"] as? String == "update")
        #expect((update["before"] as? [String: Any])?["has_snapshot"] as? Bool == false)
        let after = try #require(update["after"] as? [String: Any])
        #expect(after["has_snapshot"] as? Bool == true && after["score"] as? Double == 2.5)
        #expect(after["frame_time"] as? Double == 1_795_000_003 && after["media_time"] as? Double == 3)
        #expect((after["box"] as? [Double])?.first.map { abs($0 - 0.15) < 1e-12 } == true)
        // The newest face's: the label's picture, retained as it came, and a camera for it.
        let (newest, _) = Self.snapshot(of: Self.face(2, x: 0.5), at: 4)
        let second = topics.publications(for: newest, payload: jpeg)
        #expect(
            second.map(\.topic) == [
                "s/events", "ha/camera/sightline_s/snapshot_door_face/config", "s/door/face/snapshot",
            ])
        #expect(second[2].payload == jpeg && second[2].retain)
        let camera = try json(second[1])
        #expect(camera["topic"] as? String == "s/door/face/snapshot" && camera["state_topic"] == nil)
        #expect(camera["availability_topic"] as? String == "s/available")
        // Not a JPEG, or of a face not in view: nothing.
        #expect(topics.publications(for: newest, payload: Array("GIF89a".utf8)).isEmpty)
        #expect(topics.publications(for: newest).isEmpty)
        #expect(topics.publications(for: Self.snapshot(of: Self.face(9, x: 0.5), at: 5).0, payload: jpeg).isEmpty)
        // The end event says it had one.
        let end = topics.publications(for: Self.event(.leave, face: Self.face(2, x: 0.5), at: 6))
        #expect((try json(end[0])["after"] as? [String: Any])?["has_snapshot"] as? Bool == true)
    }

    @Test func everyoneEnrolledHasASensorFromTheStartAndTheRemovedLoseTheirs() throws {
        var topics = MQTTTopics(prefix: "s", unknownName: "stranger", discoveryPrefix: "ha", enrolled: ["Ada", "Bo b"])
        #expect(topics.retainedSubscriptions == ["ha/sensor/sightline_s/+/config"])
        let start = topics.atStart()
        #expect(
            start.map(\.topic) == [
                "ha/sensor/sightline_s/person_Ada/config", "ha/sensor/sightline_s/person_Bo_b/config",
                "ha/sensor/sightline_s/person_stranger/config",
            ])
        #expect(try json(start[0])["state_topic"] as? String == "s/people/Ada")
        // What an earlier run left: Cy's sensor (no longer enrolled) goes, with Cy's last sighting;
        // Ada's stays, as does what is not a person's or not ours.
        var earlier = MQTTTopics(prefix: "s", unknownName: "stranger", discoveryPrefix: "ha", enrolled: ["Cy"])
        let cy = try #require(earlier.atStart().first { $0.topic.contains("person_Cy") })
        let removal = topics.retained(cy)
        #expect(removal.map(\.topic) == [cy.topic, "s/people/Cy"])
        #expect(removal.allSatisfy { $0.payload.isEmpty && $0.retain })
        #expect(topics.retained(start[0]).isEmpty)
        let status = try #require(
            earlier.publications(for: Self.status(.running)).first { $0.topic.contains("status_door") })
        #expect(topics.retained(status).isEmpty)
        #expect(topics.retained(.init(topic: cy.topic, payload: [], retain: true)).isEmpty)
        #expect(topics.retained(.init(topic: cy.topic, payload: Array("not json".utf8), retain: true)).isEmpty)
        var otherPrefix = MQTTTopics(prefix: "t", unknownName: "stranger", discoveryPrefix: "ha", enrolled: ["Cy"])
        #expect(topics.retained(try #require(otherPrefix.atStart().first)).isEmpty)
        // A process without a gallery removes nobody, and announces nobody.
        var plain = MQTTTopics(prefix: "s", unknownName: "stranger", discoveryPrefix: "ha")
        #expect(plain.atStart().isEmpty && plain.retained(cy).isEmpty)
    }

    @Test func topicLevelsFromOutsideNeverCarryWildcardsOrSeparators() {
        var random = SplitMix(seed: 34)
        let alphabet = Array("ab/+#\u{0}é.-_ 9日").map(String.init)
        for _ in 0..<2000 {
            let text = (0..<random.next(below: 80)).map { _ in alphabet[random.next(below: alphabet.count)] }.joined()
            let level = MQTTTopics.topicLevel(text)
            #expect(MQTTConfiguration.isValidTopicLevel(level), "\(text.debugDescription) -> \(level.debugDescription)")
            #expect(level.count <= 64 && level != "." && level != "..")
        }
    }
}

@Suite struct MQTTConfigurationTests {
    @Test func urlsAreReadAsMosquittosClientsReadThem() throws {
        func broker(_ url: String) throws -> MQTTConfiguration.Broker { try MQTTConfiguration.broker(in: url) }
        #expect(try broker("mqtt://127.0.0.1") == .init(host: "127.0.0.1", port: 1883, tls: false))
        #expect(try broker("mqtts://broker.lan:8884/") == .init(host: "broker.lan", port: 8884, tls: true))
        #expect(try broker("mqtts://broker.lan") == .init(host: "broker.lan", port: 8883, tls: true))
        #expect(try broker("mqtt://[::1]:1884") == .init(host: "::1", port: 1884, tls: false))
        for bad in [
            "", "http://x", "mqtt://", "mqtt://:1883", "mqtt://x:0", "mqtt://x:65536", "mqtt://x:a",
            "mqtt://u@x", "mqtt://x/y", "mqtt://[::1]x", "tcp://x:1883",
        ] {
            #expect(throws: SightlineError.self, "\(bad)") { try broker(bad) }
        }
    }

    @Test func prefixesAreTopicLevelsWithoutWildcards() {
        for good in ["sightline", "home/cameras", "a.b-c_d"] { #expect(MQTTConfiguration.isValidTopicLevelPath(good)) }
        for bad in ["", "#", "a/#", "a/+/b", "a//b", "/a", "a/", "a\u{0}b"] {
            #expect(!MQTTConfiguration.isValidTopicLevelPath(bad), "\(bad.debugDescription)")
        }
    }

    @Test func randomURLsNeverCrashTheParser() {
        var random = SplitMix(seed: 35)
        let pieces = [
            "mqtt://", "mqtts://", "[", "]", ":", "::1", "1883", "99999", "-1", "host", "/", "@", "%", "é",
            "\u{0}", " ", "0",
        ]
        for _ in 0..<5000 {
            let url = (0..<random.next(below: 8)).map { _ in pieces[random.next(below: pieces.count)] }.joined()
            if let broker = try? MQTTConfiguration.broker(in: url) {
                #expect((1...65_535).contains(broker.port) && !broker.host.isEmpty, "\(url)")
            }
        }
    }
}
