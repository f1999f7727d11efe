import ArgumentParser
import Foundation
import SightlineCore

/// `run --print` on a terminal: one short line a message for a person to read (kind, time,
/// objects with their IDs and names), where a pipe gets the JSON lines scripts parse.
enum PrintedLine {
    /// The line for `message`; nil for messages a person need not see (`video`, `audio`).
    static func describe(_ message: Message) -> String? {
        let time = message.time.map { String(format: "%9.3f s", $0.seconds) } ?? String(repeating: " ", count: 11)
        if let event = message.event {
            var what = "\(event.object) \(event.id) \(event.change.pastTense)"
            if let name = event.face?.identity?.name { what += ": \(name)" }
            if let code = event.code { what += ": \(quoted(code.stringValue))" }
            if let item = event.item { what += " (\(item.label ?? item.type), \(event.detector ?? "?"))" }
            return "\(time)  \(what)"
        }
        if let faces = message.faces {
            let listed = faces.map { face in "\(face.faceID)" + (face.identity.map { " \($0.name)" } ?? "") }
            return "\(time)  \(count(faces.count, "face"))"
                + (listed.isEmpty ? "" : ": " + listed.joined(separator: ", "))
        }
        if let codes = message.codes {
            let listed = codes.map { "\($0.codeID) \($0.type.rawValue) \(quoted($0.stringValue))" }
            return "\(time)  \(count(codes.count, "code"))"
                + (listed.isEmpty ? "" : ": " + listed.joined(separator: ", "))
        }
        if let group = message.objects {
            let listed = group.items.map { item in (item.id.map { "\($0) " } ?? "") + (item.label ?? item.type) }
            return "\(time)  \(count(group.items.count, "object")) from \(group.detector)"
                + (listed.isEmpty ? "" : ": " + listed.joined(separator: ", "))
        }
        if let status = message.status { return "\(time)  \(describe(status))" }
        if let metadata = message.metadata { return "\(time)  metadata: \(metadata.items.count) item(s)" }
        return nil
    }

    private static func describe(_ status: SourceStatus) -> String {
        var parts = ["status \(status.state.rawValue)"]
        if let input = status.input, status.state == .started {
            parts.append(
                "\(input.width)x\(input.height)"
                    + (input.frameRate.map { String(format: " at %.4g fps", $0) } ?? ""))
        }
        if let detections = status.detections, status.state == .started {
            parts.append("detecting \(detections.joined(separator: ", "))")
        }
        if let counters = status.counters {
            let dropped = counters.outputs.values.reduce(0) { $0 + $1.dropped.values.reduce(0, +) }
            parts.append("\(counters.framesIn) frames, \(dropped) dropped")
        }
        if let reason = status.reason { parts.append(String(reason.prefix(120))) }
        return parts.joined(separator: ": ")
    }

    private static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }

    private static func quoted(_ text: String) -> String {
        "\"" + (text.count <= 40 ? text : "\(text.prefix(40))…").replacingOccurrences(of: "\n", with: " ") + "\""
    }
}

/// `run --print [text|json]`: what a person reads or what a script parses.
enum PrintFormat: String, ExpressibleByArgument, CaseIterable {
    /// Text on a terminal, JSON lines into a pipe or file (`--print` alone).
    case auto
    case text
    case json

    func isReadable(terminal: Bool) -> Bool {
        switch self {
        case .auto: terminal
        case .text: true
        case .json: false
        }
    }
}
