#!/bin/bash
# Reward 1 when /app/inbox is empty and /app/sorted holds exactly the expected files, contents and manifest.
mkdir -p /logs/verifier
python3 - <<'PY'
from pathlib import Path

expected = {
    "csv/data.csv": "a,b\n1,2\n",
    "jpg/Photo.JPG": "JFIF fake photo\n",
    "other/README": "see the docs\n",
    "png/diagram.png": "\x89PNG fake image bytes\n",
    "txt/meeting notes.txt": "agenda: harbor tasks\n",
    "txt/report.TXT": "quarterly numbers\n",
    "txt/todo.txt": "buy milk\n",
}
inbox, sorted_dir = Path("/app/inbox"), Path("/app/sorted")
problems = []
if not inbox.is_dir():
    problems.append("/app/inbox is gone")
elif any(inbox.iterdir()):
    problems.append(f"/app/inbox is not empty: {sorted(p.name for p in inbox.iterdir())}")
found = {p.relative_to(sorted_dir).as_posix() for p in sorted_dir.rglob("*") if p.is_file()} if sorted_dir.is_dir() else set()
if found != set(expected) | {"manifest.txt"}:
    problems.append(f"/app/sorted holds {sorted(found)}")
for name, content in expected.items():
    path = sorted_dir / name
    if path.is_file() and path.read_bytes() != content.encode("latin-1"):
        problems.append(f"{name} has changed")
manifest = sorted_dir / "manifest.txt"
lines = manifest.read_text().splitlines() if manifest.is_file() else []
if [line.rstrip() for line in lines if line.strip()] != sorted(expected):
    problems.append(f"manifest.txt is {lines}")
print("\n".join(problems) or "all files are in place")
Path("/logs/verifier/reward.txt").write_text("0\n" if problems else "1\n")
PY
