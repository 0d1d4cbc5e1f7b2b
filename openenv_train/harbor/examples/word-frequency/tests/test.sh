#!/bin/bash
# Reward 1 when /app/top_words.txt lists the expected five words and counts, in order, else 0.
mkdir -p /logs/verifier
expected=$'the 20\nboats 4\nnets 4\npier 4\nhad 3'
if [ -f /app/top_words.txt ] && [ "$(sed -e 's/[[:space:]]*$//' /app/top_words.txt)" = "$expected" ]; then
  echo "top_words.txt is correct"
  echo 1 > /logs/verifier/reward.txt
else
  echo "top_words.txt is missing or wrong; expected:"
  echo "$expected"
  echo 0 > /logs/verifier/reward.txt
fi
