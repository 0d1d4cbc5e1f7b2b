"""One headless Chromium per env server process: a loopback server for the MiniWoB pages, one tab per session.

Selenium's driver is not thread-safe, so every command runs under one lock with its tab selected first. A
browser that dies (crash, OOM kill) is noticed on the next command, replaced by a fresh one, and every tab of
the dead one is reported to its session as lost instead of hanging it.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from ...core import OpenEnvTrainError

__all__ = ["BrowserCrashed", "BrowserHost", "BrowserUnavailable", "Tab", "host"]

T = TypeVar("T")
INSTALL = "pip install 'openenv-train[browser]'"
CHROMIUM = os.environ.get("OPENENV_TRAIN_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("OPENENV_TRAIN_CHROMEDRIVER", "/usr/bin/chromedriver")
#: Tabs one browser holds at most; each MiniWoB tab costs a few MB, this keeps the browser's memory bounded.
MAX_TABS = int(os.environ.get("OPENENV_TRAIN_BROWSER_MAX_TABS", "32"))
_ARGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-dev-shm-usage", "--disable-extensions", "--mute-audio", "--window-size=500,500",
         "--renderer-process-limit=4", "--js-flags=--max-old-space-size=128",
         # over a pipe, not a port: the browser exits when chromedriver does (no orphan after a kill -9)
         "--remote-debugging-pipe")


class BrowserUnavailable(OpenEnvTrainError, RuntimeError):
    """Chromium, chromedriver or the Python packages are missing; the message says what to install."""


class BrowserCrashed(OpenEnvTrainError, RuntimeError):
    """The browser died under a session; it was restarted and the session must reset."""


def miniwob_html_dir() -> Path:
    """The ``html/`` folder the ``miniwob`` package ships (task pages under ``miniwob/``)."""
    try:
        import miniwob
    except ImportError as exc:
        raise BrowserUnavailable(f"the browser env needs the 'miniwob' package: {INSTALL}") from exc
    return Path(miniwob.__file__).parent / "html"


def _check_binaries() -> None:
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise BrowserUnavailable(
                f"{path} not found: install Debian's {package} (apt-get install -y chromium chromium-driver) "
                "or point OPENENV_TRAIN_CHROMIUM / OPENENV_TRAIN_CHROMEDRIVER at them"
            )


def _die_with_parent() -> None:
    # chromedriver gets SIGKILL when the thread that started it (and so the env server) dies; the
    # browser, on a pipe to chromedriver, then exits too
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


@dataclass(frozen=True)
class Tab:
    """A session's tab: its window handle in browser ``generation``."""

    handle: str
    generation: int


class BrowserHost:
    """The process's browser and page server, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._driver: Any = None
        self._httpd: ThreadingHTTPServer | None = None
        self._generation = 0
        self._tabs: set[str] = set()
        self.restarts = 0

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/`` of the loopback server of the MiniWoB pages."""
        if self._httpd is None:
            handler = functools.partial(_QuietHandler, directory=str(miniwob_html_dir()))
            self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
            self._httpd.daemon_threads = True
            threading.Thread(target=self._httpd.serve_forever, name="miniwob-http", daemon=True).start()
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/"

    def _start(self) -> Any:
        _check_binaries()
        try:
            from selenium import webdriver
            from selenium.webdriver.chrome.service import Service
        except ImportError as exc:
            raise BrowserUnavailable(f"the browser env needs selenium: {INSTALL}") from exc
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in _ARGS:
            options.add_argument(arg)
        service = Service(CHROMEDRIVER, popen_kw={"preexec_fn": _die_with_parent})
        driver = webdriver.Chrome(service=service, options=options)
        driver.set_page_load_timeout(30)
        driver.set_script_timeout(10)
        self._generation += 1
        self._tabs = {driver.current_window_handle}
        self._blank = driver.current_window_handle  # kept open so closing the last session tab keeps the browser
        return driver

    def browser_pid(self) -> int | None:
        """Pid of the Chromium browser process (the child of chromedriver), or None before start."""
        if self._driver is None:
            return None
        driver_pid = self._driver.service.process.pid
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                fields = stat.rsplit(")", 1)[1].split()
                if int(fields[1]) == driver_pid and "chrom" in stat.split("(", 1)[1].split(")")[0]:
                    return int(entry.name)
        return None

    def _alive(self) -> bool:
        try:
            self._driver.window_handles  # noqa: B018 - a cheap round trip to the browser
            return True
        except Exception:
            return False

    def _restart(self) -> None:
        old, self._driver = self._driver, None
        if old is not None:
            try:
                old.quit()
            except Exception:
                pass  # it is dead already; quit also stops chromedriver
        self.restarts += 1
        self._driver = self._start()

    def open_tab(self) -> Tab:
        """A new tab for a session.

        Raises:
            RuntimeError: the browser already holds MAX_TABS session tabs.
        """
        with self._lock:
            if self._driver is None:
                self._driver = self._start()
            if len(self._tabs) - 1 >= MAX_TABS:
                raise RuntimeError(
                    f"the browser holds {MAX_TABS} session tabs already: close sessions, run more env servers, "
                    "or raise OPENENV_TRAIN_BROWSER_MAX_TABS"
                )
            try:
                self._driver.switch_to.new_window("tab")
            except Exception:
                if self._alive():
                    raise
                self._restart()
                self._driver.switch_to.new_window("tab")
            handle = self._driver.current_window_handle
            self._tabs.add(handle)
            return Tab(handle, self._generation)

    def run(self, tab: Tab, fn: Callable[[Any], T]) -> T:
        """``fn(driver)`` with ``tab`` selected.

        Raises:
            BrowserCrashed: the browser died (now or before) under this tab; it has been restarted.
        """
        with self._lock:
            if self._driver is None or tab.generation != self._generation or tab.handle not in self._tabs:
                raise BrowserCrashed("the browser crashed and was restarted, so this page is gone: call reset")
            try:
                self._driver.switch_to.window(tab.handle)
                return fn(self._driver)
            except Exception:
                if self._alive():
                    raise
                self._restart()
                raise BrowserCrashed(
                    "the browser crashed during this action and was restarted, so this page is gone: call reset"
                ) from None

    def close_tab(self, tab: Tab) -> None:
        """Close ``tab`` (no-op if its browser is gone)."""
        with self._lock:
            if self._driver is None or tab.generation != self._generation or tab.handle not in self._tabs:
                return
            self._tabs.discard(tab.handle)
            try:
                self._driver.switch_to.window(tab.handle)
                self._driver.close()
                self._driver.switch_to.window(self._blank)
            except Exception:
                pass  # a dead browser is replaced on the next open_tab or run

    def shutdown(self) -> None:
        """Quit the browser and stop the page server."""
        with self._lock:
            if self._driver is not None:
                try:
                    self._driver.quit()
                except Exception:
                    pass
                self._driver = None
            if self._httpd is not None:
                self._httpd.shutdown()
                self._httpd.server_close()
                self._httpd = None


@functools.cache
def host() -> BrowserHost:
    """The process's one BrowserHost."""
    import atexit

    instance = BrowserHost()
    atexit.register(instance.shutdown)
    return instance
