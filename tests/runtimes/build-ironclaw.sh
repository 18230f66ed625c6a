#!/usr/bin/env bash
# Build IronClaw's v1 loop at the `ironclaw` profile's commit, from crates.io packages only:
#
#   tests/runtimes/build-ironclaw.sh SOURCE DIR
#
# SOURCE is a clone of https://github.com/nearai/ironclaw (a URL or a local repository), DIR
# where the checkout and its build go. Needs Rust's nightly toolchain (the crate asks for 1.96)
# and about 10 GB; 25 minutes to an hour on two cores (25 here, its crates fetched). Prints the
# binary's path, for IRONCLAW_BIN.
set -euo pipefail
source="${1:?build-ironclaw.sh SOURCE DIR}"
dir="${2:?build-ironclaw.sh SOURCE DIR}"
commit=5b307e2c920e
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if [ ! -d "$dir/ironclaw/.git" ]; then
    git clone -q --no-checkout "$source" "$dir/ironclaw"
fi
cd "$dir/ironclaw"
git checkout -q "$commit"
# build.rs builds this WASM channel with a nested cargo when its folder exists; the headless
# CLI does not use it.
if [ -d channels-src/telegram ]; then
    mv channels-src/telegram "$dir/telegram-channel-aside"
fi
cargo +nightly build --locked -p ironclaw_legacy --bin ironclaw-legacy \
    --no-default-features --features libsql >&2
echo "$dir/ironclaw/target/debug/ironclaw-legacy"
