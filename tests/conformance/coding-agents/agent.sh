#!/usr/bin/env bash
# Run one coding agent headless on the task `harness exec`/`harness suite` hands over:
#
#   agent.sh claude|codex|opencode|gemini|gemini-auto|aider
#
# Each run gets a throwaway work folder (a README.md in it) and HOME, with telemetry,
# update checks and every other non-essential request off, and the agent pointed at harness
# through its documented custom-endpoint setting: Claude Code ANTHROPIC_BASE_URL (Messages),
# Codex CLI a `model_providers` entry with wire_api = "responses", opencode an
# openai-compatible provider in opencode.json (Chat Completions), Gemini CLI
# GOOGLE_GEMINI_BASE_URL (the Gemini API, streamed), aider OPENAI_BASE_URL through litellm
# (Chat Completions, no tools).
#
# The agent's own log — its JSON event stream (Claude Code stream-json, `codex exec --json`,
# `opencode run --format json`) or, for aider, its chat history — is written to
# `$AGENT_LOG_DIR/<scenario stem>.<agent>.log` when AGENT_LOG_DIR is set; agent_logs.py reads it
# for check_card.py. The agents are the pinned ones of package.json (npm ci) and
# ../requirements-aider.lock (CODING_AIDER, the venv's aider).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
name="${1:?agent.sh: which agent? claude, codex, opencode, gemini, gemini-auto or aider}"
: "${HARNESS_USER:?agent.sh: HARNESS_USER is not set (run me through harness exec or harness suite)}"
: "${HARNESS_BASE_URL:?agent.sh: HARNESS_BASE_URL is not set (run me through harness exec or harness suite)}"
bin="$here/node_modules"
stem="$(basename "${HARNESS_SCENARIO:-run}" .toml)"
# One folder per agent and case, at a path of its own (not mktemp's random one): the agents put
# their folder into their prompts and their tools' errors into results, which the card quotes
# and counts; a fixed path keeps the scorecard the same from run to run and machine to machine.
work="/tmp/harness-coding-agents/$name/$stem"
rm -rf "$work"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/project"
printf '# A project\n\nNothing here yet.\n' >"$work/project/README.md"
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share" \
    XDG_CACHE_HOME="$work/home/.cache" XDG_STATE_HOME="$work/home/.local/state" TZ=UTC LANG=C.UTF-8 \
    SHELL=/bin/bash
# The machine facts the agents write into their prompts, the same on every machine and day
# (fixed_env.c): the kernel release (Claude Code's "OS Version") and the date (Claude Code's
# month, Gemini CLI's weekday), which harness counts in every request's tokens. The clock
# starts at a fixed day and runs on; SHELL above is the other such fact.
if ! cc -shared -fPIC -O2 -o "$work/fixed_env.so" "$here/fixed_env.c" -ldl; then
    echo "agent.sh: cannot build fixed_env.c with cc (the machine's C compiler)" >&2
    exit 2
fi
export LD_PRELOAD="$work/fixed_env.so" FIXED_ENV_RELEASE="6.1.0-harness" \
    FIXED_ENV_OFFSET="$(($(date -u -d 2026-01-15T12:00:00Z +%s) - $(date -u +%s)))"
# Written where check_card.py reads it as the agent goes (a case stopped by its timeout keeps it).
log="$work/agent.log"
if [ -n "${AGENT_LOG_DIR:-}" ]; then log="$AGENT_LOG_DIR/$stem.$name.log"; fi
model="suite-model"
cd "$work/project"
rc=0
case "$name" in
    claude)
        # Root may run --dangerously-skip-permissions only inside a sandbox it is told of.
        IS_SANDBOX=1 ANTHROPIC_API_KEY=sk-ant-harness-dummy DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
            DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
            "$bin/@anthropic-ai/claude-code-linux-x64/claude" -p "$HARNESS_USER" \
            --dangerously-skip-permissions --max-turns 30 --model claude-sonnet-4-6 \
            --output-format stream-json --verbose <&- >"$log" || rc=$?
        ;;
    codex)
        mkdir -p "$HOME/.codex"
        cat >"$HOME/.codex/config.toml" <<EOF
