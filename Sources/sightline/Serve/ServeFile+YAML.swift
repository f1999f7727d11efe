import Yams

/// Reading YAML safely: Yams's problems as one line with their place, and a depth bound
/// checked before Yams recurses.
extension ServeFile {
    /// Yams's problem without its own copy of the offending line.
    static func yamlProblem(_ error: any Error) -> String {
        guard let error = error as? YamlError else { return "\(error)" }
        switch error {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _),
            .reader(let problem, _, _, _):
            return problem
        default:
            return String(describing: error).split(separator: "\n").first.map(String.init) ?? ""
        }
    }

    /// Where Yams found its problem.
    static func mark(of error: any Error) -> Mark? {
        switch error as? YamlError {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): mark
        default: nil
        }
    }

    // MARK: Depth

    /// Levels of nesting a file may have: a config has four or five.
    static let maximumDepth = 64

    /// Where the file first nests deeper than `maximumDepth`, counted without parsing: a
    /// line's indentation and its leading `- ` markers bound its block nesting, and open
    /// `[` and `{` outside quotes and comments its flow nesting. The sum bounds the depth
    /// Yams would reach, so a file under the limit never recurses deeply.
    static func tooDeep(_ text: String) -> (line: Int, column: Int)? {
        var flow = 0
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let bytes = Array(line.utf8)
            var column = 0
            while column < bytes.count, bytes[column] == UInt8(ascii: " ") { column += 1 }
            var block = column
            while column + 1 < bytes.count, bytes[column] == UInt8(ascii: "-"), bytes[column + 1] == UInt8(ascii: " ") {
                block += 1
                column += 2
            }
            var quote: UInt8?
            for (offset, byte) in bytes.enumerated() where offset >= column {
                if let open = quote {
                    if byte == open { quote = nil }
                    continue
                }
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "'"): quote = byte
                case UInt8(ascii: "#"): break
                case UInt8(ascii: "["), UInt8(ascii: "{"): flow += 1
                case UInt8(ascii: "]"), UInt8(ascii: "}"): flow = max(0, flow - 1)
                default: continue
                }
                if byte == UInt8(ascii: "#") { break }
                if flow + block > maximumDepth { return (index + 1, offset + 1) }
            }
            if block > maximumDepth { return (index + 1, column + 1) }
        }
        return nil
    }
}
