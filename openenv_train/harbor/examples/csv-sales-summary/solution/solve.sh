#!/bin/bash
set -euo pipefail
cd /app
python3 - <<'PY'
import csv
import json
from collections import Counter, defaultdict

revenue = defaultdict(float)
units = Counter()
rows = 0
with open("sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        rows += 1
        value = int(row["units"]) * float(row["unit_price"])
        revenue[row["region"]] += value
        units[row["product"]] += int(row["units"])
summary = {
    "rows": rows,
    "total_revenue": round(sum(revenue.values()), 2),
    "by_region": {region: round(value, 2) for region, value in sorted(revenue.items())},
    "top_product": units.most_common(1)[0][0],
}
with open("summary.json", "w") as f:
    json.dump(summary, f, indent=2)
PY
