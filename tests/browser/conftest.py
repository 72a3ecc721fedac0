"""Fixtures for the browser tests; they live in browser_support.py."""

from browser_support import base_url, browser, open_page  # noqa: F401
