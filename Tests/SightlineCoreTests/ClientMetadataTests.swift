import SightlineCore
import Testing

@Suite struct ClientMetadataTests {
    func item(_ type: String, _ value: ClientMetadataValue) throws -> MetadataItem {
        try item("mdta/com.example.value", type, value)
    }

    func item(_ identifier: String, _ type: String, _ value: ClientMetadataValue) throws -> MetadataItem {
        try ClientMetadataItem(identifier: identifier, dataType: type, value: value).validated()
    }

    @Test func acceptsEveryTypeWithAMatchingValue() throws {
        #expect(try item("utf8", .string("hi")).value == .string("hi"))
        #expect(try item("int16", .integer(-32768)).value == .int(-32768))
        #expect(try item("uint8", .integer(255)).value == .uint(255))
        #expect(try item("int64", .integer(.min)).value == .int(.min))
        #expect(try item("float32", .integer(2)).value == .float(2))
        #expect(try item("float64", .number(0.25)).value == .float(0.25))
        #expect(try item("rectF32", .numbers([0, 0, 1, 1])).value == .floats([0, 0, 1, 1]))
        #expect(try item("pointF32", .numbers([0.5, 0.5])).dataType == .pointF32)
        #expect(try item("raw", .string("AAECAw==")).value == .data([0, 1, 2, 3]))
        let location = try item(
            MetadataIdentifier.locationISO6709, "com.apple.quicktime.location.ISO6709", .string("+48.8584+002.2945/"))
        #expect(location.dataType == .named("com.apple.quicktime.location.ISO6709"))
    }

    @Test func refusesWhatCannotBeRecorded() {
        func reason(_ identifier: String, _ type: String, _ value: ClientMetadataValue) -> String? {
            do {
                _ = try ClientMetadataItem(identifier: identifier, dataType: type, value: value).validated()
                return nil
            } catch { return error.reason }
        }
        let id = "mdta/com.example.value"
        #expect(reason(id, "int8", .integer(128)) == "malformed")
        #expect(reason(id, "uint16", .integer(-1)) == "malformed")
        #expect(reason(id, "int32", .string("1")) == "malformed")
        #expect(reason(id, "rectF32", .numbers([1, 2, 3])) == "malformed")
        #expect(reason(id, "raw", .string("not base64!")) == "malformed")
        #expect(reason(id, "utf16", .string("x")) == "unknownDataType")
        #expect(reason(id, "com.example.mine", .string("x")) == "unknownDataType")
        #expect(reason("udta/com.example.value", "utf8", .string("x")) == "unknownIdentifier")
        #expect(reason("mdta/", "utf8", .string("x")) == "unknownIdentifier")
        #expect(reason("mdta/has space", "utf8", .string("x")) == "unknownIdentifier")
        #expect(reason(MetadataIdentifier.detectedFace, "utf8", .string("x")) == "unknownIdentifier")
        #expect(reason(id, "utf8", .string(String(repeating: "x", count: 70_000))) == "malformed")
    }

    @Test func aGroupNamesItsInputAndHoldsEachIdentifierOnce() throws {
        let one = ClientMetadataItem(identifier: "mdta/com.example.a", dataType: "utf8", value: .string("a"))
        #expect(try ClientMetadataGroup(input: "gps", items: [one]).validated().count == 1)
        #expect(try ClientMetadataGroup(input: "gps", items: []).validated().isEmpty)  // ends the input's values
        #expect(throws: ClientMetadataError.self) {
            try ClientMetadataGroup(input: "gps", items: [one, one]).validated()
        }
        #expect(throws: ClientMetadataError.self) { try ClientMetadataGroup(input: "", items: [one]).validated() }
    }
}
