/// A timed metadata group a client publishes for a source (kind `metadata`): the
/// `AVCaptureMetadataInput` analogue. docs/protocol.md has the wire format.
///
/// A group replaces the previous group of the same `input`: identifiers it no longer has
/// end there, and an empty group ends them all.
public struct ClientMetadataGroup: Sendable, Codable, Equatable {
    /// Names the client's input ("gps", "haar"); groups of different inputs are independent.
    public var input: String
    public var items: [ClientMetadataItem]
    /// How long the values hold; absent: until the input's next group.
    public var duration: MediaTime?

    public init(input: String, items: [ClientMetadataItem], duration: MediaTime? = nil) {
        self.input = input
        self.items = items
        self.duration = duration
    }

    /// The items as metadata items, or why the group cannot be recorded.
    public func validated() throws(ClientMetadataError) -> [MetadataItem] {
        guard !input.isEmpty, input.utf8.count <= 64 else { throw .malformed("input must be 1-64 bytes") }
        guard items.count <= 64 else { throw .malformed("more than 64 items in a group") }
        var seen = Set<String>()
        return try items.map { item throws(ClientMetadataError) in
            guard seen.insert(item.identifier).inserted else { throw .malformed("\(item.identifier) twice in a group") }
            return try item.validated()
        }
    }
}

/// One value: `identifier` is `mdta/<reverse-DNS key>`, `dataType` a name from the table in
/// docs/protocol.md (`utf8`, `int32`, `float64`, `rectF32`, …, or
/// `com.apple.quicktime.location.ISO6709`), `value` a JSON string, number or array of
/// numbers to match (base64 text for `raw`, `jpeg` and `png`).
public struct ClientMetadataItem: Sendable, Codable, Equatable {
    public var identifier: String
    public var dataType: String
    public var value: ClientMetadataValue

    public init(identifier: String, dataType: String, value: ClientMetadataValue) {
        self.identifier = identifier
        self.dataType = dataType
        self.value = value
    }

    /// Identifiers Sightline writes itself: a client cannot publish them.
    public static let reserved: Set<String> = [
        MetadataIdentifier.detectedFace, MetadataIdentifier.detectedMachineReadableCodes,
    ]

    /// The data types a client may use, by name.
    static let dataTypes: [String: MetadataDataType] = {
        var types: [String: MetadataDataType] = [:]
        for (code, name) in MetadataDataType.names where code != 2 { types[name] = .wellKnown(code) }  // no UTF-16
        types["com.apple.quicktime.location.ISO6709"] = .named("com.apple.quicktime.location.ISO6709")
        return types
    }()

    /// Checks an identifier and a data type name a client may use, and returns the type.
    public static func checkedType(identifier: String, dataType: String) throws(ClientMetadataError)
        -> MetadataDataType
    {
        let key = identifier.utf8.dropFirst(5)
        guard identifier.hasPrefix("mdta/"), (1...255).contains(key.count),
            key.allSatisfy({
                $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || isAlnum($0)
            })
        else {
            throw .unknownIdentifier(String(identifier.prefix(300)))
        }
        guard !reserved.contains(identifier), !identifier.hasPrefix(MetadataIdentifier.detectedObject + ".") else {
            throw .unknownIdentifier("\(identifier) is Sightline's own")
        }
        guard let type = dataTypes[dataType] else { throw .unknownDataType(String(dataType.prefix(100))) }
        return type
    }

    public func validated() throws(ClientMetadataError) -> MetadataItem {
        let type = try Self.checkedType(identifier: identifier, dataType: dataType)
        let mismatch = ClientMetadataError.malformed(
            "\(identifier): a \(dataType) value must be \(Self.expected(type))")
        switch (type, value) {
        case (.utf8, .string(let text)), (.named, .string(let text)):
            guard text.utf8.count <= 65536 else { throw .malformed("\(identifier): text longer than 64 KiB") }
            return MetadataItem(identifier: identifier, dataType: type, value: .string(text))
        case (_, .integer(let number)) where type.integerLayout != nil:
            guard type.holds(number) else { throw mismatch }
            let value: MetadataValue = type.integerLayout!.signed ? .int(number) : .uint(UInt64(number))
            return MetadataItem(identifier: identifier, dataType: type, value: value)
        case (.float32, .integer(let number)), (.float64, .integer(let number)):
            return MetadataItem(identifier: identifier, dataType: type, value: .float(Double(number)))
        case (.float32, .number(let number)), (.float64, .number(let number)):
            return MetadataItem(identifier: identifier, dataType: type, value: .float(number))
        case (_, .numbers(let numbers)) where type.allowsComponents(numbers.count) != nil:
            // At most 256 polygon vertices from a client.
            guard type.allowsComponents(numbers.count) == true, numbers.count <= 512, numbers.allSatisfy(\.isFinite)
            else { throw mismatch }
            return MetadataItem(identifier: identifier, dataType: type, value: .floats(numbers))
        case (.raw, .string(let text)), (.jpeg, .string(let text)), (.png, .string(let text)):
            guard let bytes = Base64.decode(text), bytes.count <= 65536 else { throw mismatch }
            return MetadataItem(identifier: identifier, dataType: type, value: .data(bytes))
        default:
            throw mismatch
        }
    }

    static func expected(_ type: MetadataDataType) -> String {
        switch type {
        case .utf8, .named: "a string"
        case .raw, .jpeg, .png: "base64 text of at most 64 KiB"
        case .float32, .float64: "a number"
        case _ where type.allowsComponents(0) != nil: "an array of numbers of the right count"
        default: "an integer in range"
        }
    }
}

private func isAlnum(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
}

/// A JSON value of a client item: integers are kept exact, apart from other numbers.
public enum ClientMetadataValue: Sendable, Codable, Equatable {
    case integer(Int64)
    case number(Double)
    case string(String)
    case numbers([Double])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let integer = try? container.decode(Int64.self) {
            self = .integer(integer)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else {
            self = .numbers(try container.decode([Double].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .numbers(let value): try container.encode(value)
        }
    }
}

/// Why a client's metadata was refused; the description is the counter's reason.
public enum ClientMetadataError: Error, Equatable, CustomStringConvertible {
    case malformed(String)
    case unknownIdentifier(String)
    case unknownDataType(String)

    public var description: String {
        switch self {
        case .malformed(let why): "malformed: \(why)"
        case .unknownIdentifier(let identifier): "unknown identifier: \(identifier)"
        case .unknownDataType(let type): "unknown data type: \(type)"
        }
    }

    /// A short, bounded name for counting (the description can carry client text).
    public var reason: String {
        switch self {
        case .malformed: "malformed"
        case .unknownIdentifier: "unknownIdentifier"
        case .unknownDataType: "unknownDataType"
        }
    }
}

/// Standard base64 (RFC 4648) decoding; Core has no Foundation.
enum Base64 {
    static func decode(_ text: String) -> [UInt8]? {
        var table = [UInt8](repeating: 255, count: 256)
        for (index, char) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(char)] = UInt8(index)
        }
        let body = Array(text.utf8.prefix { $0 != UInt8(ascii: "=") })
        guard text.utf8.count % 4 == 0, text.utf8.count - body.count <= 2 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(body.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for char in body {
            let value = table[Int(char)]
            guard value != 255 else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return bytes
    }
}
