"""Headless Chromium (Debian's package) driven by Playwright, and where its screenshots go."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ViewportSize

CHROMIUM = os.environ.get("KERNELGRADE_TEST_CHROMIUM", "/usr/bin/chromium")
# var/ is ignored by git; CI may collect the folder as an artifact.
ARTIFACTS = Path(os.environ.get("KERNELGRADE_TEST_ARTIFACTS", Path(__file__).parents[2] / "var" / "test-artifacts"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LAPTOP: ViewportSize = {"width": 1366, "height": 900}
DESKTOP: ViewportSize = {"width": 1400, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install playwright; no `playwright install` needed)"
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


def screenshots_dir(name: str) -> Path:
    folder = ARTIFACTS / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    print(f"\nscreenshots of {name}: {folder}")
    return folder


@contextmanager
def chromium() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
