#!/usr/bin/env bash
# Docker for tests/docker. `start` (default): install docker.io if dockerd is missing, start dockerd without
# networking if no engine answers, and build the cached local base image (debootstrapped Debian bookworm with
# python3 3.11) unless it exists. `stop`: stop the dockerd that `start` launched (images stay cached on disk).
# Base image tag: $OPENENV_TRAIN_DOCKER_BASE (default openenv-train/base:py3). Idempotent; needs root.
set -euo pipefail
TAG="${OPENENV_TRAIN_DOCKER_BASE:-openenv-train/base:py3}"
LOG=/var/log/openenv-train-dockerd.log
PIDFILE=/run/openenv-train-dockerd.pid
if [ "${1:-start}" = stop ]; then
  if [ -f "$PIDFILE" ] && kill "$(cat "$PIDFILE")" 2>/dev/null; then
    for _ in $(seq 30); do kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break; sleep 1; done
  fi
  rm -f "$PIDFILE"
  exit 0
fi
if ! command -v dockerd >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  nohup dockerd --iptables=false --ip6tables=false --bridge=none >>"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see $LOG" >&2; tail -20 "$LOG" >&2; exit 1; }
fi
if ! docker image inspect "$TAG" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  MIRROR="$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)"
  MIRROR="${MIRROR:-$(awk '/^deb / && $3=="bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)}"
  MIRROR="${MIRROR:-http://deb.debian.org/debian}"
  ROOT="$(mktemp -d /tmp/openenv-train-rootfs.XXXXXX)"
  trap 'rm -rf "$ROOT"' EXIT
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$ROOT" "$MIRROR" >/dev/null
  rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/*
  tar -C "$ROOT" -c . | docker import -c 'CMD ["python3"]' - "$TAG" >/dev/null
fi
echo "docker ready; base image $TAG"
