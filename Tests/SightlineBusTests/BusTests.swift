import Foundation
import Logging
import SightlineBus
import SightlineCore
import SightlineTesting
import Testing

let logger = Logger(label: "test")

func statusMessage(_ source: String) -> Message {
    Message(kind: .status, source: source, time: nil, wallTimeNs: 1, status: SourceStatus(state: .started))
}

@Suite struct BusTests {
    @Test(arguments: ["inproc://bus-test", "tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())"])
    func subscriberReceivesWhatIsPublished(endpoint: String) async throws {
        let publisher = try Publisher(endpoint: try Endpoint(endpoint), logger: logger)
        let subscriber = try Subscriber(endpoints: [try Endpoint(endpoint)], topics: ["status/cam1/"])
        #expect(await publisher.waitForSubscriber(timeout: .seconds(20)))
        for _ in 0..<3 { publisher.publish(statusMessage("cam1")) }
        publisher.publish(statusMessage("cam10"))  // must not match "status/cam1/"
        await publisher.flush()
        let received = try subscriber.collect(count: 3)
        #expect(received.allSatisfy { $0.topic == "status/cam1/" })
        #expect(received.map(\.message.seq) == [0, 1, 2])
        #expect(publisher.totals.messages == 4)
    }

    @Test func sequenceNumbersArePerTopic() async throws {
        let publisher = try Publisher(endpoint: try Endpoint("inproc://seq-test"), logger: logger)
        let subscriber = try Subscriber(endpoints: [try Endpoint("inproc://seq-test")], topics: ["status/"])
        #expect(await publisher.waitForSubscriber(timeout: .seconds(20)))
        for source in ["a", "b", "a"] { publisher.publish(statusMessage(source)) }
        let received = try subscriber.collect(count: 3).map { "\($0.message.source)\($0.message.seq)" }
        #expect(received == ["a0", "b0", "a1"])
    }

    /// A receive waiting on a quiet bus ends when its wake-up is signalled from another
    /// thread, long before its timeout, and every later one returns at once; a message
    /// already there is still received first.
    @Test func aWakeUpEndsAWaitingReceive() async throws {
        let publisher = try Publisher(endpoint: try Endpoint("inproc://wake-test"), logger: logger)
        let subscriber = try Subscriber(endpoints: [try Endpoint("inproc://wake-test")], topics: ["status/"])
        #expect(await publisher.waitForSubscriber(timeout: .seconds(20)))
        let wakeUp = try WakeUp()
        publisher.publish(statusMessage("a"))
        await publisher.flush()
        let first = try subscriber.receive(timeout: .seconds(20), wakingOn: wakeUp)
        #expect(first?.message.source == "a")
        let timeout = Duration.seconds(120)
        let waited = try await onAThreadOfItsOwn {
            let started = ContinuousClock.now
            // From another thread, before or while this receive waits: either way it ends.
            Thread.detachNewThread { wakeUp.signal() }
            let received = try subscriber.receive(timeout: timeout, wakingOn: wakeUp)
            return (received == nil, ContinuousClock.now - started)
        }
        #expect(waited.0)
        #expect(waited.1 < timeout)
        let again = ContinuousClock.now
        #expect(try subscriber.receive(timeout: timeout, wakingOn: wakeUp) == nil)
        #expect(ContinuousClock.now - again < timeout)
    }

    @Test func refusesBusyInvalidAndExposedEndpoints() throws {
        let port = Endpoint.freeLoopbackPort()
        let first = try Publisher(endpoint: try Endpoint("tcp://127.0.0.1:\(port)"), logger: logger)
        #expect(throws: SightlineError.endpointInUse("tcp://127.0.0.1:\(port)")) {
            try Publisher(endpoint: try Endpoint("tcp://127.0.0.1:\(port)"), logger: logger)
        }
        _ = first
        #expect(throws: SightlineError.self) { try Endpoint("udp://1.2.3.4:5") }
        #expect(throws: SightlineError.self) { try Endpoint("tcp://127.0.0.1") }
        #expect(throws: SightlineError.self) { try Endpoint("tcp://127.0.0.1:70000") }
        #expect(throws: SightlineError.self) {
            try Publisher(endpoint: try Endpoint("tcp://0.0.0.0:\(port + 1)"), logger: logger)
        }
        #expect(try Endpoint("tcp://127.0.0.1:5").isLocalOnly)
        #expect(try !Endpoint("tcp://*:5").isLocalOnly)
    }

    @Test func rejectsMalformedMessages() throws {
        let good = Array(try JSONEncoder().encode(statusMessage("cam1")))
        #expect((try? Subscriber.decode([Array("status/cam1/".utf8), good]).get()) != nil)
        func reason(_ frames: [[UInt8]]) -> MessageDecodingError? {
            if case .failure(let error) = Subscriber.decode(frames) { return error }
            return nil
        }
        #expect(reason([Array("status/cam1/".utf8)]) == .wrongFrameCount(1))
        #expect(reason([Array("status/cam2/".utf8), good]) == .topicMismatch)
        #expect(
            reason([Array("status/cam1/".utf8), Array("{not json".utf8)])
                == .notJSON)
        #expect(reason([Array("status/cam1/".utf8), Array(#"{"v":99}"#.utf8)]) == .unsupportedVersion(99))
        #expect(
            reason([Array("status/cam1/".utf8), Array(#"{"v":1,"kind":"status"}"#.utf8)])
                == .badFields(.status))
        #expect(reason([[0xff, 0xfe], good]) == .unknownTopic)
        #expect(reason([]) == .oversized)
    }
}
