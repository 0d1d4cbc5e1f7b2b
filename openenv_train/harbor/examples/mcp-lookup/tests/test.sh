#!/bin/bash
# Reward 1 when /app/codename.txt holds the value the kv MCP server stores under "release-codename", else 0.
mkdir -p /logs/verifier
if [ -f /app/codename.txt ] && [ "$(cat /app/codename.txt)" = "blue-heron-42" ]; then
  echo "codename.txt is correct"
  echo 1 > /logs/verifier/reward.txt
else
  echo "codename.txt is missing or wrong: $(head -c 200 /app/codename.txt 2>/dev/null)"
  echo 0 > /logs/verifier/reward.txt
fi
