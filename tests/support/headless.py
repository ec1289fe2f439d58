"""A minimal headless Chromium driver over the DevTools protocol on a pipe (stdlib only).

Chromium's `--remote-debugging-pipe` reads NUL-terminated JSON commands on fd 3 and writes
replies and events on fd 4: no port is opened, no driver binary or pip package is needed.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
)


def find_chromium() -> str | None:
    """The Debian chromium binary, or None when it is not installed."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def require_chromium() -> str:
    """The chromium binary. Without one a test is skipped on a developer's machine, but fails
    under CI (CI=true, as .ci/run and CI services set it): CI must never pass without the
    browser tests having run."""
    import pytest

    path = find_chromium()
    if path is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("chromium is not installed: the HTML report's browser tests cannot run under CI")
        pytest.skip("chromium is not installed")
    return path


class CDPError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page; `with Browser() as b: b.open(url)`."""

    def __init__(
        self,
        binary: str | None = None,
        *,
        width: int = 1400,
        height: int = 1000,
        timeout: float = 60.0,
    ) -> None:
        self.binary = binary or find_chromium()
        if not self.binary:
            raise FileNotFoundError("chromium is not installed (apt-get install chromium)")
        self.width, self.height, self.timeout = width, height, timeout
        self.events: list[dict] = []
        self._replies: dict[int, dict] = {}
        self._cond = threading.Condition()
        self._next_id = 0
        self._closed = False
        self.session: str | None = None

    # -- process and pipe ---------------------------------------------------------------

    def __enter__(self) -> Browser:  # noqa: PYI034 (typing.Self needs 3.11)
        self.profile = tempfile.mkdtemp(prefix="replayci-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()

        def wire_fds() -> None:  # runs in the child: commands on fd 3, replies on fd 4
            a, b = os.dup(cmd_r), os.dup(res_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [
            self.binary,
            *FLAGS,
            f"--user-data-dir={self.profile}",
            "--remote-debugging-pipe",
            f"--window-size={self.width},{self.height}",
            "about:blank",
        ]
        self._log = open(os.path.join(self.profile, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            close_fds=False,
            preexec_fn=wire_fds,  # noqa: PLW1509 (it only calls dup2, before any thread runs here)
        )
        os.close(cmd_r)
        os.close(res_w)
        threading.Thread(target=self._read, daemon=True).start()
        self._attach()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.proc.poll() is None:
                self.call("Browser.close", timeout=10)
        except (CDPError, OSError, TimeoutError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._cmd_w, self._res_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._res_r, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._cond:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._replies[message["id"]] = message
                    else:
                        self.events.append(message)
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- protocol -------------------------------------------------------------------------

    def call(
        self,
        method: str,
        params: dict | None = None,
        *,
        page: bool = False,
        timeout: float | None = None,
    ) -> dict:
        """Send one command and wait for its reply; page=True sends it to the page's session."""
        with self._cond:
            self._next_id += 1
            ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if page:
            message["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while ident not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise TimeoutError(f"no reply to {method}")
                self._cond.wait(left)
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def _attach(self) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", page=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
            page=True,
        )

    def wait_event(self, method: str, *, since: int = 0, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while True:
                for event in self.events[since:]:
                    if event.get("method") == method:
                        return event
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise TimeoutError(f"no {method} event")
                self._cond.wait(left)

    # -- page helpers ---------------------------------------------------------------------

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        with self._cond:
            mark = len(self.events)
        self.call("Page.navigate", {"url": url}, page=True)
        self.wait_event("Page.loadEventFired", since=mark)

    def eval(self, expression: str, *, await_promise: bool = True) -> Any:
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": await_promise},
            page=True,
        )
        if "exceptionDetails" in result:
            raise CDPError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def insert_text(self, text: str) -> None:
        """Type into the focused element (fires input events like a keyboard would)."""
        self.call("Input.insertText", {"text": text}, page=True)

    def screenshot(self, path: str, *, full_page: bool = False) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", params, page=True)["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors seen so far."""
        out = []
        with self._cond:
            events = list(self.events)
        for event in events:
            method, params = event.get("method"), event.get("params") or {}
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(
                    " ".join(
                        str(a.get("value", a.get("description"))) for a in params.get("args", [])
                    )
                )
            elif method == "Runtime.exceptionThrown":
                out.append(str(params.get("exceptionDetails")))
            elif method == "Log.entryAdded" and (params.get("entry") or {}).get("level") == "error":
                out.append(str(params["entry"].get("text")))
        return out

    def requested_urls(self) -> list[str]:
        """Every URL the page asked the network stack for."""
        with self._cond:
            return [
                e["params"]["request"]["url"]
                for e in self.events
                if e.get("method") == "Network.requestWillBeSent"
            ]