model = "$model"
model_provider = "harness"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.harness]
name = "harness"
base_url = "$HARNESS_BASE_URL/v1"
wire_api = "responses"
env_key = "HARNESS_API_KEY"

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
EOF
        CODEX_HOME="$HOME/.codex" HARNESS_API_KEY=harness-dummy \
            "$bin/.bin/codex" exec --skip-git-repo-check --json "$HARNESS_USER" </dev/null >"$log" || rc=$?
        ;;
    opencode)
        mkdir -p "$XDG_CONFIG_HOME/opencode"
        cat >"$XDG_CONFIG_HOME/opencode/opencode.json" <<EOF
{
  "\$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "model": "harness/$model",
  "small_model": "harness/$model",
  "permission": { "*": "allow" },
  "provider": {
    "harness": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "harness",
      "options": { "baseURL": "$HARNESS_BASE_URL/v1", "apiKey": "harness-dummy" },
      "models": { "$model": { "name": "$model", "tool_call": true, "limit": { "context": 200000, "output": 8192 } } }
    }
  }
}
EOF
        # The task on stdin: given as an argument it arrives wrapped in quotes. --title spares
        # the title request a run without one sends first.
        OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_SHARE=1 \
            OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_CLAUDE_CODE=1 \
            OPENCODE_DISABLE_EXTERNAL_SKILLS=1 \
            "$bin/opencode-linux-x64/bin/opencode" run --format json --auto --title task \
            < <(printf %s "$HARNESS_USER") >"$log" || rc=$?
        ;;
    gemini | gemini-auto)
        # API-key auth chosen in settings (with a base URL set and none chosen it picks one it
        # then refuses, exit 41); the folder trusted (else exit 55); usage statistics off (else
        # it reports to play.googleapis.com). `-m` skips the routing call it makes first;
        # gemini-auto makes it (a small model asked for JSON by a schema, without tools).
        pin=(-m "$model")
        if [ "$name" = gemini-auto ]; then pin=(); fi
        mkdir -p "$HOME/.gemini"
        cat >"$HOME/.gemini/settings.json" <<EOF
{
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false }
}
EOF
        # Its prompt names where its bundled skills are: the packages are reached through a
        # link at a fixed path, and node keeps the link's path (--preserve-symlinks), so the
        # prompt does not depend on where the repository is.
        # (Replaced by a rename, which is atomic: cases run side by side start through it.)
        link=/tmp/harness-coding-agents/node_modules
        if [ "$(readlink "$link" 2>/dev/null || true)" != "$bin" ]; then
            ln -sfn "$bin" "$link.$$" && mv -Tf "$link.$$" "$link"
        fi
        # Its shell tool ends each result with the command's process id ("Process Group PGID:
        # 14219"), and harness counts those bytes in every later request: with the machine's
        # process ids the tokens moved with how far the ids had counted (pid_max is often
        # 32768, so 3, 4 or 5 digits). It runs in a process-id namespace of its own whose ids
        # start at 10000, so every id has five digits: directly where that is allowed (root
        # with the capability), else inside a user namespace of its own.
        # shellcheck disable=SC2016 # the inner script expands its own arguments
        pidns=(--pid --fork --mount-proc --kill-child sh -c
            'echo 9999 >/proc/sys/kernel/ns_last_pid || exit 97; "$@"; exit $?' sh)
        if unshare "${pidns[@]}" true 2>/dev/null; then
            pidns=(unshare "${pidns[@]}")
        elif unshare --user --map-root-user "${pidns[@]}" true; then
            pidns=(unshare --user --map-root-user "${pidns[@]}")
        else
            echo "agent.sh: cannot run Gemini CLI in a process-id namespace (unshare --pid, with" \
                "or without --user); its tool results name process ids, whose digits would move" \
                "the token counts" >&2
            exit 2
        fi
        NODE_OPTIONS="--preserve-symlinks --preserve-symlinks-main" \
            GEMINI_API_KEY=harness-dummy GOOGLE_GEMINI_BASE_URL="$HARNESS_BASE_URL" GEMINI_CLI_TRUST_WORKSPACE=true \
            GEMINI_CLI_HOME="$HOME" "${pidns[@]}" node /tmp/harness-coding-agents/node_modules/@google/gemini-cli/bundle/gemini.js \
            -p "$HARNESS_USER" "${pin[@]}" --approval-mode yolo \
            --output-format stream-json </dev/null >"$log" || rc=$?
        ;;
    aider)
        aider="${CODING_AIDER:?agent.sh: CODING_AIDER names the aider of requirements-aider.lock}"
        # litellm fetches its model-price file unless a copy is in aider's cache.
        mkdir -p "$HOME/.aider/caches"
        prices="$(dirname "$aider")/../lib/python3*/site-packages/litellm/model_prices_and_context_window_backup.json"
        # shellcheck disable=SC2086 # the glob names one file
        cp $prices "$HOME/.aider/caches/model_prices_and_context_window.json"
        OPENAI_API_KEY=sk-harness-dummy LITELLM_LOCAL_MODEL_COST_MAP=True AIDER_ANALYTICS_DISABLE=true \
            "$aider" --message "$HARNESS_USER" --yes-always --no-git --no-auto-commits --no-check-update \
            --analytics-disable --model "openai/$model" --no-show-model-warnings --no-pretty \
            --no-fancy-input --no-show-release-notes --chat-history-file "$log" README.md </dev/null || rc=$?
        ;;
    *)
        echo "agent.sh: unknown agent $name (claude, codex, opencode, gemini, gemini-auto, aider)" >&2
        exit 2
        ;;
esac
# The agent's own log on stdout too, for harness suite's per-case output file, then how its
# log says the run ended (the last line, which a crashed case's card quotes).
cat "$log"
python3 "$here/agent_logs.py" "${name%-auto}" "$log" | tail -n 1
exit "$rc"
