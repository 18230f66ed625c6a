#!/usr/bin/env bash
# One headless turn of IronClaw's v1 loop (the commit the `ironclaw` profile reproduces,
# 5b307e2c920e) against the model harness serves: `harness exec`/`harness suite` run this with
# OPENAI_BASE_URL, OPENAI_API_KEY and HARNESS_USER set. IRONCLAW_BIN names the `ironclaw-legacy`
# binary built as tests/runtimes/README.md says.
#
# Each run gets its own HOME (IronClaw keeps its database, lock and settings under ~/.ironclaw),
# a libSQL file database, a master key in the environment (there is no OS keychain here), the
# local tools (`shell` among them, visible only under the `local_dev` runtime profile) without a
# container sandbox, approvals granted, and every background service that would call the model
# or listen on a port switched off. The model is the registry's `openai` provider (Chat
# Completions), which reads harness's variables as they are.
set -euo pipefail
bin="${IRONCLAW_BIN:?ironclaw.sh: IRONCLAW_BIN names the ironclaw-legacy binary (tests/runtimes/README.md)}"
: "${HARNESS_USER:?ironclaw.sh: HARNESS_USER is not set (run me through harness exec or harness suite)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export HOME="$work" LLM_BACKEND=openai OPENAI_MODEL="${OPENAI_MODEL:-suite-model}" \
    DATABASE_BACKEND=libsql LIBSQL_PATH="$work/ironclaw.db" \
    SECRETS_MASTER_KEY=0000000000000000000000000000000000000000000000000000000000000001 \
    ONBOARD_COMPLETED=true ALLOW_LOCAL_TOOLS=true SANDBOX_ENABLED=false BUILDER_ENABLED=false \
    AGENT_MAX_TOOL_ITERATIONS="${AGENT_MAX_TOOL_ITERATIONS:-50}" \
    HEARTBEAT_ENABLED=false ROUTINES_ENABLED=false EMBEDDING_ENABLED=false GATEWAY_ENABLED=false \
    HTTP_ENABLED=false SIGNAL_ENABLED=false WASM_CHANNELS_ENABLED=false CLAUDE_CODE_ENABLED=false \
    ACP_ENABLED=false MEMORY_HYGIENE_ENABLED=false LLM_RESPONSE_CACHE_ENABLED=false \
    IRONCLAW_RUNTIME_PROFILE=local_dev RUST_LOG="${RUST_LOG:-warn}"
cd "$work"
rc=0
"$bin" --cli-only --no-onboard --auto-approve --runtime-profile local_dev -m "$HARNESS_USER" </dev/null || rc=$?
exit "$rc"
