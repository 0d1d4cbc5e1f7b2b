#!/bin/bash
set -euo pipefail
cd /app
tr 'A-Z' 'a-z' < article.txt | tr -cs 'a-z' '\n' | grep -v '^$' | sort | uniq -c \
  | sort -k1,1nr -k2,2 | head -n 5 | awk '{print $2, $1}' > top_words.txt
