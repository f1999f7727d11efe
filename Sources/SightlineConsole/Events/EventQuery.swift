import Foundation
import GRDB
import SightlineCore

/// The filters of `/api/events` and `/events`: every parameter is checked here, and a bad
/// one is refused with one line saying which and why (docs/console.md).
package struct EventQuery: Sendable, Equatable {
    package var camera: String?
    package var label: String?
    /// A person's name, any case.
    package var name: String?
    /// true: only faces no gallery named; false: only named ones.
    package var unknown: Bool?
    /// Events that overlap this range, seconds since 1970.
    package var after: Double?
    package var before: Double?
    package var limit = 100

    static let parameters = ["camera", "label", "name", "unknown", "after", "before", "limit"]
    static let limits = 1...1000

    package init() {}

    /// Reads `parameters` (the query string's, decoded); throws the reason a value is refused.
    package init(parameters: [(name: String, value: String)]) throws(EventQueryError) {
        var seen = Set<String>()
        for (name, value) in parameters {
            guard Self.parameters.contains(name) else {
                throw EventQueryError(
                    "unknown parameter '\(name.prefix(40))'; use \(Self.parameters.joined(separator: ", "))")
            }
            guard seen.insert(name).inserted else { throw EventQueryError("\(name) is given twice") }
            switch name {
            case "camera": camera = try Self.text(value, name)
            case "label": label = try Self.text(value, name)
            case "name": self.name = try Self.text(value, name)
            case "unknown":
                switch value {
                case "true", "1": unknown = true
                case "false", "0": unknown = false
                default: throw EventQueryError("unknown must be true or false")
                }
            case "after": after = try Self.time(value, name)
            case "before": before = try Self.time(value, name)
            default:
                guard let limit = Int(value), Self.limits.contains(limit) else {
                    throw EventQueryError("limit must be a whole number from 1 to 1000")
                }
                self.limit = limit
            }
        }
        if let after, let before, after > before { throw EventQueryError("after must not be later than before") }
    }

    /// Names, cameras and labels are data: any text but control characters, up to 200.
    private static func text(_ value: String, _ name: String) throws(EventQueryError) -> String {
        guard !value.isEmpty, value.unicodeScalars.count <= 200,
            !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw EventQueryError("\(name) must be 1 to 200 characters, none of them control characters") }
        return value
    }

    private static func time(_ value: String, _ name: String) throws(EventQueryError) -> Double {
        guard let seconds = Double(value), seconds.isFinite, (0...1e11).contains(seconds) else {
            throw EventQueryError("\(name) must be seconds since 1970 (0 to 10^11)")
        }
        return seconds
    }

    /// The SQL: each filter a condition on an indexed column, newest first.
    var request: QueryInterfaceRequest<IndexedEvent> {
        var request = IndexedEvent.all()
        if let camera { request = request.filter(Column("camera") == camera) }
        if let label { request = request.filter(Column("label") == label) }
        if let name { request = request.filter(Column("name").collating(.nocase) == name) }
        switch unknown {
        case true?: request = request.filter(Column("kind") == "face" && Column("name") == nil)
        case false?: request = request.filter(Column("name") != nil)
        case nil: break
        }
        // Still in view (no end yet) overlaps any later range.
        if let after { request = request.filter(sql: "coalesce(\"end\", 1e300) >= ?", arguments: [after]) }
        if let before { request = request.filter(Column("start") <= before) }
        return request.order(Column("start").desc).limit(limit)
    }
}

package struct EventQueryError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
