"""What the tools' end-to-end tests share: counted checks, waiting for a condition, a free
port, plain HTTP without redirects, whether a console answers, and headless Chromium driven
by selenium."""
import atexit
import os
import io
import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request


class Checks:
    """Counts checks, printing each (`ok: name`, or `FAILED: name detail` on stderr)."""

    def __init__(self, what):
        self.what = what
        self.passed = self.failed = 0

    def __call__(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok: {name}")
        else:
            self.failed += 1
            print(f"{self.what}: FAILED: {name} {detail}"[:3000], file=sys.stderr)

    def summary(self):
        """Prints "N passed, M failed: what" and returns the exit status."""
        print(f"{self.passed} passed, {self.failed} failed: {self.what}")
        return 1 if self.failed else 0


def wait_for(condition, timeout=60, step=0.1, what="a condition"):
    """Polls until condition() is truthy, returning its value; a busy machine only makes it slower."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what}")
        time.sleep(step)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def http(url, headers=None, data=None):
    """(status, headers, body) of one request; a redirect is an answer, not followed."""
    request = urllib.request.Request(url, headers=headers or {}, data=data)
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def answers(url, process, name):
    """Whether `url` answers 200; `process` having exited ends the wait (its error shows)."""
    if process.poll() is not None:
        raise RuntimeError(f"{name} exited with {process.returncode}")
    try:
        return http(url)[0] == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def serving(base, process):
    """Whether the console answers."""
    return answers(base + "/health", process, "the console")


def browser():
    """Debian's chromium, headless, one CSS pixel per screen pixel, driven by chromedriver.

    Chromium is started here and chromedriver attached to it once its DevTools port answers:
    chromedriver, starting it itself, gives it 60 s to write that port, and in the vivid VM
    (an emulated CPU, Chromium read over 9p) on a loaded machine three first starts in a row
    took longer. `quit()` also ends this Chromium and removes its profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from urllib3.exceptions import ReadTimeoutError
    port, profile = free_port(), tempfile.mkdtemp(prefix="sightline-chromium-")
    process = subprocess.Popen(
        [shutil.which("chromium") or "/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
         "--window-size=1200,1100", "--disable-dev-shm-usage", "--force-device-scale-factor=1",
         "--hide-scrollbars", "--no-first-run", f"--remote-debugging-port={port}", f"--user-data-dir={profile}",
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def close():
        process.kill()
        process.wait()
        shutil.rmtree(profile, ignore_errors=True)

    atexit.register(close)
    devtools = f"http://127.0.0.1:{port}/json/version"
    wait_for(lambda: answers(devtools, process, "chromium"), timeout=900, step=0.5, what="Chromium's DevTools port")
    options = Options()
    options.debugger_address = f"127.0.0.1:{port}"
    # selenium waits 120 s for chromedriver's answer, which a loaded VM can outlast once.
    for attempt in range(3):
        try:
            driver = webdriver.Chrome(
                options=options, service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"))
            break
        except ReadTimeoutError:
            if attempt == 2:
                raise
    # Each command then waits as long as the machine takes (selenium's own bound is 120 s: a
    # first page load in the loaded VM took longer).
    driver.command_executor.client_config.timeout = 900
    quit = driver.quit

    def quit_and_close():
        try:
            quit()
        finally:
            close()
            atexit.unregister(close)

    driver.quit = quit_and_close
    return driver


def screenshot(driver):
    from PIL import Image
    return Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")


def player_at(driver, base, name, t):
    """Opens the player of recording `name` paused at `t` seconds, and waits until it shows that frame."""
    driver.get(f"{base}/recordings/{name}?t={t:.3f}")
    wait_for(lambda: driver.execute_script(
        f"const o = document.getElementById('overlay'); return o.dataset.mediaTime !== undefined && "
        f"Math.abs(Number(o.dataset.mediaTime) - {t}) < 0.05 && document.getElementById('video').readyState >= 2"),
        what="the player at ?t=")


class StandInDetector(threading.Thread):
    """A detector in another process: for each message a source publishes on `topic`
    (`faces/cam1/`, `frames/cam1/`) at `bus`, the objects `items(sent)` (`sent`: groups so far)
    as `detector`'s group timed at that message's frame, sent to the source's metadata input."""

    def __init__(self, bus, topic, metadata_in, detector, items):
        import zmq
        super().__init__(daemon=True)
        self.listen = zmq.Context.instance().socket(zmq.SUB)
        self.listen.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self.listen.connect(bus)
        self.out = zmq.Context.instance().socket(zmq.PUB)
        self.out.connect(metadata_in)
        self.source, self.detector, self.items = topic.split("/")[1], detector, items
        self.running, self.sent = True, 0

    def run(self):
        while self.running:
            if self.listen.poll(100):
                message = json.loads(self.listen.recv_multipart()[1])
                group = {"v": 1, "kind": "objects", "source": self.source, "time": message["time"],
                         "objects": {"detector": self.detector, "items": self.items(self.sent)}}
                self.out.send_multipart([f"objects/{self.source}/".encode(), json.dumps(group).encode()])
                self.sent += 1


class Broker:
    """mosquitto on 127.0.0.1:port with `extra` configuration lines; stopped and started again
    on the same port."""

    def __init__(self, work, extra=(), port=None):
        self.port = port or free_port()
        self.config = os.path.join(work, f"mosquitto-{self.port}.conf")
        with open(self.config, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\npersistence false\n")
            # Started as root, mosquitto becomes the `mosquitto` user, who cannot read our
            # private temporary directory.
            if os.getuid() == 0:
                f.write("user root\n")
            f.write("\n".join(extra) + "\n")
            if not any(line.startswith("password_file") for line in extra):
                f.write("allow_anonymous true\n")
        self.process = None
        self.start()

    def start(self):
        self.process = subprocess.Popen(["mosquitto", "-c", self.config], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        wait_for(lambda: self.listening(), what="mosquitto to listen")

    def listening(self):
        if self.process.poll() is not None:
            raise RuntimeError(f"mosquitto exited with {self.process.returncode}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
