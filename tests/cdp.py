"""A real headless Chromium driven over the DevTools protocol through a pipe (--remote-debugging-pipe: the
browser reads commands on fd 3 and writes answers on fd 4, NUL-terminated JSON), so tests can press real keys
(Input.dispatchKeyEvent), reload a page and read its DOM without any extra package or network port."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
KEYS = {"ArrowDown": 40, "ArrowUp": 38, "ArrowRight": 39, "ArrowLeft": 37, "Enter": 13}


def chromium_binary() -> str | None:
    return os.environ.get("HARNESS_CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)


class Browser:
    def __init__(self, binary: str, profile: str, home: str):
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire() -> None:  # in the child, before exec: the pipe ends become fds 3 and 4
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}",
                 "--remote-debugging-pipe", "about:blank"]
        # close_fds=False: the dup2'ed fds 3 and 4 are inheritable and survive exec; every other descriptor of this
        # process is close-on-exec (Python's default), so nothing else leaks into the browser
        self.proc = subprocess.Popen([binary, *flags], preexec_fn=wire, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env={**os.environ, "HOME": home}, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._next = 0
        self._buffer = b""
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def _read(self, timeout: float) -> dict[str, Any]:
        import select

        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise EOFError("Chromium closed the pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True,
             timeout: float = 30.0) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_child, json.dumps(message).encode("utf-8") + b"\0")
        while True:
            doc = self._read(timeout)
            if doc.get("id") == self._next:
                if "error" in doc:
                    raise RuntimeError(f"{method}: {doc['error']}")
                return doc.get("result", {})
            self.events.append(doc)

    def open(self, url: str) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except RuntimeError:
                value = None
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"never true: {expression}")

    def press(self, key: str) -> None:
        """A real key press: keyDown (with its text for a printable key) then keyUp."""
        printable = len(key) == 1
        code = KEYS.get(key, ord(key.upper()) if printable else 0)
        base = {"key": key, "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code,
                "code": f"Digit{key}" if key.isdigit() else f"Key{key.upper()}" if printable else key}
        self.send("Input.dispatchKeyEvent", {"type": "keyDown", **base, **({"text": key} if printable else {})})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **base})

    def reload(self) -> None:
        self.send("Page.reload", {"ignoreCache": True})

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False, timeout=5.0)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)
