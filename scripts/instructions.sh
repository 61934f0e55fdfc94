#!/usr/bin/env bash
# Instructions per handling of the 6 MB Lambda event (8,150 records), for
# the router and the indexer, counted by valgrind: a figure that does not
# drift with the machine's speed, as times here do (by 20 % or more from
# hour to hour). Not part of scripts/test.sh or CI.
#
#   scripts/instructions.sh
#
# Each consumer handles the payload in one process once and then N more
# times; the difference between two such runs, divided by the difference in
# N, is one warm handling's count (the process's start, the config and the
# payload's reading cancel out). Counts miss what instructions do not show
# (cache misses, memory bandwidth): confirm a change in time as well, with
# `cargo run --release -p streamdex-tests --features testing --example batch_figures`.
# Needs valgrind (Debian: `apt-get install valgrind`).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || {
  echo "scripts/instructions.sh needs valgrind (Debian: apt-get install valgrind)" >&2
  exit 2
}
cargo build --release -p streamdex-tests --features testing --example batch_figures
bin=target/release/examples/batch_figures
payload=$(mktemp)
trap 'rm -f "$payload"' EXIT
"$bin" generate "$payload"

# Instructions of one run of the figures binary with these arguments.
count() {
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$bin" "$@" 2>&1 >/dev/null |
    awk '/I +refs:/ { gsub(",", "", $NF); print $NF }'
}
router=$(( ($(count route "$payload" 5) - $(count route "$payload" 1)) / 4 ))
indexer=$(( ($(count measure "$payload" 3) - $(count measure "$payload" 1)) / 2 ))
echo "router:  $router instructions per handling"
echo "indexer: $indexer instructions per handling"
