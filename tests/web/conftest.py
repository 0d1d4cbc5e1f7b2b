"""Fixtures of the web tests: trace runs on disk, a real ``serve --web`` subprocess, headless Chromium."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests import _system_parts

HERE = Path(__file__).parent
CHROMIUM = os.environ.get("OPENENV_TRAIN_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("OPENENV_TRAIN_CHROMEDRIVER", "/usr/bin/chromedriver")


def _load(name: str) -> ModuleType:
    # by path: a `tests` package in site-packages shadows this folder as `tests.web`
    spec = importlib.util.spec_from_file_location(f"_web_tests_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def runs() -> ModuleType:
    """The run builders of ``_runs.py``."""
    return _load("_runs")


@pytest.fixture
def run_dir(tmp_path: Path, runs: ModuleType) -> Path:
    """A run dir with 12 episodes in 3 shards and a metrics.jsonl."""
    path = tmp_path / "run"
    runs.write_run(path)
    return path


def _missing_browser() -> str | None:
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} not found: install Debian's {package} package (apt-get install -y chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by Selenium; skips without it unless OPENENV_TRAIN_REQUIRE_BROWSER=1."""
    missing = _missing_browser()
    if missing:
        _system_parts.skip_or_fail("browser", missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _start(argv: list[str], ready: Path, log: Path, what: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while not ready.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"{what} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _serve_web(env: str, tmp: Path) -> Iterator[str]:
    """``openenv-train serve ENV --web`` on a free port in a subprocess; yields its URL."""
    ready = tmp / f"{env}.url"
    process = _start([sys.executable, "-m", "openenv_train.cli", "serve", env, "--web", "--port", "0",
                      "--ready-file", str(ready)], ready, tmp / f"{env}.log", f"serve {env} --web")
    try:
        yield ready.read_text().strip()
    finally:
        _stop(process)


def _view(run_dir: Path, tmp_path: Path) -> Iterator[str]:
    """``openenv-train view RUN --port 0`` in a subprocess; yields its URL (read from its start-up line)."""
    log = tmp_path / f"view-{run_dir.name}.log"
    process = subprocess.Popen([sys.executable, "-m", "openenv_train.cli", "view", str(run_dir), "--port", "0"],
                               stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    deadline = time.monotonic() + 30
    url = None
    while url is None:
        text = log.read_text()
        if " at http://" in text:
            url = text.rsplit(" at ", 1)[1].split()[0].rstrip("/")
        elif process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"openenv-train view did not start: {text[-2000:]}")
        else:
            time.sleep(0.05)
    try:
        yield url
    finally:
        _stop(process)


@pytest.fixture
def viewer_url(tmp_path: Path, run_dir: Path) -> Iterator[str]:
    """The viewer of :func:`run_dir`; yields its URL."""
    yield from _view(run_dir, tmp_path)


@pytest.fixture
def branched_viewer_url(tmp_path: Path, runs: ModuleType) -> Iterator[str]:
    """The viewer of a run of one agent episode whose calls branch (``_runs.BRANCHED_CALLS``)."""
    runs.write_branched_run(tmp_path / "agent-run")
    yield from _view(tmp_path / "agent-run", tmp_path)


@pytest.fixture
def wordle_web(tmp_path: Path) -> Iterator[str]:
    """URL of a real ``openenv-train serve wordle --web`` subprocess."""
    yield from _serve_web("wordle", tmp_path)


@pytest.fixture
def echo_web(tmp_path: Path) -> Iterator[str]:
    """URL of a real ``openenv-train serve echo --web`` subprocess (an MCP env)."""
    yield from _serve_web("echo", tmp_path)


@pytest.fixture
def atari_web(tmp_path: Path) -> Iterator[str]:
    """URL of a real ``openenv-train serve atari --web`` subprocess (skips without the [atari] extra)."""
    pytest.importorskip("ale_py", reason="ale-py is not installed (pip install 'openenv-train[atari]')")
    yield from _serve_web("atari", tmp_path)


@pytest.fixture
def screenshot(tmp_path: Path) -> Any:
    """``screenshot(driver, name)``: save a PNG of the page under the test's tmp dir (kept by pytest).

    With ``OPENENV_TRAIN_SCREENSHOTS=DIR`` a copy also lands in DIR (the docs' pictures: ``docs/images``).
    """
    out = tmp_path / "screenshots"
    keep = os.environ.get("OPENENV_TRAIN_SCREENSHOTS")

    def save(driver: Any, name: str) -> Path:
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name}.png"
        driver.save_screenshot(str(path))
        assert path.stat().st_size > 1000, f"screenshot {path} is empty"
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            (Path(keep) / path.name).write_bytes(path.read_bytes())
        return path

    return save


def has_colour(png: bytes, rgb: tuple[int, int, int], tolerance: int = 12, min_pixels: int = 50) -> bool:
    """A screenshot (PNG bytes) has a patch of this colour: at least ``min_pixels`` pixels near ``rgb``."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = image.getcolors(image.width * image.height) or []
    near = (n for n, c in colours if all(abs(a - b) <= tolerance for a, b in zip(c, rgb, strict=True)))
    return sum(near) >= min_pixels
