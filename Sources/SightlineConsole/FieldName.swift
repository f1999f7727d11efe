/// A JSON field whose name is known only at run time: the pages' JSON has a field for each
/// object kind, named after the kind (`faces`, `codes`; docs/console.md).
struct FieldName: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A value's JSON with a field for each object kind beside its own (`faces`, `codes`), so
/// that the pages read every kind the same way.
struct WithKindFields<Value: Encodable>: Encodable {
    let value: Value
    let fields: [(name: String, value: any Encodable)]

    func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
        var container = encoder.container(keyedBy: FieldName.self)
        for field in fields { try container.encode(field.value, forKey: FieldName(field.name)) }
    }
}
