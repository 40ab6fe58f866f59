"""A real headless Chromium for the tests that open what itchbench writes (documents, the history page): its
console's messages kept, so that a page's errors can be asserted on."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any


def headless_chromium() -> Any:
    """The browser; its quit() also removes the temporary folder it was given (TMPDIR): stopped by its driver,
    Chromium left its singleton's folder (/tmp/org.chromium.Chromium.*) behind, three a run of the test command."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "chromium and chromium-driver are installed by harness/bin/test"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(arg)
    options.binary_location = chromium
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    own_tmp = tempfile.mkdtemp(prefix="itchbench-chromium-")
    browser = webdriver.Chrome(service=Service(driver, env={**os.environ, "TMPDIR": own_tmp}), options=options)
    quit_browser = browser.quit

    def quit_and_clean() -> None:
        try:
            quit_browser()
        finally:
            shutil.rmtree(own_tmp, ignore_errors=True)
    browser.quit = quit_and_clean
    return browser
