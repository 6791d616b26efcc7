"""Open a page in headless Chromium and ask it what it shows (Chrome DevTools Protocol).

Chromium is started with ``--remote-debugging-pipe``: the protocol's JSON
messages go through two pipes (file descriptors 3 and 4 of the browser), so
no port and no websocket library are needed.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any, Optional

INSTALL_HINT = ("Chromium is needed to test the HTML report: install Debian's package with "
                "`apt-get install -y chromium` (the CI script .ci/run does it), or set "
                "SDPX_CHROMIUM to a Chromium or Chrome binary.")


def find_chromium() -> Optional[str]:
    """The Chromium binary: ``$SDPX_CHROMIUM``, else ``chromium`` (``chromium-browser``)."""
    chosen = os.environ.get("SDPX_CHROMIUM")
    if chosen:
        return chosen
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """A headless Chromium with one page, driven over the DevTools pipe."""

    def __init__(self, binary: str, width: int = 1200, height: int = 1400) -> None:
        self.profile = tempfile.mkdtemp(prefix="sdpx-chromium-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def wire_pipes() -> None:  # in the child: its fd 3 reads, fd 4 writes
            read, write = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(read, 3)
            os.dup2(write, 4)

        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            preexec_fn=wire_pipes, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.session: Optional[str] = None

    def call(self, method: str, params: Optional[dict[str, Any]] = None,
             timeout: float = 60.0) -> dict[str, Any]:
        """Send one command and return its result (raises on a protocol error)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" not in self._buffer:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Chromium did not answer {method}")
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result

    def open(self, path: Path) -> None:
        """Load a local file in a new page and wait until it is fully loaded."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        url = path.resolve().as_uri()
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.evaluate("location.href + ' ' + document.readyState") == f"{url} complete":
                return
            time.sleep(0.1)
        raise TimeoutError(f"{url} did not finish loading")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self.call("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, clip: Optional[dict[str, float]] = None) -> bytes:
        """Save a PNG of the whole page, or of the part ``clip`` (``x``, ``y``, ``width``,
        ``height`` in CSS pixels of the document); return its bytes."""
        import base64

        params: dict[str, Any] = {"captureBeyondViewport": True}
        if clip is not None:
            params["clip"] = {**clip, "scale": 1}
        data = base64.b64decode(self.call("Page.captureScreenshot", params)["data"])
        path.write_bytes(data)
        return data

    def close(self) -> None:
        """Stop the browser and remove its profile."""
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(15)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


def png_pixels(data: bytes) -> tuple[int, int, list[list[tuple[int, ...]]]]:
    """Decode a PNG as Chromium writes it (8-bit RGB or RGBA, not interlaced): its width,
    height and rows of pixels (RGB). Only zlib: no imaging library is needed."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    offset, chunks, header = 8, [], b""
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        offset += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
    size = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * size
    rows: list[list[tuple[int, ...]]] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - size] if i >= size else 0
            up = previous[i]
            corner = previous[i - size] if i >= size else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                guess = left + up - corner
                near = min((abs(guess - left), 0, left), (abs(guess - up), 1, up),
                           (abs(guess - corner), 2, corner))
                line[i] = (line[i] + near[2]) & 0xFF
        rows.append([tuple(line[x * size:x * size + 3]) for x in range(width)])
        previous = line
    return width, height, rows
