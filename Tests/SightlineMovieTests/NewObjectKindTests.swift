import Foundation
import SightlineCore
import Testing

@testable import SightlineMovie

/// A kind that exists only in this test, as a newcomer adds one: everything about it is this
/// one value. People from a detector in another process, sent as client metadata: a JSON
/// array of [x, y, width, height] boxes under one identifier.
extension ObjectKind {
    static let people = ObjectKind(
        name: "people", objectName: "person", detection: "people", messageKind: .metadata,
        trackIdentifier: "mdta/com.example.people",
        trackFormat: .client(identifier: "mdta/com.example.people", dataType: .utf8),
        colour: RGBColour(red: 64, green: 160, blue: 255),
        record: { message in
            guard let items = try? message.metadata?.validated(),
                let item = items.first(where: { $0.identifier == "mdta/com.example.people" })
            else { return nil }
            return RecordedObjects(items: [item], usesExtraFields: false)
        },
        drawMessage: { message in (try? message.metadata?.validated())?.first.flatMap(people) },
        drawItems: { items in items.first.flatMap(people) ?? [] }, label: { "person #\($0.id)" })

    /// An item's boxes, numbered from 1.
    private static func people(_ item: MetadataItem) -> [DrawnObject]? {
        guard item.identifier == "mdta/com.example.people", case .string(let json) = item.value,
            let boxes = try? JSONDecoder().decode([[Double]].self, from: Data(json.utf8))
        else { return nil }
        return boxes.enumerated().filter { $0.element.count == 4 }.map {
            DrawnObject(id: $0.offset + 1, bounds: $0.element)
        }
    }
}

@Suite struct NewObjectKindTests {
    @Test func aKindIsOneValue() throws {
        let boxes = "[[0.25,0.25,0.125,0.5],[0.5,0.25,0.125,0.5]]"
        let group = ClientMetadataGroup(
            input: "people",
            items: [ClientMetadataItem(identifier: "mdta/com.example.people", dataType: "utf8", value: .string(boxes))])
        let message = Message(kind: .metadata, source: "cam1", time: .zero, wallTimeNs: 0, metadata: group)
        let kind = ObjectKind.people
        let recorded = try #require(kind.recorded(message))
        let item = try #require(recorded.items.first)
        let drawn = try #require(kind.drawn([item]))
        #expect(drawn.map(\.id) == [1, 2])
        #expect(drawn.map(\.bounds) == [[0.25, 0.25, 0.125, 0.5], [0.5, 0.25, 0.125, 0.5]])
        #expect(kind.drawn(message)?.map(\.rect) == drawn.map(\.rect))
        #expect(kind.label(drawn[1]) == "person #2")
        #expect(ObjectKind.recorded(in: kind.trackFormat) == nil)  // not in `ObjectKind.all`: no module sees it
    }
}
