#!/usr/bin/env bash
# Builds the three Lambda functions as Lambda runs them: a `bootstrap` per
# function (no debug info, no symbols) and the zip beside it, in
# target/lambda/FUNCTION/{bootstrap,bootstrap.zip}: what the template's
# CodeUri points at. Also writes target/lambda/architecture, the
# architecture built for, to pass as the template's Architecture parameter.
#
#   scripts/build-functions.sh            # arm64 (the template's default)
#   scripts/build-functions.sh x86_64
#
# arm64 needs Rust's aarch64 standard library:
#   rustup target add aarch64-unknown-linux-gnu
# cargo-lambda (with zig, which links for Lambda's glibc) is installed into
# .venv-lambda the first time, pinned, unless `cargo lambda` is on the PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'build-functions: %s\n' "$*" >&2; exit 2; }

arch=${1:-arm64}
case "$arch" in
  arm64 | aarch64) arch=arm64 target=aarch64-unknown-linux-gnu flag=--arm64 ;;
  x86_64 | x86-64 | amd64) arch=x86_64 target=x86_64-unknown-linux-gnu flag=--x86-64 ;;
  -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown architecture '$arch': expected arm64 or x86_64" ;;
esac
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  die "the Rust target $target is not installed, so the functions cannot be built for $arch; install it with
  rustup target add $target
or build for the other architecture (and deploy with Architecture set to it)."
fi

cargo_lambda_version=1.9.2
venv=.venv-lambda
if ! cargo lambda --version >/dev/null 2>&1; then
  if [ ! -x "$venv/bin/cargo-lambda" ] || [ "$(cat "$venv/pinned" 2>/dev/null)" != "$cargo_lambda_version" ]; then
    log "installing cargo-lambda $cargo_lambda_version into $venv (once, ~30 s)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "cargo-lambda==$cargo_lambda_version"
    echo "$cargo_lambda_version" >"$venv/pinned"
  fi
  export PATH="$PWD/$venv/bin:$PATH"
fi

functions=(stream-indexer event-router reaper)
log "cargo lambda build --profile lambda $flag: ${functions[*]}"
bins=()
for f in "${functions[@]}"; do bins+=(--bin "$f"); done
cargo lambda build --profile lambda "$flag" --output-format zip --lambda-dir target/lambda "${bins[@]}"
echo "$arch" >target/lambda/architecture
for f in "${functions[@]}"; do
  zip=target/lambda/$f/bootstrap.zip
  [ -s "$zip" ] || die "cargo lambda left no $zip"
  printf '%s\t%s bytes\n' "$zip" "$(stat -c %s "$zip")"
done
