#!/usr/bin/env bash
# Fuzzes the three parsers that take outside input, each for a fixed time
# (not part of scripts/test.sh or CI: it takes half an hour):
#
#   record   any bytes as a Lambda event, GetRecords response, JSON Lines or
#            one record; valid records go on through validation, the planner
#            and the router's classifier
#   sortkey  the CSS1 decoder, which must re-encode whatever it accepts to
#            the same key
#   config   any text as a config file
#
#   scripts/fuzz.sh                 # each target for 600 s
#   scripts/fuzz.sh 60              # each for 60 s
#   scripts/fuzz.sh 600 sortkey     # one target
#
# Needs the nightly toolchain and cargo-fuzz (installed here on first use:
# `rustup toolchain install nightly`, `cargo install cargo-fuzz --locked`).
# Corpora start from the project's own fixtures and config and grow under
# fuzz/corpus/TARGET; a crash is saved under fuzz/artifacts/TARGET and makes
# the script exit 1. The last line of each run gives its figures
# (executions, seconds, crashes).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(record sortkey config)

log() { printf '==> %s\n' "$*" >&2; }

if ! rustup toolchain list | grep -q '^nightly'; then
  log "installing the nightly toolchain"; rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  log "installing cargo-fuzz"; cargo install cargo-fuzz --locked
fi

seed() {
  local target=$1 dir=fuzz/corpus/$1
  mkdir -p "$dir"
  case "$target" in
    record)
      cp ../shared/fixtures/*.json "$dir"/ 2>/dev/null || true
      head -c 20000 tests/fixtures/example-history.jsonl >"$dir/example-history-head.jsonl"
      head -n 1 tests/fixtures/router-history.jsonl >"$dir/router-line.json" ;;
    sortkey)
      # a count byte (columns - 1), one spec byte per column (0x06: ANY
      # ascending), then keys from the vectors in docs/css1.md
      printf '\x00\x06>13042!' >"$dir/n"; printf '\x00\x06<12457~' >"$dir/neg"
      printf '\x00\x06Sabc\x01' >"$dir/s"; printf '\x00\x06D2024-01-02' >"$dir/date"
      printf '\x02\x06\x06\x06=1!' >"$dir/three" ;;
    config)
      cp streamdex.example.toml "$dir/example.toml" ;;
  esac
}

status=0
for target in "${targets[@]}"; do
  seed "$target"
  log "fuzzing $target for ${seconds}s"
  mkdir -p "fuzz/artifacts/$target"
  if cargo +nightly fuzz run --fuzz-dir fuzz "$target" "fuzz/corpus/$target" -- \
       -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
       2>"fuzz/$target.log"; then
    failed=0
  else
    failed=1; status=1
  fi
  crashes=$(find "fuzz/artifacts/$target" -type f | wc -l)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "fuzz/$target.log" | tail -1)
  if [ "$failed" = 1 ] && [ -z "$runs" ]; then
    # It never ran (the build failed, or cargo-fuzz did): say so, not "0 crashes".
    printf '%-8s did not run: see fuzz/%s.log\n' "$target" "$target"
    tail -40 "fuzz/$target.log" >&2
    continue
  fi
  printf '%-8s %ss  %s executions  %s crashes\n' "$target" "$seconds" "${runs:-?}" "$crashes"
  [ "$failed" = 0 ] || tail -40 "fuzz/$target.log" >&2
done
exit $status
