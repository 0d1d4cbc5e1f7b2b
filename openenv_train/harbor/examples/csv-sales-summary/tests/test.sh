#!/bin/bash
# Checks /app/summary.json. Writes /logs/verifier/reward.json with one 0/1 component per check and
# reward = 1.0 only when every check passes.
mkdir -p /logs/verifier
python3 - <<'PY'
import json
from pathlib import Path

EXPECTED_REGIONS = {"east": 115.49, "north": 91.48, "south": 85.0, "west": 60.25}


def close(a, b):
    return isinstance(a, (int, float)) and not isinstance(a, bool) and abs(a - b) < 0.005


checks = {"valid_json": 0.0, "rows": 0.0, "total_revenue": 0.0, "by_region": 0.0, "top_product": 0.0}
try:
    summary = json.loads(Path("/app/summary.json").read_text())
except (OSError, ValueError) as exc:
    print(f"/app/summary.json is missing or not JSON: {exc}")
    summary = None
if isinstance(summary, dict):
    checks["valid_json"] = 1.0
    checks["rows"] = float(summary.get("rows") == 12)
    checks["total_revenue"] = float(close(summary.get("total_revenue"), 352.22))
    regions = summary.get("by_region")
    checks["by_region"] = float(
        isinstance(regions, dict)
        and set(regions) == set(EXPECTED_REGIONS)
        and all(close(regions[k], v) for k, v in EXPECTED_REGIONS.items())
    )
    checks["top_product"] = float(summary.get("top_product") == "widget")
checks["reward"] = 1.0 if all(v == 1.0 for v in checks.values()) else 0.0
print(json.dumps(checks))
Path("/logs/verifier/reward.json").write_text(json.dumps(checks))
PY
