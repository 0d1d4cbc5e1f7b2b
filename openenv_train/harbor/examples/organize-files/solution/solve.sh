#!/bin/bash
set -euo pipefail
cd /app/inbox
find . -maxdepth 1 -type f -empty -delete
for file in *; do
  [ -f "$file" ] || continue
  case "$file" in
    *.*) ext=$(printf '%s' "${file##*.}" | tr 'A-Z' 'a-z') ;;
    *) ext=other ;;
  esac
  mkdir -p "/app/sorted/$ext"
  mv -- "$file" "/app/sorted/$ext/$file"
done
cd /app/sorted
find . -type f ! -name manifest.txt | sed 's|^\./||' | LC_ALL=C sort > manifest.txt
