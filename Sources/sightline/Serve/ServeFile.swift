import ArgumentParser
import Foundation
import SightlineBus
import SightlineCapture
import SightlineConsole
import SightlineCore
import SightlineDetection
import SightlinePipeline
import SightlineRecorder
import SightlineService
import Yams

/// `serve`'s configuration file (docs/configuration.md), read with Yams.
///
/// Each source is written with `run`'s option names as keys, and is parsed by the very
/// options `run` parses (`SourceOptions`), so the two never drift apart; `defaults` gives
/// keys every source shares. Every problem is reported, each as one line naming the line of
/// the file it is on.
struct ServeFile {
    let path: String
    var services = ServicesConfiguration()
    var console: ConsoleConfiguration?
    private(set) var problems: [String] = []
    /// Where and what each problem reported was, so that none is reported twice.
    private var reported: Set<String> = []
    /// Where each source parsed so far is in the file: its entry, by key.
    /// Every source entry, valid or not, with what `checkSourcesApart` compares: so that a
    /// duplicate ID or an unwritable directory is reported in the same pass as a bad value.
    private var entries: [SourceEntry] = []

    private struct SourceEntry {
        var id: String
        var device: String?
        var recordDirectory: String?
        var node: Node
        var keys: [String: Node]
    }

    /// The top-level keys, and the console's.
    static let topLevelKeys: Set<String> = [
        "publish", "publish-to", "insecure", "curve-key", "allow", "server-key", "metrics", "metrics-token-file",
        "retention", "defaults", "sources", "console", "mqtt",
    ]
    /// `run`'s options that may be given more than once, which a list gives here.
    static let repeatableKeys: Set<String> = ["metadata-track", "control"]
    static let retentionKeys: Set<String> = ["keep", "max-total"]
    static let consoleKeys: Set<String> = ["listen", "token-file", "insecure"]

