"""Where things are: the checkout, its test data, and how to start edged."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The checkout (the folder with pyproject.toml)."""
DATA = ROOT / "tests" / "data"
EDGED = [sys.executable, "-m", "edged"]
