#!/usr/bin/env bash
# Install headless Chromium and its WebDriver for the browser test of `hlc report`
# (tests/report/test_report.py).  Never fails the caller: without apt-get or root it
# says why it skipped, and the test then skips itself with a reason.
set -u

have() { command -v "$1" >/dev/null 2>&1; }

if have chromium && have chromedriver; then
    echo "install-browser: chromium and chromedriver already installed"
    exit 0
fi
if ! have apt-get; then
    echo "install-browser: skipped (no apt-get; install chromium and chromedriver yourself)"
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "install-browser: skipped (not root; run: sudo apt-get install chromium chromium-driver)"
    exit 0
fi
echo "install-browser: installing chromium and chromium-driver with apt-get"
if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; then
    echo "install-browser: installed $(chromium --version 2>/dev/null || echo chromium)"
else
    echo "install-browser: apt-get failed (status $?); the browser test will be skipped"
fi
exit 0