    init(path: String) {
        self.path = path
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            problems.append("\(path):1:1: cannot be read: \((error as NSError).localizedDescription)")
            return
        }
        // Yams composes nested nodes by recursion: a file nested thousands deep would
        // overflow the stack before it could be refused, so the depth is bounded first.
        if let (line, column) = Self.tooDeep(text) {
            problems.append(
                "\(path):\(line):\(column): nested deeper than \(Self.maximumDepth) levels; a config needs a few")
            return
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            let mark = Self.mark(of: error)
            problems.append(
                "\(path):\(mark?.line ?? 1):\(mark?.column ?? 1): not YAML: \(Self.cut(Self.yamlProblem(error)))")
            return
        }
        guard let root, let top = mapping(root, "the file") else {
            if root == nil { problems.append("\(path):1:1: empty; it needs at least `sources:`") }
            return
        }
        read(top)
    }

    // MARK: Top level

    private mutating func read(_ top: [(key: String, node: Node)]) {
        var values: [String: Node] = [:]
        for (key, node) in top {
            guard Self.topLevelKeys.contains(key) else {
                report(node, "unknown key '\(key)' (keys: \(Self.topLevelKeys.sorted().joined(separator: ", ")))")
                continue
            }
            values[key] = node
        }
        var texts: [String: String] = [:]
        for key in ["publish", "publish-to", "curve-key", "allow", "server-key", "metrics", "metrics-token-file"] {
            if let node = values[key] { texts[key] = string(node, key) }
        }
        let insecure = values["insecure"].map { bool($0, "insecure") ?? false } ?? false
        readBus(texts, at: values["publish"] ?? values["publish-to"] ?? values["curve-key"], insecure: insecure)
        if let node = values["metrics"], let listen = texts["metrics"] {
            let token = texts["metrics-token-file"]
            services.metrics = attempt(node) {
                try OperationsEndpoint(
                    listen: listen, token: try token.map { try readSecret($0, option: "metrics-token-file") },
                    allowRemote: insecure)
            }
        }
        if let node = values["retention"], let entries = mapping(node, "retention") {
            var keys: [String: String] = [:]
            for (key, value) in entries {
                guard Self.retentionKeys.contains(key) else {
                    report(value, "unknown key 'retention.\(key)' (keys: keep, max-total)")
                    continue
                }
                keys[key] = string(value, "retention.\(key)")
            }
            services.overallRetention =
                attempt(node) { try RecordingOptions.retention(keep: keys["keep"], maxTotal: keys["max-total"]) }
                ?? services.overallRetention
        }
        let defaults = values["defaults"].flatMap { mapping($0, "defaults") } ?? []
        guard let sourcesNode = values["sources"] else {
            problems.append("\(path):1:1: no `sources:`; list at least one source")
            return
        }
        guard case .sequence(let sequence) = sourcesNode, !sequence.isEmpty else {
            report(sourcesNode, "`sources` must be a list of sources, each with `source-id` and `source`")
            return
        }
        for (index, node) in sequence.enumerated() { readSource(node, index: index, defaults: defaults) }
        checkSourcesApart()
        services.shareCores(except: Set(entries.filter { $0.keys["detector-threads"] != nil }.map(\.id)))
        if let node = values["console"] { readConsole(node, insecure: insecure) }
        if let node = values["mqtt"] { readMQTT(node) }
    }

    /// `mqtt:`: `run`'s `--mqtt` options as keys without their `mqtt-` (`url` for `--mqtt`
    /// itself), parsed by `run`'s own `MQTTOptions`.
    private mutating func readMQTT(_ node: Node) {
        guard let entries = mapping(node, "mqtt") else { return }
        var arguments: [String] = []
        for (key, value) in entries {
            guard MQTTOptions.fileKeys.contains(key) else {
                let keys = MQTTOptions.fileKeys.sorted().joined(separator: ", ")
                report(value, "unknown key 'mqtt.\(key)' (keys: \(keys))")
                continue
            }
            guard let text = string(value, "mqtt.\(key)") else { continue }
            arguments += [key == "url" ? "--mqtt" : "--mqtt-\(key)", text]
        }
        guard arguments.contains("--mqtt") else {
            report(node, "mqtt needs `url` (mqtt://HOST[:PORT] or mqtts://HOST[:PORT])")
            return
        }
        services.mqtt = attempt(node) { try MQTTOptions.parse(arguments).configuration() } ?? nil
    }

    private mutating func readBus(_ texts: [String: String], at node: Node?, insecure: Bool) {
        let (publish, publishTo, key, allow, server) = (
            texts["publish"], texts["publish-to"], texts["curve-key"], texts["allow"], texts["server-key"]
        )
        let bus: ServicesConfiguration.Bus? = attempt(node) {
            switch (publishTo, key, allow, server) {
            case (nil, nil, nil, nil):
                return .shared(
                    publish: try Endpoint(publish ?? Endpoint.defaultPublish.string), allowRemote: insecure, curve: nil)
            case (nil, let key?, let allowed?, nil):
                return .shared(
                    publish: try Endpoint(publish ?? Endpoint.defaultPublish.string), allowRemote: insecure,
                    curve: try CurveServer(keyFile: key, allow: allowed))
            case (let broker?, _, nil, _) where publish == nil:
                return .broker(
                    frontend: try Endpoint(broker),
                    curve: try key.map { key in
                        guard let server else { throw ValidationError("curve-key with publish-to needs server-key") }
                        return try CurveClient(keyFile: key, serverKeyFile: server)
                    })
            default:
                throw ValidationError(
                    "publish (with curve-key and allow for CURVE), or publish-to a broker (with curve-key and server-key)"
                )
            }
        }
        if let bus { services.bus = bus }
    }

    private mutating func readConsole(_ node: Node, insecure: Bool) {
        guard let entries = mapping(node, "console") else { return }
        var console = ConsoleConfiguration()
        console.allowRemote = insecure
        for (key, value) in entries {
            switch key {
            case "listen":
                guard let listen = string(value, "console.listen"),
                    let (host, port) = attempt(value, { try ConsoleCommand.parseListen(listen) })
                else { continue }
                (console.host, console.port) = (host, port)
            case "token-file":
                guard let file = string(value, "console.token-file") else { continue }
                console.token = attempt(value) { try readSecret(file, option: "console.token-file") }
            case "insecure": console.allowRemote = bool(value, "console.insecure") ?? false
            default: report(value, "unknown key 'console.\(key)' (keys: listen, token-file, insecure)")
            }
        }
        console.recordingDirectories = Array(Set(services.sources.compactMap(\.recording?.directory))).sorted()
        if attempt(node, { try console.validate() }) != nil { self.console = console }
    }

    // MARK: Sources

    /// The source's keys (over `defaults`), as the command line `run` would get, parsed by
    /// `run`'s own options.
    private mutating func readSource(_ node: Node, index: Int, defaults: [(key: String, node: Node)]) {
        guard let own = mapping(node, "sources[\(index)]") else { return }
        var keys: [(key: String, node: Node)] = defaults.filter { key in !own.contains { $0.key == key.key } }
        keys += own
        let name = own.first { $0.key == "source-id" }?.node.string.map { "source '\($0)'" } ?? "sources[\(index)]"
        guard own.contains(where: { $0.key == "source" }) else {
            report(node, "\(name): no `source` (a camera such as /dev/video0, a file or a URL)")
            return
        }
        var arguments: [(key: String, node: Node, arguments: [String])] = []
        for (key, value) in keys {
            guard var given = commandLine(key, value, name: name) else { return }
            if Self.environmentKeys.contains(key) {
                guard let substituted = substitutingVariables(given, key: key, node: value, name: name) else { return }
                given = substituted
            }
            arguments.append((key, value, given))
        }
        let lines = Dictionary(keys.map { ($0.key, $0.node) }, uniquingKeysWith: { $1 })
        if let source = parseSource(arguments, node: node, name: name) {
            services.sources.append(source)
            entries.append(
                SourceEntry(
                    id: source.id, device: source.pipeline?.source.devicePath,
                    recordDirectory: source.recording?.directory, node: node, keys: lines))
        } else {
            // Compared with the others all the same, from the keys as written.
            let source = lines["source"]?.string
            entries.append(
                SourceEntry(
                    id: lines["source-id"]?.string ?? "cam1",
                    device: source.flatMap { V4L2Source.isDevice($0) ? $0 : nil },
                    recordDirectory: lines["record"]?.string, node: node, keys: lines))
        }
    }

    /// The source keys whose values may name environment variables, `${NAME}`: where a
    /// camera's password goes, so that the file need not hold it.
    static let environmentKeys: Set<String> = ["source"]

    /// `arguments` with each `${NAME}` replaced by the environment's value; nil, reported
    /// with the names that are not set (never a value), when any is not.
    private mutating func substitutingVariables(_ arguments: [String], key: String, node: Node, name: String)
        -> [String]?
    {
        var substituted: [String] = []
        for argument in arguments {
            switch substitutingEnvironment(argument, ProcessInfo.processInfo.environment) {
            case .success(let text): substituted.append(text)
            case .failure(let unset):
                let names = unset.names.map { "${\(OptionValues.cut($0))}" }.joined(separator: ", ")
                report(node, "\(name): `\(key)` names \(names), not set in the environment")
                return nil
            }
        }
        return substituted
    }

    /// One key of a source as `run`'s arguments; nil, reported, when its value has the wrong shape.
    private mutating func commandLine(_ key: String, _ value: Node, name: String) -> [String]? {
        switch value {
        case .scalar:
            if let flag = value.bool, value.string.map({ ["true", "false", "yes", "no"].contains($0) }) == true {
                return flag ? ["--\(key)"] : []
            }
            return ["--\(key)=\(value.string ?? "")"]  // `=`: a value may start with "-"
        case .sequence(let items):
            guard Self.repeatableKeys.contains(key) else {
                report(value, "\(name): '\(key)' takes one value, not a list")
                return nil
            }
            return items.compactMap { item in string(item, key).map { "--\(key)=\($0)" } }
        case .mapping(let pairs) where key == "controls":
            // A camera's controls, NAME: VALUE, as --control NAME=VALUE.
            return pairs.compactMap { control, setting in
                guard let control = string(control, key), let setting = string(setting, key) else { return nil }
                return "--control=\(control)=\(setting)"
            }
        default:
            report(value, "\(name): '\(key)' takes a value or a list of values, not a mapping")
            return nil
        }
    }

    /// The source `run` would make of these keys; nil when any is wrong. `run`'s parser stops
    /// at the first bad value, so each key it names is reported and left out, and the rest
    /// parsed again, until they parse: every bad value of the source in one pass.
    private mutating func parseSource(
        _ arguments: [(key: String, node: Node, arguments: [String])], node: Node, name: String
    ) -> ServicesConfiguration.Source? {
        var remaining = arguments
        while true {
            do {
                let options = try SourceOptions.parse(remaining.flatMap(\.arguments))
                var source = try options.configuration()
                source.pipeline?.bus.allowRemote = services.bus.allowsRemote
                return remaining.count == arguments.count ? source : nil
            } catch {
                let message = SourceOptions.message(for: error)
                let named = keyNamed(in: message, among: remaining.map { ($0.key, $0.node) })
                report(named?.node ?? node, "\(name): \(Self.asKeys(message))")
                guard let named, named.key != "source" else { return nil }
                remaining.removeAll { $0.key == named.key }
            }
        }
    }

    /// Source IDs name topics and files, and a camera can be opened once: each must differ.
    private mutating func checkSourcesApart() {
        var ids: [String: String] = [:]
        var devices: [String: String] = [:]
        var directories: Set<String> = []
        for source in entries {
            let line = { (key: String) in Self.position(source.keys[key] ?? source.node) }
            if let first = ids[source.id] {
                problems.append(
                    "\(path):\(line("source-id")): source ID '\(source.id)' is already used at \(first)")
            }
            ids[source.id] = ids[source.id] ?? line("source-id")
            if let camera = source.device {
                let device = URL(fileURLWithPath: camera).resolvingSymlinksInPath().path
                if let other = devices[device] {
                    problems.append(
                        "\(path):\(line("source")): source '\(source.id)' uses \(camera), which source '\(other)' already uses"
                    )
                }
                devices[device] = devices[device] ?? source.id
            }
            if let directory = source.recordDirectory, directories.insert(directory).inserted {
                do {
                    try RecordingDirectory.prepare(directory)
                } catch {
                    problems.append("\(path):\(line("record")): source '\(source.id)': \(error)")
                }
            }
        }
    }

    /// The key an error message names (`--fps`), if it names one.
    private func keyNamed(in message: String, among keys: [(key: String, node: Node)]) -> (key: String, node: Node)? {
        // `controls:` is given as `--control NAME=VALUE`.
        keys.sorted { $0.key.count > $1.key.count }.first { key in
            message.contains("--\(key.key == "controls" ? "control" : key.key)")
        }
    }

    /// `run`'s messages name options (`--fps <fps>`); here they are keys (`fps`).
    static func asKeys(_ message: String) -> String {
        message.replacingOccurrences(of: #"--([a-z0-9-]+)( <[a-z0-9-]+>)?"#, with: "$1", options: .regularExpression)
            .split(separator: "\n").first.map(String.init) ?? message
    }

    // MARK: Values

    private mutating func mapping(_ node: Node, _ what: String) -> [(key: String, node: Node)]? {
        guard case .mapping(let mapping) = node else {
            report(node, "\(what) must be a mapping of keys to values")
            return nil
        }
        var seen: Set<String> = []
        var entries: [(key: String, node: Node)] = []
        for (key, value) in mapping {
            guard let name = key.string else {
                report(key, "\(what): keys are names")
                continue
            }
            if !seen.insert(name).inserted {
                report(key, "\(what): '\(name)' is given twice")
                continue
            }
            entries.append((name, value))
        }
        return entries
    }

    private mutating func string(_ node: Node, _ key: String) -> String? {
        guard case .scalar(let scalar) = node else {
            report(node, "'\(key)' takes one value")
            return nil
        }
        return scalar.string
    }

    private mutating func bool(_ node: Node, _ key: String) -> Bool? {
        guard let value = node.bool else {
            report(node, "'\(key)' takes true or false")
            return nil
        }
        return value
    }

    /// What `body` makes, or nil with its error reported at `node`.
    private mutating func attempt<Value>(_ node: Node?, _ body: () throws -> Value) -> Value? {
        do {
            return try body()
        } catch {
            let message = (error as? ValidationError)?.message ?? "\(error)"
            if let node {
                report(node, Self.asKeys(message))
            } else {
                problems.append("\(path):1:1: \(Self.cut(message))")
            }
            return nil
        }
    }

    /// Each problem once: a bad value under `defaults:` is every source's, on one line.
    private mutating func report(_ node: Node, _ message: String) {
        let key =
            "\(Self.position(node)) "
            + message.replacingOccurrences(
                of: #"^(source '[^']*'|sources\[\d+\]): "#, with: "", options: .regularExpression)
        guard reported.insert(key).inserted else { return }
        problems.append("\(path):\(Self.position(node)): \(Self.cut(message))")
    }

    /// `LINE:COLUMN` of a node, as compilers give them.
    static func position(_ node: Node) -> String { "\(node.mark?.line ?? 1):\(node.mark?.column ?? 1)" }

    /// The message with every value longer than 80 characters cut there: a line of an
    /// error stays a line whatever the file holds.
    static func cut(_ message: String) -> String {
        message.replacingOccurrences(of: #"([^\s']{80})[^\s']+"#, with: "$1…", options: .regularExpression)
    }
}

extension ServicesConfiguration {
    /// Sources that analyse faces share the cores: each but those `except` (whose entries say
    /// how many threads their scans spread over) gets the cores divided among them, one at
    /// least. With more cameras than cores, each camera's frames keep a core busy, and a pool
    /// of threads per camera only adds switching between them.
    fileprivate mutating func shareCores(except given: Set<String>) {
        let analysingFaces = sources.indices.filter {
            sources[$0].pipeline?.detection.detectors.contains(.faces) == true
        }
        let share = max(1, FaceDetector.availableCores / max(1, analysingFaces.count))
        for index in analysingFaces where !given.contains(sources[index].id) {
            sources[index].pipeline?.detection.faces.threads = share
        }
    }
}

extension ServicesConfiguration.Bus {
    /// Metadata inputs may bind beyond loopback only where the bus was allowed to.
    var allowsRemote: Bool {
        if case .shared(_, let allowRemote, _) = self { return allowRemote }
        return false
    }
}
