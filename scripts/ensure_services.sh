#!/usr/bin/env bash
# Make sure PostgreSQL and Redis answer on 127.0.0.1. Start the local servers when they are
# installed but stopped; otherwise fail with the exact command that gets them.
set -euo pipefail

PG_PORT="${BPM_TEST_PG_PORT:-5432}"
REDIS_PORT="${BPM_TEST_REDIS_PORT:-6379}"

port_open() {  # host port
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && exec 3>&- && return 0
  return 1
}

wait_port() {  # name host port
  for _ in $(seq 1 50); do
    port_open "$2" "$3" && return 0
    sleep 0.2
  done
  echo "error: $1 did not come up on $2:$3" >&2
  return 1
}

if ! port_open 127.0.0.1 "$PG_PORT"; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    version="$(ls /etc/postgresql | sort -V | tail -1)"
    echo "starting PostgreSQL $version (local cluster 'main')"
    pg_ctlcluster --skip-systemctl-redirect "$version" main start
    wait_port PostgreSQL 127.0.0.1 "$PG_PORT"
  else
    echo "error: PostgreSQL is not answering on 127.0.0.1:$PG_PORT and no local server is installed." >&2
    echo "  install and start one:  sudo apt-get install -y postgresql && sudo pg_ctlcluster \$(ls /etc/postgresql) main start" >&2
    echo "  (tests connect as user 'postgres' without a password; set BPM_TEST_DATABASE_URL otherwise)" >&2
    exit 1
  fi
fi

if ! port_open 127.0.0.1 "$REDIS_PORT"; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "starting Redis on 127.0.0.1:$REDIS_PORT"
    mkdir -p /tmp/bpm-redis
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" \
      --appendonly no --dir /tmp/bpm-redis --logfile /tmp/bpm-redis/redis.log
    wait_port Redis 127.0.0.1 "$REDIS_PORT"
  else
    echo "error: Redis is not answering on 127.0.0.1:$REDIS_PORT and redis-server is not installed." >&2
    echo "  install and start it:  sudo apt-get install -y redis-server && redis-server --daemonize yes --bind 127.0.0.1 --port $REDIS_PORT" >&2
    exit 1
  fi
fi
echo "PostgreSQL and Redis answer on 127.0.0.1:$PG_PORT and 127.0.0.1:$REDIS_PORT"
