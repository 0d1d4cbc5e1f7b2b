#!/bin/bash
# Reward 1 when /app/hello.txt holds exactly "Hello, world!" (a trailing newline is fine), else 0.
mkdir -p /logs/verifier
if [ -f /app/hello.txt ] && [ "$(cat /app/hello.txt)" = "Hello, world!" ]; then
  echo "hello.txt is correct"
  echo 1 > /logs/verifier/reward.txt
else
  echo "hello.txt is missing or wrong"
  echo 0 > /logs/verifier/reward.txt
fi
