#!/usr/bin/python3
"""A real RTSP camera for the tests: GStreamer's RTSP server (Debian's
gir1.2-gst-rtsp-server-1.0), serving QuickTime/MP4 files in real time, each on a mount.

    /usr/bin/python3 tools/rtsp_server.py --port 8554 --mount /main=h264+aac:main.mp4 \\
        --mount /sub=h264:sub.mp4 [--user admin --password secret]

A mount is PATH=CODECS:FILE, CODECS being h264 or h265, with +aac when the file has AAC
sound. Each client gets its own pipeline, from the file's start; at the file's end the
stream ends (as a camera's would when it reboots). With --user and --password, every mount
asks for them (HTTP basic, 401 otherwise). Prints `ready PORT` once it listens. Runs under
Debian's own python3: python3-gi imports there, not in another Python on PATH.
"""
import argparse
import signal
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402

PAYLOADERS = {"h264": "h264parse ! rtph264pay", "h265": "h265parse ! rtph265pay"}


def launch(codecs, path):
    video, _, audio = codecs.partition("+")
    if video not in PAYLOADERS or audio not in ("", "aac"):
        sys.exit(f"rtsp_server: codecs '{codecs}' must be h264 or h265, with +aac or not")
    # config-interval=-1: parameter sets before every key frame, as cameras send them.
    text = (f"( filesrc location={path} ! qtdemux name=d d.video_0 ! queue ! "
            f"{PAYLOADERS[video]} name=pay0 pt=96 config-interval=-1")
    if audio:
        text += " d.audio_0 ! queue ! aacparse ! rtpmp4gpay name=pay1 pt=97"
    return text + " )"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8554)
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--mount", action="append", required=True, help="PATH=CODECS:FILE")
    parser.add_argument("--user")
    parser.add_argument("--password")
    args = parser.parse_args()
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address(args.address)
    server.set_service(str(args.port))
    mounts = server.get_mount_points()
    if args.user:
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string("media.factory.role", args.user)
        auth.add_basic(GstRtspServer.RTSPAuth.make_basic(args.user, args.password or ""), token)
        server.set_auth(auth)
    for mount in args.mount:
        path, _, spec = mount.partition("=")
        codecs, _, file = spec.partition(":")
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_launch(launch(codecs, file))
        factory.set_shared(False)
        if args.user:
            factory.add_role_from_structure(Gst.Structure.new_from_string(
                f"{args.user}, media.factory.access=(boolean)true, media.factory.construct=(boolean)true"))
        mounts.add_factory(path, factory)
    if server.attach(None) == 0:
        sys.exit(f"rtsp_server: cannot listen on {args.address}:{args.port}")
    loop = GLib.MainLoop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, sig, loop.quit)
    print(f"ready {server.get_bound_port()}", flush=True)
    loop.run()


if __name__ == "__main__":
    main()
