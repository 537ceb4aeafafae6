"""A headless Chromium driven over the DevTools protocol, for the tests of pages fxla writes (the HTML report).

The browser runs with ``--remote-debugging-pipe``: the protocol's JSON messages, each ended by a NUL byte, go in
on its file descriptor 3 and come out on 4, so nothing listens on a port and no driver or package is needed
beyond the OS's ``chromium`` (Debian: ``apt-get install chromium``; ``.ci/run`` installs it).

    with Chromium.launch() as browser:
        page = browser.open("file:///tmp/report.html")
        page.click(".ln[data-node='fc1']")
        assert page.eval("document.querySelectorAll('.sel').length") > 1
        assert page.requests == ["file:///tmp/report.html"] and not page.errors
"""
from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Optional

#: the flags that work as root in a container with no network: no sandbox, no GPU, nothing in the background
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--mute-audio", "--window-size=1400,900")
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> Optional[str]:
    """The path of a Chromium (or Chrome) on ``PATH``, or ``None``."""
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(AssertionError):
    """The browser did not answer as expected (a protocol error, a script exception, a time-out)."""


class Chromium:
    """One headless browser process; :meth:`open` gives a :class:`Page`.  A context manager: leaving it ends the
    process and removes its profile folder."""

    def __init__(self, binary: str, timeout: float = 15.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="fxla-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the browser's end of each pipe moved above 10, then bash (dash takes one-digit descriptors only) puts
        # them on 3 and 4 and runs the browser (no preexec_fn: it would fork this multithreaded process, which
        # JAX warns of)
        reading = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
        writing = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
        for fd in (to_browser_r, from_browser_w):
            os.close(fd)
        self.log = tempfile.TemporaryFile()          # its stderr: read when it fails
        script = f'exec "$0" "$@" 3<&{reading} 4>&{writing} {reading}<&- {writing}>&-'
        self.process = subprocess.Popen(
            ["bash", "-c", script, binary, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe",
             "about:blank"], pass_fds=(reading, writing), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=self.log)
        os.close(reading)
        os.close(writing)
        self._buffer = b""
        self._next_id = 0
        self.events: List[Dict[str, Any]] = []

    @classmethod
    def launch(cls, binary: Optional[str] = None, timeout: float = 15.0) -> "Chromium":
        binary = binary or find_chromium()
        if binary is None:
            raise FileNotFoundError("no chromium on PATH")
        return cls(binary, timeout)

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def close(self) -> None:
        """Ask the browser to quit (it ends its helper processes), kill it if it does not within 5 s."""
        if self.process.poll() is None:
            try:
                os.write(self._to_browser, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
        self.process.wait(timeout=10)
        for fd in (self._to_browser, self._from_browser):
            os.close(fd)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    # -- the protocol ----------------------------------------------------------------------------------------------
    def _read_message(self, deadline: float) -> Dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._from_browser], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise BrowserError("the browser did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                self.log.seek(0)
                raise BrowserError(f"the browser exited: {self.log.read().decode(errors='replace')[-4000:]}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, session: Optional[str] = None, **params) -> Dict[str, Any]:
        """Send one command and return its result; the events that arrive meanwhile go to ``events``."""
        self._next_id += 1
        message: Dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str, timeout: Optional[float] = None) -> Dict[str, Any]:
        """The first event ``method`` of ``session`` (already received or the next to come)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            seen = len(self.events)
            self.events.append(self._read_message(deadline))

    def open(self, url: str) -> "Page":
        """A new tab showing ``url``, loaded (its ``load`` event fired), with requests and errors recorded."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable", session)
        page = Page(self, session)
        self.call("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired", session)
        return page


class Page:
    """One tab: run JavaScript, click like a user, type, and what it requested and reported."""

    def __init__(self, browser: Chromium, session: str):
        self.browser, self.session = browser, session

    def _events(self, method: str):
        return [e["params"] for e in self.browser.events
                if e.get("method") == method and e.get("sessionId") == self.session]

    @property
    def requests(self) -> List[str]:
        """The URLs the page requested (the document itself included)."""
        return [p["request"]["url"] for p in self._events("Network.requestWillBeSent")]

    @property
    def errors(self) -> List[str]:
        """Uncaught exceptions, ``console.error``/``console.assert`` calls and error log entries (a blocked load,
        a content-security-policy violation...)."""
        found = [json.dumps(p["exceptionDetails"]) for p in self._events("Runtime.exceptionThrown")]
        found += [json.dumps(p["args"]) for p in self._events("Runtime.consoleAPICalled")
                  if p["type"] in ("error", "assert")]
        found += [p["entry"]["text"] for p in self._events("Log.entryAdded") if p["entry"]["level"] == "error"]
        return found

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression (JSON-able), run in the page."""
        result = self.browser.call("Runtime.evaluate", self.session, expression=expression, returnByValue=True,
                                   awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 5.0) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"still false after {timeout} s: {expression}")
            time.sleep(0.03)

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) at the middle of the first element matching ``selector``,
        scrolled into view first."""
        box = self.eval(f"""(() => {{ const el = document.querySelector({json.dumps(selector)});
            if (!el) return null;
            el.scrollIntoView({{block: 'center', inline: 'nearest'}});
            const r = el.getBoundingClientRect();
            return [r.left + Math.min(r.width / 2, 40), r.top + r.height / 2]; }})()""")
        if box is None:
            raise BrowserError(f"nothing matches {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.browser.call("Input.dispatchMouseEvent", self.session, type=kind, x=box[0], y=box[1],
                              button="left", clickCount=1)

    def type(self, selector: str, text: str) -> None:
        """Focus ``selector`` and type ``text`` into it (as an input method would)."""
        self.eval(f"document.querySelector({json.dumps(selector)}).focus()")
        self.browser.call("Input.insertText", self.session, text=text)

    def press_enter(self) -> None:
        for kind in ("keyDown", "keyUp"):
            self.browser.call("Input.dispatchKeyEvent", self.session, type=kind, key="Enter", code="Enter",
                              windowsVirtualKeyCode=13, **({"text": "\r"} if kind == "keyDown" else {}))
