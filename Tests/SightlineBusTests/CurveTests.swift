import Foundation
import Logging
import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineBus

/// CURVE over real tcp: a subscriber with an allowed key gets everything, one with an
/// unknown key or none gets nothing.
@Suite struct CurveTests {
    @Test func onlyAllowedKeysReceive() async throws {
        let server = try CurveKeyPair.generate()
        let allowed = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let endpoint = try Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())")
        let publisher = try Publisher(
            endpoint: endpoint, curve: CurveServer(keyPair: server, allowedClients: [allowed.publicKey]), logger: logger
        )
        // Another server in the same process, with the same key, that does allow the
        // stranger: its allow-list must not open the first one.
        let other = try Publisher(
            endpoint: Endpoint("tcp://127.0.0.1:\(Endpoint.freeLoopbackPort())"),
            curve: CurveServer(keyPair: server, allowedClients: [stranger.publicKey]), logger: logger)
        defer { withExtendedLifetime(other) {} }
        let topics = Subscriber.topics(kinds: [.status], source: "cam1")
        let friend = try Subscriber(
            endpoints: [endpoint], topics: topics,
            curve: CurveClient(keyPair: allowed, serverPublicKey: server.publicKey))
        let intruder = try Subscriber(
            endpoints: [endpoint], topics: topics,
            curve: CurveClient(keyPair: stranger, serverPublicKey: server.publicKey))
        let plain = try Subscriber(endpoints: [endpoint], topics: topics)
        #expect(await publisher.waitForSubscriber(timeout: .seconds(20)))
        #expect(try await turnedAway(stranger))
        for _ in 0..<50 { publisher.publish(statusMessage("cam1")) }
        await publisher.flush()

        #expect(try friend.collect(count: 50).map(\.message.seq) == Array(0..<50))
        #expect(try intruder.receive(timeout: .milliseconds(300)) == nil)
        #expect(try plain.receive(timeout: .milliseconds(300)) == nil)
    }

    @Test func keyFilesRoundTrip() throws {
        let directory = try TemporaryDirectory("keys")
        let pair = try CurveKeyPair.generate()
        try pair.write(to: directory.path, name: "server")
        #expect(try CurveKeyPair(contentsOf: directory.file("server.key")) == pair)
        #expect(try CurveKeyPair.publicKey(contentsOf: directory.file("server.pub")) == pair.publicKey)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory.file("server.key"))
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try CurveServer.allowList(from: directory.path) == [pair.publicKey])
        #expect(throws: SightlineError.self) { try CurveKeyPair(contentsOf: directory.file("server.pub")) }
    }

    @Test func aNetworkBindNeedsKeysOrInsecure() throws {
        let port = Endpoint.freeLoopbackPort()
        #expect(throws: SightlineError.self) {
            try Publisher(endpoint: try Endpoint("tcp://0.0.0.0:\(port)"), logger: logger)
        }
        let server = try CurveKeyPair.generate()
        _ = try Publisher(
            endpoint: try Endpoint("tcp://0.0.0.0:\(port)"), curve: CurveServer(keyPair: server, allowedClients: []),
            logger: logger)
    }
}

/// Waits until a handshake with `client`'s key has been refused (up to 20 s), so that a
/// check that it received nothing means something.
func turnedAway(_ client: CurveKeyPair) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(20)
    while ZAPHandler.shared.refusals(of: client.publicKey) == 0 {
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: .milliseconds(20))
    }
    return true
}
