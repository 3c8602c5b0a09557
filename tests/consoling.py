"""A real kg console for the tests, and a real browser to look at it (Debian's chromium driven by
Playwright): the console is started on a free loopback port and stopped by the test."""

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

# Where the screenshots of every page are kept for a person to look at (CI keeps the folder).
ARTIFACTS = Path(os.environ.get("KGRDF_TEST_ARTIFACTS", Path(__file__).parent.parent / "test-artifacts")) / "console"
CHROMIUM = ("/usr/lib/chromium/chromium", "/usr/lib/chromium-browser/chromium-browser")


class Console:
    """kg console --no-open on the knowledge base at ``kb``, in its own process."""

    def __init__(self, kb: Path, *args: str):
        env = {k: v for k, v in os.environ.items() if k != "KGRDF_HOME"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kgrdf", "console", "--no-open", "--kb", str(kb), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        self.address = self.process.stdout.readline().strip()  # the first line: the address with its token
        if not self.address.startswith("http://127.0.0.1:"):
            self.process.kill()
            pytest.fail("kg console did not start: " + self.address + self.process.stderr.read())
        self.url = self.address.split("/?token=")[0]
        self.token = self.address.split("token=")[1]
        self.cookie = self._session()

    def _session(self) -> str:
        """The session cookie the token is traded for (waiting for the server to answer)."""
        import time

        deadline = time.monotonic() + 30
        opener = urllib.request.build_opener(_NoRedirect)
        while True:
            try:
                opener.open(self.address, timeout=5)
            except urllib.error.HTTPError as exc:
                if exc.code == 303:
                    return exc.headers["set-cookie"].split(";")[0]
                raise
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("kg console did not answer: " + self.process.stderr.read())
                time.sleep(0.1)

    def request(self, path: str, method: str = "GET", data=None, headers=None, cookie: bool = True):
        """(status, headers, body) of one request, as a program (not the page) would make it."""
        request = urllib.request.Request(self.url + path, data=data, method=method)
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        if cookie:
            request.add_header("Cookie", self.cookie)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, answer.headers, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, exc.read().decode()

    def json(self, path: str) -> dict:
        status, _headers, body = self.request(path)
        assert status == 200, body
        return json.loads(body)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def chromium() -> str:
    """The system chromium's real binary (its /usr/bin script is a wrapper)."""
    for path in CHROMIUM:
        if Path(path).exists():
            return path
    found = shutil.which("chromium")
    if not found:
        pytest.fail("chromium is not installed: make system-deps installs it (Debian's chromium)")
    return found


def shot(page, name: str) -> Path:
    """A screenshot of the whole page, kept as a test artifact, once the page is seen to read as
    words: no "null" or "undefined" where a value was missing, no address where a name belongs."""
    import re

    text = page.inner_text("main")
    assert not re.search(r"\b(null|undefined|NaN)\b|\[object |http://127\.0\.0\.1", text), text
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
