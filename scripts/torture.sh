#!/usr/bin/env bash
# Run hazptr torture configurations: scripts/torture.sh CONFIG... [--duration S]
# CONFIG: READERS0 READERS4 SLOWPATH ASYMMETRIC LOCKDEP SWEEP<n> ALL. Exits non-zero on
# any violation. Set VALGRIND=1 to run under valgrind memcheck.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p integration-tests --bin hazptr-torture
bin=target/release/hazptr-torture
if [ "${VALGRIND:-0}" = 1 ]; then
    exec valgrind -q --fair-sched=yes --error-exitcode=99 --leak-check=no "$bin" "$@"
fi
exec "$bin" "$@"
