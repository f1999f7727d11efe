import Foundation
import Logging
import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineBus

/// Two sources and two subscribers meeting at one broker over tcp loopback.
@Suite struct BrokerTests {
    @Test func fansInAndOut() async throws {
        let frontend = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        let backend = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        let broker = try Broker(frontend: frontend, backend: backend)
        try broker.start()
        defer { broker.stop() }
        let cameras = try ["cam1", "cam2"].map { _ in
            try Publisher(endpoint: frontend, connectsToBroker: true, logger: logger)
        }
        let everything = try Subscriber(endpoints: [backend], topics: Subscriber.topics(kinds: [.status], source: nil))
        let onlyCam2 = try Subscriber(endpoints: [backend], topics: Subscriber.topics(kinds: [.status], source: "cam2"))
        // Subscriptions travel through the broker up to each publisher: both reach both.
        for camera in cameras {
            for prefix in ["status/", "status/cam2/"] {
                #expect(await camera.waitForSubscription(to: prefix, timeout: .seconds(20)))
            }
        }
        for (camera, source) in zip(cameras, ["cam1", "cam2"]) {
            for _ in 0..<20 { camera.publish(statusMessage(source)) }
            await camera.flush()
        }
        let all = Dictionary(grouping: try everything.collect(count: 40), by: \.message.source)
            .mapValues { $0.map(\.message.seq) }
        let cam2 = try onlyCam2.collect(count: 20).map(\.message.source)
        #expect(all == ["cam1": Array(0..<20), "cam2": Array(0..<20)])
        #expect(cam2 == Array(repeating: "cam2", count: 20))
    }

    @Test func bindsLoopbackUnlessTold() throws {
        #expect(throws: SightlineError.self) {
            try Broker(
                frontend: try Endpoint("tcp://0.0.0.0:\(Endpoint.freeLoopbackPort())"),
                backend: try Endpoint("inproc://b"))
        }
    }
}

/// A broker with CURVE keys: allowed sources and subscribers meet; a stranger on either
/// side gets nothing through.
@Suite struct SecureBrokerTests {
    @Test func onlyAllowedKeysPassTheBroker() async throws {
        let (brokerKey, source, viewer) = try (
            CurveKeyPair.generate(), CurveKeyPair.generate(), CurveKeyPair.generate()
        )
        let (strangeSourceKey, strangeViewerKey) = try (CurveKeyPair.generate(), CurveKeyPair.generate())
        let frontend = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        let backend = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        let broker = try Broker(
            frontend: frontend, backend: backend,
            curve: CurveServer(keyPair: brokerKey, allowedClients: [source.publicKey, viewer.publicKey]))
        try broker.start()
        defer { broker.stop() }
        let client = { (pair: CurveKeyPair) in CurveClient(keyPair: pair, serverPublicKey: brokerKey.publicKey) }
        let allowedSource = try Publisher(
            endpoint: frontend, connectsToBroker: true, brokerCurve: client(source), logger: logger)
        let strangeSource = try Publisher(
            endpoint: frontend, connectsToBroker: true, brokerCurve: client(strangeSourceKey), logger: logger)
        let topics = Subscriber.topics(kinds: [.status], source: nil)
        let allowedViewer = try Subscriber(endpoints: [backend], topics: topics, curve: client(viewer))
        let strangeViewer = try Subscriber(endpoints: [backend], topics: topics, curve: client(strangeViewerKey))
        let keylessViewer = try Subscriber(endpoints: [backend], topics: topics)
        #expect(await allowedSource.waitForSubscriber(timeout: .seconds(20)))
        #expect(try await turnedAway(strangeSourceKey))
        #expect(try await turnedAway(strangeViewerKey))
        for _ in 0..<20 {
            allowedSource.publish(statusMessage("cam1"))
            strangeSource.publish(statusMessage("cam2"))
        }
        await allowedSource.flush()
        await strangeSource.flush()
        let received = try allowedViewer.collect(count: 20)
        #expect(received.map(\.message.source) == Array(repeating: "cam1", count: 20))
        #expect(try strangeViewer.receive(timeout: .milliseconds(300)) == nil)
        #expect(try keylessViewer.receive(timeout: .milliseconds(300)) == nil)
    }
}
