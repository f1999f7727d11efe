import ArgumentParser
import Foundation
import SightlineBus
import SightlineCore

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Subscribe and print one JSON object per line.",
        discussion: """
            Examples:
              sightline events
              sightline events --kind events --source-id cam1
              sightline events --connect tcp://127.0.0.1:5560 --count 10
            """)

    @Option(help: "Endpoint to connect to; repeat for several.")
    var connect: [String] = [Endpoint.defaultPublish.string]

    @Option(
        help: ArgumentHelp(
            "Kinds to print, comma-separated: \(MessageKind.allCases.map(\.rawValue).joined(separator: ", ")). Default: \(MessageKind.analytics.map(\.rawValue).joined(separator: ", ")).",
            valueName: "kinds"))
    var kind: String?

    @Option(help: "Only this source.")
    var sourceID: String?

    @Option(help: "Exit after this many messages.")
    var count: Int?

    @Option(help: "Exit after this many seconds without a message.")
    var idleTimeout: Double?

    @Flag(help: "Exit when the source publishes its final status (stopped or failed).")
    var untilStopped = false

    @OptionGroup var keys: ClientKeyOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = global.makeLogger()
        let kinds = try parseKinds()
        if let sourceID, !SourceID.isValid(sourceID) {
            throw ValidationError("--source-id '\(sourceID)' must be 1-64 letters, digits, '.', '_' or '-'")
        }
        let idleLimit = try idleTimeout.map { try OptionValues.duration($0, option: "--idle-timeout") }
        if let count { _ = try OptionValues.integer(count, option: "--count", in: 1...Int.max) }
        let endpoints = try connect.map(Endpoint.init)
        let subscriber = try Subscriber(
            endpoints: endpoints, topics: Subscriber.topics(kinds: subscribedKinds(kinds), source: sourceID),
            curve: try keys.client())
        subscriber.logRejections(to: logger)
        var printed = 0
        var idleSince = ContinuousClock.now
        var firstMessage = WaitNotice()  // nothing may ever come: said, not waited in silence
        while count.map({ printed < $0 }) ?? true {
            // Until a message, the idle limit runs out, or the next notice is due.
            let idleEnd = idleLimit.map { idleSince + $0 } ?? idleSince + .seconds(3600)
            let wake = firstMessage.due.map { min($0, idleEnd) } ?? idleEnd
            guard let received = try subscriber.receive(timeout: max(wake - ContinuousClock.now, .zero)) else {
                if let idleLimit, ContinuousClock.now - idleSince >= idleLimit { break }
                if let seconds = firstMessage.secondsIfDue() {
                    logger.notice(
                        "waiting for messages: nothing yet after \(seconds) s (is a source publishing there? with keys, are they the right ones?)",
                        metadata: ["connect": "\(connect.joined(separator: ","))"])
                }
                continue
            }
            firstMessage.end()
            idleSince = .now
            let statusOnly = !kinds.isEmpty && !kinds.contains(.status) && received.message.kind == .status
            if !statusOnly {
                guard printLine(received.json) else { break }  // the reader went away (`| head`)
                printed += 1
            }
            if untilStopped, let state = received.message.status?.state, state == .stopped || state == .failed { break }
        }
    }

    /// --until-stopped needs the status messages even when they are not printed.
    private func subscribedKinds(_ kinds: [MessageKind]) -> [MessageKind] {
        if kinds.isEmpty { return MessageKind.analytics }
        return untilStopped && !kinds.contains(.status) ? kinds + [.status] : kinds
    }

    private func parseKinds() throws -> [MessageKind] {
        guard let kind else { return [] }
        return try kind.split(separator: ",").map {
            guard let parsed = MessageKind(rawValue: $0.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError(
                    "unknown --kind '\($0)'; expected \(MessageKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return parsed
        }
    }
}
