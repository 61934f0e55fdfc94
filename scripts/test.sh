#!/usr/bin/env bash
# Runs every check and every test: formatting, clippy (-D warnings), unit,
# property and end-to-end tests. It installs and starts what the tests need
# by itself: a moto server (the local DynamoDB/Streams/EventBridge/SQS) in a
# virtualenv under .venv-aws, on a free loopback port, stopped on exit.
#
#   scripts/test.sh                    # everything
#   scripts/test.sh -p model           # extra arguments go to `cargo nextest run`
#   scripts/test.sh -p model -- plan   # and after `--`, filters of test names
#
# The tests that need the moto server are #[ignore]d (a plain `cargo test`
# lists them as ignored rather than passing them unrun); this script runs
# them too (nextest's --run-ignored all). One is skipped by name: it needs
# real DynamoDB's per-item isolation of conditional writes, which moto lacks.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }

# A CI run builds once from clean: incremental state would only take disk.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi

cargo_args=() test_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do cargo_args+=("$1"); shift; done
[ $# -gt 0 ] && shift
test_args=("$@")

# The deploy rehearsals (scripts/rehearse.sh, then the e2e tests `rehearsal::`)
# runs with the whole suite, or with STREAMDEX_REHEARSE=1. It needs the
# functions built as they ship, which takes minutes: that build starts now,
# in a target folder of its own (so it holds no lock the other builds wait
# on), and runs beside the installs and checks below.
rehearse=0
if { [ ${#cargo_args[@]} -eq 0 ] && [ ${#test_args[@]} -eq 0 ]; } || [ "${STREAMDEX_REHEARSE:-}" = 1 ]; then rehearse=1; fi
case "$(uname -m)" in aarch64 | arm64) arch=arm64 ;; *) arch=x86_64 ;; esac
if [ "$rehearse" = 1 ]; then
  log "building the functions for $arch in the background (target/functions; log: target/build-functions.log)"
  mkdir -p target
  CARGO_TARGET_DIR=target/functions scripts/build-functions.sh "$arch" >target/build-functions.log 2>&1 &
  functions_pid=$!
fi

# A build from clean takes about 2 GB under target/ (measured on a fresh
# clone: 2.0 GB). A linker that runs out of disk dies with "signal 7 [Bus
# error]", which names no disk, so a short disk is said here first.
need_mb=2500
free_mb=$(df -Pm "${CARGO_TARGET_DIR:-.}" 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -n "$free_mb" ] && [ "$free_mb" -lt "$need_mb" ]; then
  log "warning: ${free_mb} MB free on the build's disk; a build from clean takes about 2,000 MB under target/ (a linker short of disk dies with signal 7, Bus error)"
fi

# --- the local AWS -----------------------------------------------------------
venv=.venv-aws
if [ ! -x "$venv/bin/moto_server" ]; then
  log "installing moto[server] into $venv (once, ~30 s)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]>=5,<6'
fi
# The template's security judges, pinned, in a virtualenv of their own
# (checkov's dependencies and moto's do not mix).
judges=.venv-judges
# aws-sam-translator expands the SAM template for the rehearsal (infra/expand.py).
judge_versions=(checkov==3.3.30 cfn-lint==1.58.0 cfn-lint-serverless==0.3.6 cfripper==1.22.1 aws-sam-translator==1.115.0)
if [ ! -x "$judges/bin/cfripper" ] || [ "$(cat "$judges/pinned" 2>/dev/null)" != "${judge_versions[*]}" ]; then
  log "installing the template's judges into $judges (once, ~2 min): ${judge_versions[*]}"
  python3 -m venv "$judges"
  "$judges/bin/pip" install --quiet --disable-pip-version-check "${judge_versions[@]}"
  echo "${judge_versions[*]}" >"$judges/pinned"
fi
pids=()
trap 'kill "${pids[@]}" ${functions_pid:-} 2>/dev/null || true; rm -f target-moto*.log' EXIT
# Starts a moto server on a free port, its log in $1, and sets `started` to
# its endpoint. Waits at most 10 s for it to answer.
start_moto() {
  local port pid
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$1" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 1 100); do
    if curl -fsS -o /dev/null -X POST "http://127.0.0.1:$port/moto-api/reset" 2>/dev/null; then
      started="http://127.0.0.1:$port"; return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then cat "$1" >&2; log "moto failed to start"; exit 1; fi
    sleep 0.1
  done
  log "moto did not answer on 127.0.0.1:$port within 10 s"; exit 1
}
start_moto target-moto.log
log "moto on $started"
export STREAMDEX_TEST_ENDPOINT=$started
export AWS_ENDPOINT_URL="$STREAMDEX_TEST_ENDPOINT" AWS_REGION=us-east-1 \
       AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_EC2_METADATA_DISABLED=true
export PATH="$PWD/$venv/bin:$PATH"

# --- checks and tests ----------------------------------------------------------
log "cargo fmt --check"
cargo fmt --all -- --check
log "cargo clippy --all-targets -- -D warnings"
# With the benchmarks' and figure examples' feature, so they are checked too.
cargo clippy --workspace --all-targets --features streamdex-tests/testing --quiet -- -D warnings
# The example's template, and the same config read from Kinesis.
for template in infra/streamdex.template.json infra/streamdex.kinesis.template.json; do
  log "judging $template: cfn-lint with the serverless rules, checkov, cfripper"
  "$judges/bin/cfn-lint" -a cfn_lint_serverless.rules -- "$template"
  BC_SKIP_MAPPING=TRUE "$judges/bin/checkov" -f "$template" --framework cloudformation --compact --quiet --skip-download
  if ! ripper=$("$judges/bin/cfripper" "$template" --format txt 2>&1) || grep -q crashed <<<"$ripper"; then
    printf '%s\n' "$ripper" | grep -v '^Instantiation of GenericResource' >&2; log "cfripper refused $template"; exit 1
  fi
done
scope=(--workspace)
for a in "${cargo_args[@]}"; do case "$a" in -p|--package|-p*|--package=*) scope=() ;; esac; done
# Every test runs under cargo nextest, in its own process with its own bound
# (.config/nextest.toml: killed and named after 5 minutes), so a stuck test
# fails with its output instead of hanging the command. Doc tests, which
# nextest does not run, go through cargo test.
log "cargo nextest run (the moto tests included; each test bounded)"
if ! cargo nextest --version >/dev/null 2>&1; then
  log "installing cargo-nextest (once)"; cargo install cargo-nextest --locked
fi
profile=default; [ "${CI:-}" = true ] && profile=ci
# The rehearsals' checks (tests/tests/e2e/rehearsal.rs) run after the rehearsals, below.
rehearsal_tests='test(/^rehearsal::/)'
cargo nextest run --profile "$profile" "${scope[@]}" "${cargo_args[@]}" --run-ignored all --no-tests=warn \
  -E "not test(concurrent_adds_never_pass_max_members) and not $rehearsal_tests" "${test_args[@]}"
if [ "$rehearse" = 1 ]; then
  log "waiting for the functions' build (it started first)"
  if ! wait "$functions_pid"; then cat target/build-functions.log >&2; log "scripts/build-functions.sh $arch failed"; exit 1; fi
  functions_pid=
  tail -n 4 target/build-functions.log >&2
  streamdex="${CARGO_TARGET_DIR:-target}/debug/streamdex"
  # A moto server of its own: the stack takes the example config's names.
  start_moto target-moto-rehearsal.log
  export STREAMDEX_REHEARSAL_ENDPOINT=$started
  log "the deploy rehearsal against $STREAMDEX_REHEARSAL_ENDPOINT"
  REHEARSAL_BUILT=1 STREAMDEX="$streamdex" scripts/rehearse.sh "$STREAMDEX_REHEARSAL_ENDPOINT" streamdex.example.toml
  # Again with every table read from Kinesis, on another server (the same names).
  start_moto target-moto-rehearsal-kinesis.log
  export STREAMDEX_KINESIS_REHEARSAL_ENDPOINT=$started
  "$streamdex" config example --stream kinesis >target/streamdex.kinesis.toml
  log "the deploy rehearsal of target/streamdex.kinesis.toml against $STREAMDEX_KINESIS_REHEARSAL_ENDPOINT"
  REHEARSAL_DIR=target/rehearsal-kinesis REHEARSAL_BUILT=1 STREAMDEX="$streamdex" \
    scripts/rehearse.sh "$STREAMDEX_KINESIS_REHEARSAL_ENDPOINT" target/streamdex.kinesis.toml
  log "the built functions against the rehearsals' stacks"
  cargo nextest run --profile "$profile" --workspace --run-ignored all -E "$rehearsal_tests"
fi
if [ ${#cargo_args[@]} -eq 0 ] && [ ${#test_args[@]} -eq 0 ]; then
  log "cargo test --doc"
  cargo test --workspace --doc --quiet
fi
