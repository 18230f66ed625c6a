"""Read a coding agent's own log into the events check_card.py compares a report card with.

    agent_logs.py AGENT LOG      print the log's events, one JSON object a line, then a line
                                 saying how the run ended (agent.sh prints it last, so a
                                 crashed case's card quotes it)

AGENT is claude, codex, opencode, gemini or aider; LOG what agent.sh wrote for one case: the
agent's JSON event stream (Claude Code `--output-format stream-json --verbose`, `codex exec
--json`, `opencode run --format json`, Gemini CLI `--output-format stream-json`) or aider's chat
history. The events, in common.py's words:

- `tool`: a tool the agent ran that worked, as its own log tells it — Claude Code a
  `tool_result` without `is_error`, Codex CLI a `command_execution` (or MCP call) that completed
  with exit code 0, opencode a `tool_use` whose state is `completed` (not its `invalid`
  stand-in for a call it could not take), Gemini CLI a `tool_result` whose status is
  `success`; aider runs no tools;
- `final`: the answer the agent ended with — Claude Code the `result` of a run that did not end
  in error, Codex CLI its last `agent_message` of a turn that completed, opencode the text after
  its last tool call or error, Gemini CLI the assistant text after its last tool call of a
  run whose `result` is a success, aider the reply after the task in its history;
- `stopped`: what ended it otherwise — Claude Code an error `result`, Codex CLI an `error` or a
  failed turn, opencode an `error` event, Gemini CLI an `error` event or a `result` that is
  no success, aider a notice that no answer came.

Only the standard library: the wrapper runs it with any python3."""

import json
import sys
from pathlib import Path


def _json_lines(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def claude(path: Path) -> list[dict]:
    events = []
    for e in _json_lines(path):
        if e.get("type") == "user":
            content = (e.get("message") or {}).get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result" and not block.get("is_error"):
                    events.append({"event": "tool", "id": block.get("tool_use_id")})
        elif e.get("type") == "result":
            text = e.get("result") or ""
            if e.get("is_error") or str(e.get("subtype", "")).startswith("error"):
                events.append({"event": "stopped", "error": text or str(e.get("subtype"))})
            else:
                events.append({"event": "final", "text": text})
    return events


def codex(path: Path) -> list[dict]:
    events, last_text = [], None
    for e in _json_lines(path):
        kind = e.get("type")
        item = e.get("item") or {}
        if kind == "item.completed":
            if item.get("type") == "command_execution":
                if item.get("status") == "completed" and item.get("exit_code") == 0:
                    events.append({"event": "tool", "command": item.get("command")})
            elif item.get("type") == "mcp_tool_call":
                if item.get("status") == "completed":
                    events.append({"event": "tool", "name": item.get("tool")})
            elif item.get("type") == "agent_message":
                last_text = item.get("text") or ""
        elif kind == "turn.completed":
            events.append({"event": "final", "text": last_text or ""})
            last_text = None
        elif kind in ("error", "turn.failed"):
            message = e.get("message") or (e.get("error") or {}).get("message") or kind
            events.append({"event": "stopped", "error": message})
    return events


def opencode(path: Path) -> list[dict]:
    events, texts = [], []
    for e in _json_lines(path):
        kind = e.get("type")
        part = e.get("part") or {}
        if kind == "step_start":
            texts = []
        elif kind == "tool_use":
            # `invalid` is opencode's stand-in for a call it could not take (arguments that
            # are not JSON, an unknown tool): it "completes" with the error as its output.
            state = part.get("state") or {}
            # A call that never ran (`error`: a stream cut in its middle) may be printed after
            # the answer of the step that followed; it ends no answer.
            if state.get("status") != "error":
                texts = []
            if state.get("status") == "completed" and part.get("tool") != "invalid":
                events.append({"event": "tool", "name": part.get("tool")})
        elif kind == "text":
            texts.append(part.get("text") or "")
        elif kind == "error":
            texts = []
            error = e.get("error") or {}
            message = (error.get("data") or {}).get("message") or error.get("name") or "error"
            events.append({"event": "stopped", "error": message})
    # The answer: what it said after its last tool call or error; a run that ended in an
    # error without saying more has none.
    ended_in_error = bool(events) and events[-1]["event"] == "stopped"
    if texts or not ended_in_error:
        events.append({"event": "final", "text": "".join(texts)})
    return events


def gemini(path: Path) -> list[dict]:
    events, texts = [], []
    for e in _json_lines(path):
        kind = e.get("type")
        if kind == "tool_use":
            texts = []
        elif kind == "tool_result":
            if e.get("status") == "success":
                events.append({"event": "tool", "id": e.get("tool_id")})
        elif kind == "message" and e.get("role") == "assistant":
            # Streamed: the pieces of one answer, in order (`delta`).
            texts.append(e.get("content") or "")
        elif kind == "error":
            texts = []
            events.append({"event": "stopped", "error": e.get("message") or "error"})
        elif kind == "result":
            error = e.get("error") or {}
            if e.get("status") == "success":
                events.append({"event": "final", "text": "".join(texts)})
            else:
                events.append({"event": "stopped", "error": error.get("message") or str(e.get("status"))})
    return events


def aider(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("#### ")]
    if not starts:
        return [{"event": "stopped", "error": "aider's history holds no task"}]
    reply = [line for line in lines[starts[-1] + 1 :] if not line.startswith(">")]
    notices = [line[1:].strip() for line in lines[starts[-1] + 1 :] if line.startswith(">")]
    text = "\n".join(reply).strip()
    if text:
        return [{"event": "final", "text": text}]
    said = next((n for n in notices if n and not n.startswith("Tokens:")), "no reply")
    return [{"event": "stopped", "error": said}]


READERS = {"claude": claude, "codex": codex, "opencode": opencode, "gemini": gemini, "aider": aider}


def read(agent: str, path: Path) -> list[dict]:
    """The events of one case's log of `agent` (see the module doc)."""
    return READERS[agent](path)


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in READERS:
        print(f"usage: agent_logs.py {'|'.join(READERS)} LOG", file=sys.stderr)
        return 2
    agent, path = sys.argv[1], Path(sys.argv[2])
    events = read(agent, path) if path.exists() else []
    for e in events:
        print(json.dumps(e))
    ran = sum(1 for e in events if e["event"] == "tool")
    end = next((e for e in reversed(events) if e["event"] in ("final", "stopped")), None)
    if end is None:
        how = "no answer and no error in its log"
    elif end["event"] == "final":
        text = " ".join(end["text"].split())
        how = f"answered «{text[:200]}{'…' if len(text) > 200 else ''}»"
    else:
        how = f"stopped: {end['error']}"
    print(f"{agent}: {ran} tool run(s) worked; {how}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
