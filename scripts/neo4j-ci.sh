#!/usr/bin/env bash
# A managed Neo4j for CI and local test runs.
#
#   eval "$(scripts/neo4j-ci.sh start "$PWD/.neo4j")"   # install (Maven) + start + wait for Bolt
#   scripts/neo4j-ci.sh status "$PWD/.neo4j"
#   scripts/neo4j-ci.sh stop "$PWD/.neo4j"
#
# `start` prints only `export MNEMOQL_TEST_NEO4J_URI=... MNEMOQL_TEST_NEO4J_USER=...
# MNEMOQL_TEST_NEO4J_PASSWORD=...` on stdout (progress goes to stderr), so its output can be
# eval'd. If a server is already running on that home it is reused. The jars are cached in the
# user cache dir (~/.cache/mnemoql/neo4j-<version>/lib) and Maven's ~/.m2: cache both in CI.
# Env: PYTHON (default: python), NEO4J_VERSION, NEO4J_HEAP, NEO4J_PAGE_CACHE.
set -euo pipefail

usage() { echo "usage: $0 start|stop|status|env HOME_DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
home=$2
py=${PYTHON:-python}

managed() {
  "$py" -m mnemoql.engine.store.neo4j.managed "$1" --home "$home" \
    --version "${NEO4J_VERSION:-5.26.23}" --heap "${NEO4J_HEAP:-1g}" \
    --page-cache "${NEO4J_PAGE_CACHE:-512m}" "${@:2}"
}

case "$action" in
  start)
    managed install >&2
    if ! managed status >/dev/null 2>&1; then
      managed start --timeout 120 >&2
    else
      echo "Neo4j already running on $home; reusing it" >&2
    fi
    managed env
    ;;
  env)
    managed env
    ;;
  stop)
    managed stop --timeout 60
    ;;
  status)
    managed status
    ;;
  *)
    usage
    ;;
esac
