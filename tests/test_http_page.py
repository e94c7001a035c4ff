"""The web page (`GET /`) in a real headless Chromium (Debian's chromium + chromium-driver,
driven by selenium): type, Listen (the audio element gets playable audio from the streamed WAV),
Announce (the event list shows `finished`), and a phone-sized window with nothing off-screen.

`EDGED_PAGE_SCREENSHOT=docs/http-page.png pytest tests/test_http_page.py` refreshes the
screenshot kept in docs/.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.harness.broker import Broker
from tests.harness.http_daemon import HttpDaemon
from tests.harness.voices import PreparedVoices

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
_WAIT_S = 30
# As root in this VM Chromium needs no sandbox; the network flags keep it from calling home
# (refused here, and slow); a fresh profile per run.
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
          "--autoplay-policy=no-user-gesture-required", "--mute-audio")


@pytest.fixture
def page_daemon(tmp_path: Path, broker: Broker, unique_prefix: str,
                default_voice_path: Path, prepared_voices: PreparedVoices) -> Iterator[HttpDaemon]:
    """The daemon with the real default voice (what the screenshot shows)."""
    prepared_voices.seed(tmp_path / "d" / "cache")
    daemon = HttpDaemon(tmp_path / "d", broker.port, unique_prefix, default_voice_path).start()
    yield daemon
    daemon.stop()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,1250"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.mark.voice
def test_page_listens_announces_and_fits_a_phone(page_daemon: HttpDaemon,
                                                 browser: webdriver.Chrome,
                                                 tmp_path: Path) -> None:
    """Listen gives the audio element playable audio; Announce queues it on the device and the
    live event list shows it finished; the cache stats and state are shown."""
    wait = WebDriverWait(browser, _WAIT_S)
    browser.get(page_daemon.url + "/")
    wait.until(lambda d: d.find_element(By.ID, "voice").text.startswith("en_US-joe-medium"))
    text = browser.find_element(By.ID, "text")
    text.send_keys("The washing machine has finished. Time to hang the laundry.")
    browser.find_element(By.ID, "listen").click()
    wait.until(lambda d: d.execute_script("return document.getElementById('player').readyState")
               >= 2)  # HAVE_CURRENT_DATA: decoded audio is there to play
    assert browser.execute_script("return document.getElementById('player').error") is None
    assert "/api/tts?" in browser.execute_script("return document.getElementById('player').src")

    browser.find_element(By.ID, "announce").click()
    wait.until(lambda d: d.find_element(By.ID, "message").text.startswith("Queued as"))
    request_id = browser.find_element(By.ID, "message").text.split()[2]
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#events li[data-event=finished]"))
    finished = browser.find_element(By.CSS_SELECTOR, "#events li[data-event=finished]").text
    assert f"finished {request_id} (cached" in finished  # Listen had made it: from the cache
    # The state's cache figures are refreshed every few seconds: wait for this one's entry.
    wait.until(lambda d: "entries\n1" in d.find_element(By.ID, "cache").text)
    assert browser.find_element(By.ID, "state").text in ("idle", "speaking")
    shot = tmp_path / "page.png"
    assert browser.save_screenshot(str(shot)) and shot.read_bytes()[:4] == b"\x89PNG"
    if os.environ.get("EDGED_PAGE_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["EDGED_PAGE_SCREENSHOT"])

    browser.set_window_size(390, 844)  # a phone
    overflow = browser.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    listen = browser.find_element(By.ID, "listen")
    assert listen.is_displayed() and listen.size["height"] >= 40  # a thumb can hit it
