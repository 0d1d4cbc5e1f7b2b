#!/bin/bash
set -euo pipefail
cd /app
python3 - <<'PY'
from pathlib import Path

path = Path("stats_utils.py")
source = path.read_text()
buggy = "    return ordered[middle]\n"
fixed = (
    "    if len(ordered) % 2:\n"
    "        return ordered[middle]\n"
    "    return (ordered[middle - 1] + ordered[middle]) / 2\n"
)
assert buggy in source, "the buggy line is not there"
path.write_text(source.replace(buggy, fixed))
PY
