#!/bin/bash
set -euo pipefail
cd /app
sed -i -e 's/^port = .*/port = 8080/' -e 's/^debug = .*/debug = false/' -e 's/^workers = .*/workers = 4/' server.conf
echo 'timeout = 30' >> server.conf
