#!/usr/bin/env bash
# The share of a replay's perf samples that are in the allocator: samples
# with an allocator frame anywhere on their stack, over all samples, and
# the same for each thread (replay reads on one thread and handles batches
# on another). Allocator frames: jemalloc's (the `streamdex` command's
# allocator: `_rjem_*`, and the internal functions and inlined helpers
# that show without that prefix), mimalloc's (`mi_*`, `_mi_*`: the
# functions' allocator, and the command's before it), and the Rust
# allocation shims (`__rust_alloc`, `__rust_dealloc`, `__rust_realloc`,
# the kit's `Allocator`, tikv-jemallocator's `Jemalloc`).
# Not part of scripts/test.sh or CI.
#
#   scripts/alloc_share.sh [HISTORY.jsonl [RUNS]]
#
# Without a file it writes the 200 K example-mix history of docs/PERFORMANCE.md
# (`make_history -- 215000`) to a temporary file first. One run has about
# 1,500 samples at 499 Hz and single runs scatter over 5 points or more, so
# it records RUNS replays (5 by default), prints each, and then the median
# of their overall shares: the figure docs/PERFORMANCE.md quotes. A run takes about a minute
# and a half, most of it `perf script` unwinding the stacks.
# Needs perf (Debian: `apt-get install linux-perf`).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${2:-5}
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || {
  echo "scripts/alloc_share.sh: RUNS must be a positive whole number, not '$runs'" >&2
  exit 2
}
command -v perf >/dev/null || {
  echo "scripts/alloc_share.sh needs perf (Debian: apt-get install linux-perf)" >&2
  exit 2
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -p infra --bin streamdex
history=${1:-}
if [[ -z "$history" ]]; then
  cargo build --release -p streamdex-tests --features testing --example make_history
  history="$work/history.jsonl"
  target/release/examples/make_history 215000 >"$history"
fi
[[ -r "$history" ]] || {
  echo "scripts/alloc_share.sh: cannot read the history file $history" >&2
  exit 2
}

# One replay recorded: its share, overall and per thread; the last line is
# the overall share alone, for the median.
one_run() {
  perf record -q -F 499 --call-graph dwarf,16384 -o "$work/perf.data" \
    target/release/streamdex replay "$history" --no-progress >/dev/null
  perf script -i "$work/perf.data" 2>/dev/null | awk '
  function flush() {
    if (!inside) return
    total++; by[tid]++
    if (hit) { alloc++; by_alloc[tid]++ }
    inside = 0; hit = 0
  }
  /^$/ { flush(); next }
  /^[^ \t]/ { flush(); inside = 1; tid = $2; next }
  {
    # A frame: address, then the symbol (with +offset), then (dso).
    symbol = $2
    if (symbol ~ /^_?mi_/ || symbol ~ /^__rustc::__rust_(alloc|dealloc|realloc)/ ||
        symbol ~ /^__rust_(alloc|dealloc|realloc)/ || symbol ~ /^<aws_kit::alloc::Allocator/ ||
        symbol ~ /^<tikv_jemallocator::/ || symbol ~ /^_rjem_/ ||
        symbol ~ /^(je_|tcache_|cache_bin_|arena_|extent_|edata_|eset_|emap_|pac_|sec_|hpa_|san_)/ ||
        symbol ~ /^(imalloc|ialloc|iralloc|idalloc|ifree|isfree|free_fastpath|do_rallocx|malloc_default)/)
      hit = 1
  }
  END {
    flush()
    if (total == 0) { print "no samples recorded" > "/dev/stderr"; exit 1 }
    printf "samples %d, with an allocator frame %d (%.1f %%)\n", total, alloc, 100 * alloc / total
    for (t in by)
      printf "  thread %s: %d samples, %.1f %% with an allocator frame\n", t, by[t], 100 * by_alloc[t] / by[t]
    printf "%.1f\n", 100 * alloc / total
  }'
}

shares=()
for ((run = 1; run <= runs; run++)); do
  echo "run $run of $runs:"
  out=$(one_run)
  echo "$out" | sed '$d'
  shares+=("$(echo "$out" | tail -n 1)")
done
median=$(printf '%s\n' "${shares[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
echo "median over $runs runs: $median % of samples with an allocator frame (runs: ${shares[*]})"

