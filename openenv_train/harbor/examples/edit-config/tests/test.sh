#!/bin/bash
# Reward 1 when /app/server.conf is exactly the expected file (trailing blank lines ignored), else 0.
mkdir -p /logs/verifier
python3 - <<'PY'
from pathlib import Path

expected = """# Web server settings
host = 127.0.0.1
port = 8080
debug = false

# Worker pool
workers = 4
log_level = info
timeout = 30
"""
path = Path("/app/server.conf")
actual = path.read_text() if path.is_file() else ""
ok = actual.rstrip("\n") + "\n" == expected
print("server.conf is correct" if ok else f"server.conf differs from the expected file:\n{actual}")
Path("/logs/verifier/reward.txt").write_text("1\n" if ok else "0\n")
PY
