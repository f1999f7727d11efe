import Foundation
import GRDB
import Logging
import SightlineBus
import SightlineCore
import Synchronization

/// Every face, code and other detector's object the console knows of, across cameras and
/// days, in SQLite (GRDB): what `/events` and `/api/events` answer from.
///
/// Two feeds fill it. The recordings' own metadata tracks are the truth: each recording's
/// appearances are its events, and the index can always be rebuilt from the files. Live
/// events from the bus fill the gap until the recording that holds them is indexed, which
/// then replaces them; a source that records nothing keeps its live events. A recording
/// that goes (retention) takes its events with it.
///
/// Thread safety: GRDB serialises writes on its own queue and runs reads beside them
/// (WAL); every method may be called from any thread.
package final class EventIndex: Sendable {
    private let database: any DatabaseWriter
    private let logger: Logger
    /// Live events waiting for the disk, and how many may: a flood from the bus is dropped
    /// (with a warning at most every 10 s), not queued without bound.
    private let pending = Atomic<Int>(0)
    private let maximumPending: Int
    private let behind: Mutex<RateLimitedLog>

    /// Opens the index at `path` (nil: in memory), making its directory if need be. A file
    /// that cannot be read as an index is replaced by a new one, with one log line: the
    /// recordings fill it again. Where no file can be made at all (a read-only directory),
    /// the index lives in memory.
    package init(path: String?, logger: Logger, maximumPending: Int = 10_000) throws {
        self.logger = logger
        self.maximumPending = maximumPending
        behind = Mutex(RateLimitedLog(logger: logger))
        guard let path else {
            database = try Self.migrated(DatabaseQueue())
            return
        }
        try? FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        do {
            database = try Self.open(path)
        } catch {
            logger.warning(
                "the event index is unreadable; rebuilding it from the recordings",
                metadata: ["path": "\(path)", "reason": "\(error)"])
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            do {
                database = try Self.open(path)
            } catch {
                logger.error(
                    "the event index cannot be kept in a file; keeping it in memory",
                    metadata: ["path": "\(path)", "reason": "\(error)"])
                database = try Self.migrated(DatabaseQueue())
            }
        }
    }

    private static func open(_ path: String) throws -> DatabasePool {
        let pool = try DatabasePool(path: path)
        // A damaged file can open; reading every page is what shows it.
        let check = try pool.read { try String.fetchOne($0, sql: "PRAGMA quick_check") }
        guard check == "ok" else { throw SightlineError.invalidArgument("quick_check: \(check ?? "no answer")") }
        return try migrated(pool)
    }

    private static func migrated<Writer: DatabaseWriter>(_ writer: Writer) throws -> Writer {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "recording") { table in
                table.primaryKey("name", .text)
                table.column("camera", .text).notNull()
                table.column("start", .double).notNull()
                table.column("duration", .double).notNull()
                table.column("size", .integer).notNull()
            }
            try db.create(table: "event") { table in
                table.autoIncrementedPrimaryKey("id")
                table.column("camera", .text).notNull()
                table.column("label", .text).notNull()
                table.column("name", .text)
                table.column("kind", .text).notNull()
                table.column("objectID", .integer).notNull()
                table.column("start", .double).notNull()
                table.column("end", .double)
                table.column("recording", .text).references("recording", onDelete: .cascade)
                table.column("t", .double)
                table.column("best", .double)
                table.column("text", .text)
                table.column("type", .text)
            }
            try db.create(index: "event_by_start", on: "event", columns: ["start"])
            try db.create(index: "event_by_camera", on: "event", columns: ["camera", "start"])
            try db.create(index: "event_by_recording", on: "event", columns: ["recording"])
            // "When was this person here?": one seek, then newest first.
            try db.execute(sql: "CREATE INDEX event_by_name ON event(name COLLATE NOCASE, start)")
        }
        try migrator.migrate(writer)
        return writer
    }

    // MARK: Recordings

    /// The size each indexed recording had when it was read.
    package func indexedRecordings() throws -> [String: UInt64] {
        try database.read { db in
            var sizes: [String: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, size FROM recording") {
                sizes[row["name"]] = row["size"]
            }
            return sizes
        }
    }

    /// Replaces what the index holds of `recording` with `events`, and drops the live events
    /// of its camera that it covers (the recording says the same, with its own boxes).
    ///
    /// An event keeps its ID when it is read again (a growing file) and when its recording
    /// replaces it as a live event: a link to it, or a page listing it, stays good. The one it
    /// was is the same object (kind and ID in the source) starting within a second of it.
    package func replace(_ recording: IndexedRecording, events: [IndexedEvent]) throws {
        try database.write { db in
            try recording.save(db)
            let during = (recording.start - 1)...(recording.start + recording.duration + 1)
            let live: SQLExpression = Column("recording") == nil && Column("camera") == recording.camera
            let covered = IndexedEvent.filter(
                Column("recording") == recording.name || (live && during.contains(Column("start"))))
            var earlier = Dictionary(grouping: try covered.fetchAll(db)) { EventKey($0) }
            try covered.deleteAll(db)
            for var event in events {
                let key = EventKey(event)
                if let index = earlier[key]?.firstIndex(where: { abs($0.start - event.start) <= 1 }) {
                    event.id = earlier[key]?.remove(at: index).id
                }
                try event.insert(db)
            }
        }
    }

    /// What an event read again must share with the one it was.
    private struct EventKey: Hashable {
        let kind: String
        let objectID: Int
        init(_ event: IndexedEvent) { (kind, objectID) = (event.kind, event.objectID) }
    }

    /// Forgets recordings that are gone, with their events.
    package func remove(recordings names: [String]) throws {
        guard !names.isEmpty else { return }
        try database.write { db in
            for name in names { _ = try IndexedRecording.deleteOne(db, key: name) }
        }
    }

    // MARK: Live events

    /// Records an event from the bus, in the order they come (writes are queued, not awaited:
    /// the bus thread never waits for the disk).
    package func record(_ event: ObjectEvent, source: String, wallTimeNs: UInt64) {
        guard pending.add(1, ordering: .relaxed).newValue <= maximumPending else {
            pending.subtract(1, ordering: .relaxed)
            behind.withLock {
                $0.warning(
                    "the event index is behind the bus: live events are dropped until it catches up", reason: "behind")
            }
            return
        }
        let time = Double(wallTimeNs) / 1e9
        let object = IndexedEvent(live: event, camera: source, time: time)
        database.asyncWrite(
            { db in
                let open = IndexedEvent.filter(
                    Column("recording") == nil && Column("camera") == source && Column("kind") == object.kind
                        && Column("objectID") == object.objectID && Column("end") == nil)
                switch event.change {
                case .enter:
                    // A source restarted counts IDs from the start again: close what it left open.
                    try open.updateAll(db, Column("end").set(to: time))
                    var object = object
                    try object.insert(db)
                case .identified:
                    try open.updateAll(db, Column("name").set(to: object.name))
                case .leave:
                    try open.updateAll(db, Column("end").set(to: time))
                }
            },
            completion: { [self] _, result in
                pending.subtract(1, ordering: .relaxed)
                if case .failure(let error) = result {
                    logger.error("the event index cannot record an event: \(error)")
                }
            })
    }

    // MARK: Queries

    /// Events matching `query`, newest first.
    package func events(matching query: EventQuery) async throws -> [IndexedEvent] {
        try await database.read { db in try query.request.fetchAll(db) }
    }

    /// How SQLite answers `query` (the benchmark prints it: the name search must seek).
    package func plan(of query: EventQuery) throws -> String {
        try database.read { db in
            let statement = try query.request.makePreparedRequest(db).statement
            return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement.sql, arguments: statement.arguments)
                .map { $0["detail"] as String? ?? "" }.joined(separator: "; ")
        }
    }

    /// The name search with no index used, every row read: the benchmark's baseline.
    package func eventsReadingEveryRow(named name: String, limit: Int) throws -> [IndexedEvent] {
        try database.read { db in
            try IndexedEvent.fetchAll(
                db,
                sql: "SELECT * FROM event NOT INDEXED WHERE name = ? COLLATE NOCASE ORDER BY start DESC LIMIT ?",
                arguments: [name, limit])
        }
    }

    /// The recordings of `camera` that overlap `after`...`before` (seconds since 1970), oldest
    /// first: a camera's history, segment by segment. At most `limit`.
    package func recordings(of camera: String, after: Double, before: Double, limit: Int) async throws
        -> [IndexedRecording]
    {
        try await database.read { db in
            try IndexedRecording.fetchAll(
                db,
                sql: """
                    SELECT * FROM recording WHERE camera = ? AND start <= ? AND start + duration >= ?
                    ORDER BY start LIMIT ?
                    """, arguments: [camera, before, after, limit])
        }
    }

    /// One event by its ID.
    package func event(id: Int64) async throws -> IndexedEvent? {
        try await database.read { db in try IndexedEvent.fetchOne(db, key: id) }
    }

    /// Adds many recordings and events at once (the benchmark's 100,000).
    package func insert(_ recordings: [IndexedRecording], _ events: [IndexedEvent]) throws {
        try database.write { db in
            for recording in recordings { try recording.save(db) }
            for var event in events { try event.insert(db) }
        }
    }

    /// The cameras and labels the index has, for the page's filters.
    package func choices() async throws -> EventChoices {
        try await database.read { db in
            EventChoices(
                cameras: try String.fetchAll(db, sql: "SELECT DISTINCT camera FROM event ORDER BY camera"),
                labels: try String.fetchAll(db, sql: "SELECT DISTINCT label FROM event ORDER BY label"),
                names: try String.fetchAll(
                    db, sql: "SELECT DISTINCT name FROM event WHERE name IS NOT NULL ORDER BY name COLLATE NOCASE"))
        }
    }
}

package struct EventChoices: Codable, Sendable {
    var cameras: [String]
    var labels: [String]
    var names: [String]
}
