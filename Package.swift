// swift-tools-version:6.0
import Foundation
import PackageDescription

/// dlib's HOG code is header-only templates, so it is compiled here, in `CDlib`, with the
/// flags we choose. AVX2 is used when the build machine has it (override with
/// `SIGHTLINE_SIMD=avx2|sse2`); `FaceDetector` checks at start-up that the CPU running the
/// binary has what it was built for. No `-mfma`: contraction would change dlib's scores
/// relative to the Python binding.
let simd: String = {
    if let forced = ProcessInfo.processInfo.environment["SIGHTLINE_SIMD"] { return forced }
    let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
    return cpuinfo.contains(" avx2") ? "avx2" : "sse2"
}()
let dlibFlags = ["-O3", "-DNDEBUG"] + (simd == "avx2" ? ["-mavx2"] : [])

let package = Package(
    name: "Sightline",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "sightline", targets: ["sightline"]),
        // The library a user imports: the bus and its messages (docs/library.md). Every other
        // module shares its declarations within the package only (`package` access).
        .library(name: "SightlineBus", targets: ["SightlineBus", "SightlineCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.34.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
    ],
    targets: [
        // C libraries from Debian, through thin shims.
        // No pkgConfig: Debian's libzmq.pc adds `-isystem /usr/include/mit-krb5` (and other
        // directories zmq.h does not need), which SwiftPM refuses with a warning on every
        // build; the header is in /usr/include and the module map links -lzmq.
        .systemLibrary(name: "CZMQ", providers: [.apt(["libzmq3-dev"])]),
        .systemLibrary(
            name: "CFFmpeg", pkgConfig: "libavformat libavcodec libswscale libswresample libavutil",
            providers: [
                .apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libswresample-dev", "libavutil-dev"])
            ]),
        .systemLibrary(name: "CV4L2", pkgConfig: "libv4l2", providers: [.apt(["libv4l-dev"])]),
        .systemLibrary(name: "CAlsa", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        // libmosquitto: the MQTT output's client.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // FreeType draws the text of burned-in clips.
        .systemLibrary(name: "CFreeType", pkgConfig: "freetype2", providers: [.apt(["libfreetype-dev"])]),
        .target(
            name: "CDlib",
            exclude: ["Data"],
            // Data/ holds the detector the shim embeds (.incbin finds it on this path).
            cxxSettings: [.headerSearchPath("Data"), .unsafeFlags(dlibFlags)],
            linkerSettings: [.linkedLibrary("dlib"), .linkedLibrary("lapack"), .linkedLibrary("blas")]),
        // zxing-cpp (Debian libzxing-dev) for barcodes and QR codes, behind a C API.
        .target(name: "CZXing", cxxSettings: [.unsafeFlags(["-O2"])], linkerSettings: [.linkedLibrary("ZXing")]),

        // Layers, bottom up.
        .target(name: "SightlineCore"),
        .target(
            name: "SightlineCapture",
            dependencies: [
                "SightlineCore", "CFFmpeg", "CV4L2", "CAlsa", .product(name: "Logging", package: "swift-log"),
            ]),
        .target(
            name: "SightlineDetection",
            dependencies: ["SightlineCore", "CDlib", "CZXing", .product(name: "Logging", package: "swift-log")]),
        .target(
            name: "SightlineBus",
            dependencies: ["SightlineCore", "CZMQ", .product(name: "Logging", package: "swift-log")]),
        // QuickTime files are ours end to end: no FFmpeg here (it cannot write 'mebx').
        .target(name: "SightlineMovie", dependencies: ["SightlineCore"]),
        .target(
            name: "SightlineRecorder",
            dependencies: [
                "SightlineCore", "SightlineBus", "SightlineMovie", .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // What every HTTP server of ours shares: limits on idle and open connections, and
        // RFC 9110's byte ranges.
        .target(
            name: "SightlineHTTP",
            dependencies: [
                "SightlineCore", "SightlineCapture",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // The browser console: live view and recordings over HTTP (Hummingbird).
        .target(
            name: "SightlineConsole",
            dependencies: [
                "SightlineCore", "SightlineBus", "SightlineMovie", "SightlineCapture", "SightlineExport",
                "SightlineHTTP", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Pages")]),
        // Clips of recordings: trimmed with their metadata, or with the boxes burned in.
        .target(
            name: "SightlineExport",
            dependencies: ["SightlineCore", "SightlineMovie", "SightlineCapture", "CFreeType"]),
        .target(name: "SightlineSamples", resources: [.copy("Media")]),
        .target(
            name: "SightlineTesting",
            dependencies: ["SightlineBus", "SightlineMovie", "SightlineCapture", "SightlineSamples"]),
        .target(
            name: "SightlinePipeline",
            dependencies: [
                "SightlineCore", "SightlineCapture", "SightlineDetection", "SightlineBus", "SightlineMovie",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // Events, counts, people and statuses on an MQTT broker, as Frigate's (Home Assistant).
        // The recorder's module lends it the thread a blocking loop runs on.
        .target(
            name: "SightlineMQTT",
            dependencies: [
                "SightlineCore", "SightlineBus", "SightlineMovie", "SightlineRecorder", "CMosquitto",
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        // What runs: sources, recorders and retention as one service group, with Prometheus
        // metrics and health over HTTP; every command that runs sources builds on it.
        .target(
            name: "SightlineService",
            dependencies: [
                "SightlineCore", "SightlineBus", "SightlineCapture", "SightlinePipeline", "SightlineRecorder", "SightlineHTTP",
                "SightlineMQTT", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .executableTarget(
            name: "sightline",
            dependencies: [
                "SightlinePipeline", "SightlineSamples", "SightlineMovie", "SightlineCapture", "SightlineRecorder",
                "SightlineConsole", "SightlineExport", "SightlineService", "SightlineHTTP", "SightlineMQTT",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),

        .testTarget(name: "SightlineCoreTests", dependencies: ["SightlineCore"]),
        .testTarget(
            name: "SightlineCaptureTests",
            dependencies: ["SightlineCapture", "SightlineSamples", "SightlineTesting", "CV4L2"]),
        .testTarget(
            name: "SightlineDetectionTests",
            dependencies: ["SightlineDetection", "SightlineCapture", "SightlineSamples", "SightlineTesting"],
            resources: [.copy("Golden"), .copy("Barcodes"), .copy("Faces")]),
        .testTarget(
            name: "SightlineBusTests", dependencies: ["SightlineBus", "SightlineTesting"], exclude: ["Corpus"]),
        .testTarget(
            name: "SightlineMovieTests",
            dependencies: ["SightlineMovie", "SightlineCapture", "SightlineSamples", "SightlineTesting"],
            exclude: ["Corpus", "Fixtures"]),
        .testTarget(
            name: "SightlineConsoleTests",
            dependencies: [
                "SightlineConsole", "SightlineMovie", "SightlineCore", "SightlineCapture", "SightlineSamples",
                "SightlineTesting", "SightlineBus", "SightlineHTTP",
            ]),
        .testTarget(
            name: "SightlineExportTests",
            dependencies: [
                "SightlineExport", "SightlineMovie", "SightlineCore", "SightlineTesting", "SightlineSamples",
            ]),
        .testTarget(
            name: "SightlineEndToEndTests",
            dependencies: [
                "SightlinePipeline", "SightlineBus", "SightlineSamples", "SightlineTesting", "SightlineRecorder",
                "SightlineMovie", "SightlineCapture", "SightlineService", "CZMQ",
            ]),
        // The command line's own parsing (serve's configuration file), in process.
        .testTarget(
            name: "SightlineCommandTests",
            dependencies: [
                "sightline", "SightlineSamples", "SightlineTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // The recorder's decisions as values: no disk, no bus.
        .testTarget(
            name: "SightlineRecorderTests", dependencies: ["SightlineRecorder", "SightlineMovie", "SightlineCore"]),
        .testTarget(name: "SightlineMQTTTests", dependencies: ["SightlineMQTT", "SightlineCore", "SightlineTesting"]),
        .testTarget(
            name: "SightlineServiceTests",
            dependencies: [
                "SightlineService", "SightlineRecorder", "SightlineMovie", "SightlineCore", "SightlineTesting",
                .product(name: "Logging", package: "swift-log"),
            ]),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
