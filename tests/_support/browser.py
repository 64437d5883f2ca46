"""A real headless Chromium (Debian's chromium + chromedriver) driven by Selenium,
and a PNG reader for checking its screenshots without an imaging library."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import tempfile
import time
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from bench._harness import free_port

from .fleet import VERIFLEET

__all__ = ["By", "ViewerProcess", "browser", "decode_png", "png_size", "wait_for"]

# Flags Chromium needs as root in a container, plus everything that would make it
# reach for the network (there is none here) or share state between tests.
_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1800",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """One headless Chromium per test module, with a fresh profile."""
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    with tempfile.TemporaryDirectory(prefix="vf-chromium-") as profile:
        for flag in (*_FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            yield driver
        finally:
            driver.quit()


def wait_for(driver: WebDriver, check: Callable[[WebDriver], Any], timeout: float = 60) -> Any:
    """Poll ``check`` until it returns something truthy (its value is returned);
    fails the test with a TimeoutException otherwise."""
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(check)


def _unfilter(kind: int, line: bytearray, prior: bytes, bpp: int) -> None:
    # PNG scanline filters (spec section 9): reverse them in place.
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = prior[i]
        corner = prior[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            p = left + up - corner
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
            pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
            line[i] = (line[i] + pred) & 0xFF


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG, from its header.

    Raises:
        ValueError: not a PNG.
    """
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Width, height and RGB pixels of an 8-bit RGB or RGBA PNG (what Chromium writes).

    Raises:
        ValueError: not a PNG, or a kind of PNG this reader does not handle.
    """
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    if depth != 8 or colour not in (2, 6) or header[12] != 0:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour})")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prior = bytes(stride)
    pixels: list[tuple[int, int, int]] = []
    for y in range(height):
        start = y * (stride + 1)
        line = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(raw[start], line, prior, bpp)
        pixels.extend((line[x], line[x + 1], line[x + 2]) for x in range(0, stride, bpp))
        prior = bytes(line)
    return width, height, pixels


class ViewerProcess:
    """``verifleet view ARGS`` started as a user would, on a free local port."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = tempfile.NamedTemporaryFile(prefix="vf-viewer-", suffix=".log")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [*VERIFLEET, "view", *args, "--port", str(self.port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "api/runs", timeout=2) as reply:
                    self.runs = json.load(reply)
                    return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"viewer did not start:\n{self.output()}") from None
                time.sleep(0.2)

    def output(self) -> str:
        """What the process printed so far."""
        with open(self.log.name, errors="replace") as handle:
            return handle.read()

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
