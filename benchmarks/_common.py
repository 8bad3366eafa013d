"""What the benchmark scripts share: printing a result table and saving it as JSON."""

from __future__ import annotations

import json
import sys
from typing import Any


def report(results: dict[str, Any], width: int = 48, unit: str = "") -> None:
    """Print one line per figure; with a path as the script's argument, also save the JSON."""
    for name, value in results.items():
        print(f"{name:{width}s} {value:10.2f}{unit}" if isinstance(value, float) else f"{name:{width}s} {value}")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as fh:
            json.dump(results, fh, indent=1)
