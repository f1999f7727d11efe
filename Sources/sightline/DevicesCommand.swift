import ArgumentParser
import Foundation
import SightlineCapture

struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract:
            "List the V4L2 cameras (formats, sizes, frame rates and controls) and the ALSA microphones, or watch them come and go.",
        discussion: """
            A microphone's name is what --audio-device takes. A control's name (v4l2-ctl's, or \
            AVFoundation's in brackets) is what run --control and serve's controls: take.

            Examples:
              sightline devices
              sightline devices --json | jq '.cameras[0].controls[] | {name, value}'
              sightline devices --json | jq -r '.microphones[].name'
              sightline devices --watch --json
            """)

    @Flag(help: "Print JSON for scripts (with --watch: one line a change).")
    var json = false

    @Flag(help: "Print cameras and microphones as they are connected and disconnected, until interrupted.")
    var watch = false

    struct Listing: Encodable {
        var cameras: [V4L2Device]
        var microphones: [AudioCaptureDevice]
    }

    func run() throws {
        if watch { return try watchDevices() }
        let devices = V4L2Device.list()
        let microphones = Microphone.captureDevices()
        if json {
            print(try jsonLine(Listing(cameras: devices, microphones: microphones)))
            return
        }
        if devices.isEmpty { print("no V4L2 capture device found (/dev/video*)") }
        for device in devices {
            print("\(device.path): \(device.card) (driver \(device.driver), bus \(device.bus))")
            for format in device.formats {
                let readable = format.pixelFormat.isSupported ? "" : "  [not supported by sightline]"
                print("  \(format.pixelFormat) (\(format.description))\(readable)")
                if let range = format.sizeRange { print("    sizes \(range)") }
                for size in format.sizes {
                    let rates = size.frameRates.map {
                        $0 == $0.rounded() ? String(Int($0)) : String(format: "%.2f", $0)
                    }
                    print("    \(size.width)x\(size.height)  \(rates.joined(separator: ", ")) fps")
                }
            }
            if !device.controls.isEmpty { print("  controls:") }
            for control in device.controls { print("    \(control.summary)") }
        }
        if microphones.isEmpty { print("no ALSA capture device found") }
        for microphone in microphones {
            print(
                "\(microphone.name): \(microphone.card): \(microphone.description) (microphone, --audio-device \(microphone.name))"
            )
        }
    }

    /// One line a change, from the kernel's uevents, flushed at once for pipes.
    private func watchDevices() throws {
        let events = try DeviceEvents()
        if !json { line("watching for cameras and microphones (Ctrl-C ends)") }
        while let event = events.next() { line(json ? try jsonLine(event) : "\(event)") }
    }

    /// Written at once, for a pipe that reads changes as they come.
    private func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    private func jsonLine(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
