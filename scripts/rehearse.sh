#!/usr/bin/env bash
# The deploy rehearsal: the commands of docs/deploying.md, run against a
# local endpoint (a moto server) instead of AWS. It builds the functions for
# this machine's architecture, renders, packages, expands and lints the
# template, creates it as a CloudFormation stack (naming every resource the
# endpoint did not create), and creates what the consumers need of those
# the way `streamdex up` does. Then
#
#   streamdex run CONFIG --functions target/lambda --mappings REHEARSAL_DIR/mappings.json
#
# runs the built functions against the stack as Lambda would (scripts/test.sh
# does, and checks what they did: tests/tests/e2e/rehearsal.rs).
#
#   scripts/rehearse.sh http://127.0.0.1:5005 [CONFIG]
#   REHEARSAL_DIR=target/rehearsal-kinesis scripts/rehearse.sh http://127.0.0.1:5006 target/streamdex.kinesis.toml
#
# Needs: the moto server at the endpoint (one of its own: the stack takes the
# config's names), and aws-sam-translator and cfn-lint in .venv-judges
# (scripts/test.sh installs them, pinned), or JUDGES=DIR naming another
# virtualenv. STREAMDEX names the streamdex binary (default: built now);
# REHEARSAL_DIR, a folder right under target/, the rehearsal's files
# (default target/rehearsal; the template goes to target/template.json, or
# beside the folder as target/NAME.template.json).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> rehearsal: %s\n' "$*" >&2; }
die() { printf 'rehearse: %s\n' "$*" >&2; exit 2; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: scripts/rehearse.sh ENDPOINT [CONFIG]"
endpoint=$1
config=${2:-streamdex.example.toml}
judges=${JUDGES:-.venv-judges}
[ -x "$judges/bin/python" ] || die "no virtualenv $judges with aws-sam-translator and cfn-lint (scripts/test.sh makes it)"
if [ -z "${STREAMDEX:-}" ]; then
  cargo build --quiet -p infra --bin streamdex
  STREAMDEX=${CARGO_TARGET_DIR:-target}/debug/streamdex
fi
case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "this machine ($(uname -m)) can run neither architecture Lambda offers" ;;
esac
# The stack's name, the artifacts' bucket and the alarms' endpoint.
stack=streamdex
bucket=streamdex-artifacts
alarm_endpoint=alarms@example.com
# Where the rehearsal's files go (REHEARSAL_DIR, under target/), and the
# template, in target/ itself: its CodeUris are relative to it.
out=${REHEARSAL_DIR:-target/rehearsal}
[[ $out =~ ^target/[A-Za-z0-9_-][A-Za-z0-9._-]*$ ]] || die "REHEARSAL_DIR must name a folder right under target/ (target/NAME), not $out"
template=target/template.json
[ "$out" = target/rehearsal ] || template="target/$(basename "$out").template.json"
mkdir -p "$out"
export AWS_ENDPOINT_URL=$endpoint

# The functions: built unless this very build is there already (scripts/test.sh builds them beforehand).
if [ "${REHEARSAL_BUILT:-}" != 1 ] || [ "$(cat target/lambda/architecture 2>/dev/null)" != "$arch" ]; then
  log "scripts/build-functions.sh $arch"
  scripts/build-functions.sh "$arch"
fi

# The deploy section's commands, in order (docs/deploying.md).
log "streamdex template $config -o $template"
"$STREAMDEX" template "$config" -o "$template"
log "streamdex package $template --bucket $bucket -o $out/packaged.json"
"$STREAMDEX" package "$template" --bucket "$bucket" --create-bucket -o "$out/packaged.json"
log "python infra/expand.py $out/packaged.json $out/expanded.json"
"$judges/bin/python" infra/expand.py "$out/packaged.json" "$out/expanded.json"
log "cfn-lint $out/expanded.json"
"$judges/bin/cfn-lint" -a cfn_lint_serverless.rules -- "$out/expanded.json"
log "streamdex deploy $out/expanded.json --stack-name $stack --defer-mappings $out/mappings.json"
"$STREAMDEX" deploy "$out/expanded.json" --stack-name "$stack" \
  --parameter "AlarmEndpoint=$alarm_endpoint" --parameter "Architecture=$arch" \
  --defer-mappings "$out/mappings.json" | tee "$out/deploy.txt"
log "streamdex up $config (what the endpoint's CloudFormation left out)"
"$STREAMDEX" up "$config" | tee "$out/up.txt"
log "ready: streamdex run $config --functions target/lambda --mappings $out/mappings.json"
