import Foundation
import SightlineCore
import Testing

/// What a source accepts of a detector's `objects` group, and why it refuses the rest.
@Suite struct DetectedObjectsTests {
    func person(x: Double = 0.1, y: Double = 0.2, width: Double = 0.15, height: Double = 0.5) -> DetectedObject {
        DetectedObject(type: "humanBody", bounds: NormalizedRect(x: x, y: y, width: width, height: height))
    }

    func reason(_ group: DetectedObjectGroup) -> String? {
        do {
            try group.validated()
            return nil
        } catch { return error.reason }
    }

    func reason(_ items: [DetectedObject], detector: String = "people") -> String? {
        reason(DetectedObjectGroup(detector: detector, items: items))
    }

    @Test func acceptsBoxesOnTheFrameAndNamedTypes() {
        #expect(reason([]) == nil)  // nothing in view
        #expect(reason([person(), person(x: -0.05, y: 0.9, width: 0.2, height: 0.3)]) == nil)  // crossing edges
        for type in ["humanBody", "catBody", "dogBody", "salientObject", "org.example.forklift", "com.acme.Car-2_b"] {
            #expect(reason([DetectedObject(type: type, bounds: person().bounds)]) == nil, "\(type)")
        }
        var labelled = person()
        (labelled.confidence, labelled.label, labelled.id) = (1, String(repeating: "é", count: 128), 1 << 51)
        #expect(reason([labelled]) == nil)
        #expect(reason(Array(repeating: person(), count: 256)) == nil)
    }

    @Test func refusesEachBadFieldByReason() {
        #expect(reason([person()], detector: "") == "badDetector")
        #expect(reason([person()], detector: "two words") == "badDetector")
        #expect(reason([person()], detector: String(repeating: "a", count: 65)) == "badDetector")
        #expect(reason(Array(repeating: person(), count: 257)) == "tooManyObjects")
        for type in [
            "person", "", "org.", ".org", "org..x", "1org.x", "org.x/y", String(repeating: "a.", count: 65) + "a",
        ] {
            #expect(reason([DetectedObject(type: type, bounds: person().bounds)]) == "badType", "\(type)")
        }
        for bounds in [
            person(x: .nan), person(y: .infinity), person(width: 0), person(height: -0.1), person(x: 1),
            person(x: -0.5, width: 0.4), person(y: 1.2), person(width: 2.5), person(x: -1.5, width: 1.8),
            person(height: .nan),
        ] {
            #expect(reason([person(), bounds]) == "badBounds", "\(bounds.bounds)")
        }
        var sure = person()
        sure.confidence = 1.01
        #expect(reason([sure]) == "badConfidence")
        sure.confidence = .nan
        #expect(reason([sure]) == "badConfidence")
        var long = person()
        long.label = String(repeating: "x", count: 257)
        #expect(reason([long]) == "badLabel")
        var negative = person()
        negative.id = -1
        #expect(reason([negative]) == "badID")
    }

    /// The description names the item at fault, for the one log line.
    @Test func theLogLineNamesTheItem() throws {
        let error = try #require(
            throws: DetectedObjectsError.self,
            performing: { try DetectedObjectGroup(detector: "people", items: [person(), person(x: 3)]).validated() })
        #expect(error.description == "items[1].bounds is not a box on the frame in normalised coordinates")
    }

    /// Sightline's ID is written as `objectID`, the detector's as `id`; a group as a detector
    /// sends it has neither of Sightline's.
    @Test func idsAreWrittenApart() throws {
        var tracked = person()
        tracked.id = 9
        tracked.objectID = 3
        let json = String(decoding: try JSONEncoder().encode(tracked), as: UTF8.self)
        #expect(json.contains(#""objectID":3"#) && json.contains(#""id":9"#))
        let sent = try JSONDecoder().decode(
            DetectedObject.self,
            from: Data(#"{"type":"dogBody","bounds":{"x":0,"y":0,"width":1,"height":1},"colour":"red"}"#.utf8))
        #expect(sent.objectID == 0 && sent.id == nil && sent.type == "dogBody")
    }
}
