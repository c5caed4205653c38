#!/usr/bin/env bash
# Runs the whole test suite: unit, property and integration tests of every crate, the
# corpus STF tests through `p4jet stf --strict-ports`, and the network-namespace port
# tests (they need root; without it they say why they are skipped).
set -euo pipefail
cd "$(dirname "$0")"
cargo test --workspace --locked --profile ci "$@"
