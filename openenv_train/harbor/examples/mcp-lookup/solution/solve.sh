#!/bin/bash
# Speak MCP to the kv server over stdio, as an MCP client would: initialize, then call tools/call lookup.
set -euo pipefail
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"solve.sh","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":{"key":"release-codename"}}}' \
  | python3 /app/tools/kv_server.py \
  | python3 -c 'import json, sys
for line in sys.stdin:
    reply = json.loads(line)
    if reply.get("id") == 2:
        print(reply["result"]["content"][0]["text"])' > /app/codename.txt
