#!/usr/bin/env bash
# Everything the test suite needs, from a fresh clone on a fresh (Debian or Ubuntu)
# machine; idempotent, and quick when all is in place. scripts/test.sh runs it first.
#
#   Debian packages  chromium (the dashboard's browser test, driven by playwright-core
#                    without a browser download), python3-venv (the Python peers' venvs),
#                    nodejs + npm (interop), postgresql (the PostgreSQL store tests),
#                    valgrind + jq (the instruction-count guard, bench/guard.sh);
#   PostgreSQL       the local cluster started, reachable as postgres@127.0.0.1:5432
#                    without a password (or wherever MCP_TASKS_TEST_PG points);
#   cargo-nextest    the test runner (scripts/test.sh falls back to `cargo test`);
#   interop peers    npm packages by package-lock.json and the Python venvs by
#                    interop/python/constraints-*.txt (interop/setup.sh);
#   conformance      Node 22 and the MCP conformance suite (interop/conformance/setup.sh,
#                    when present).
#
# Installing Debian packages needs root (or sudo without a password): otherwise each
# missing one is named with the command that installs it, the rest goes on, and the
# script ends non-zero after the other steps (the tests needing it would fail).
#
#   scripts/setup.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

missing=()
note() { echo "setup: $*" >&2; }

# The way to run apt-get here: as root, through password-less sudo, or none.
apt=()
if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    apt=(apt-get)
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    apt=(sudo -n apt-get)
  fi
fi
apt_updated=0

# install PACKAGE... : install the Debian packages, or say why not and what to run.
install() {
  if [ "${#apt[@]}" -eq 0 ]; then
    if command -v apt-get >/dev/null 2>&1; then
      note "cannot install $* (not root, and no password-less sudo): run \`sudo apt-get install -y $*\`"
    else
      note "cannot install $* (no apt-get here): install them with your system's package manager"
    fi
    missing+=("$*")
    return 0
  fi
  if [ "$apt_updated" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" update -qq
    apt_updated=1
  fi
  if ! DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq "$@"; then
    note "apt-get could not install $*"
    missing+=("$*")
  fi
}

echo "== Debian packages"
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || install nodejs npm
command -v chromium >/dev/null 2>&1 || install chromium
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || install python3-venv
# The instruction-count guard (bench/guard.sh): callgrind and jq.
command -v valgrind >/dev/null 2>&1 || install valgrind
command -v jq >/dev/null 2>&1 || install jq
fresh_pg=0
if [ -z "${MCP_TASKS_TEST_PG:-}" ] && ! command -v pg_ctlcluster >/dev/null 2>&1; then
  install postgresql
  command -v pg_ctlcluster >/dev/null 2>&1 && fresh_pg=1
fi

echo "== PostgreSQL"
if [ -n "${MCP_TASKS_TEST_PG:-}" ]; then
  note "the PostgreSQL tests use MCP_TASKS_TEST_PG; nothing started here"
elif command -v pg_ctlcluster >/dev/null 2>&1; then
  version="$(ls /etc/postgresql | sort -V | tail -n 1)"
  if [ "$fresh_pg" -eq 1 ]; then
    # Installed just now: let the tests connect from 127.0.0.1 without a password (an
    # existing cluster's authentication is left as its owner set it).
    hba="/etc/postgresql/$version/main/pg_hba.conf"
    sed -i -E 's/^(host\s+all\s+all\s+(127\.0\.0\.1\/32|::1\/128)\s+)\S+/\1trust/' "$hba"
    pg_ctlcluster --skip-systemctl-redirect "$version" main restart || true
  fi
  if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    if ! pg_ctlcluster --skip-systemctl-redirect "$version" main start; then
      note "could not start the PostgreSQL cluster $version/main (as root: \`pg_ctlcluster $version main start\`)"
      missing+=("a running PostgreSQL")
    fi
  fi
  if pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null &&
    ! psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
    note "PostgreSQL answers on 127.0.0.1:5432 but not to user postgres without a password: allow it (pg_hba.conf \`trust\` for 127.0.0.1) or set MCP_TASKS_TEST_PG=postgres://USER:PASSWORD@HOST:PORT/DB"
    missing+=("PostgreSQL access for postgres@127.0.0.1")
  fi
else
  note "no PostgreSQL: the PostgreSQL store tests need one at postgres@127.0.0.1:5432 (or MCP_TASKS_TEST_PG)"
  missing+=("PostgreSQL")
fi

echo "== cargo-nextest"
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install cargo-nextest --locked || note "could not install cargo-nextest: the tests run with \`cargo test\`"
fi

echo "== interop peers (npm by package-lock.json, PyPI venvs by interop/python/constraints-*.txt)"
if command -v npm >/dev/null 2>&1 && python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  interop/setup.sh
else
  note "the interop peers need npm and python3-venv (see above)"
  missing+=("the interop peers")
fi

echo "== conformance suite (Node 22)"
if [ -x interop/conformance/setup.sh ]; then
  interop/conformance/setup.sh
fi

if [ "${#missing[@]}" -gt 0 ]; then
  note "not set up: $(printf '%s; ' "${missing[@]}")the tests needing them will fail"
  exit 1
fi
echo "== setup done"
