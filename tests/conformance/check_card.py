"""Check a report card against what the agent says it did.

    check_card.py CARD.json LOG_DIR SUITE_DIR

CARD.json is `harness suite --json` of one agent; LOG_DIR holds the agent's own log of each case
(common.py writes it: the tools it ran, its final answer, or the error that stopped it; for a
coding agent, `<case>.<agent>.log` is the agent's own event stream or history, which
coding-agents/agent_logs.py reads into the same events);
SUITE_DIR the suite's scenarios (their `[suite]` answers). For every case:

- the verdict agrees with the log: `recovered` / `finished` — the agent's final answer holds the
  case's answer; `ended_without_answer` — no final answer holds it (the agent may log that it
  gave up: an exception it caught looks, from outside, like a loop that stopped); `looped_to_cap` —
  it was stopped by the server's iteration cap; `crashed`, `wrongly_stopped`, `hung` — no final
  answer holds the case's answer (a crash or a hang "after the model answered" — an agent that
  answered, then exited non-zero or never exited — may);
- `not_exercised` — the case's premise did not hold, and the log shows it: a call meant to fail
  that "read as a success" was run by the agent's tool (it logged a run), a valid call that
  "failed" was not (the agent ran fewer tools than harness saw calls);
- harness counted as many successful tool calls, over all the case's conversations, as the
  agent ran: a tool failure harness read as a success (or the other way round) is a misreading. The calls of the model's last answer
  may be missing from harness' count when the agent ran them and then stopped (its turn limit)
  without sending their results.

Prints one line per case that disagrees and a summary; exits 1 when any does, 2 when the
inputs cannot be read or hold no card."""

import json
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "coding-agents"))
import agent_logs  # noqa: E402  (beside this file, not a package)


def events_of(log_dir: Path, slug: str) -> list[dict]:
    """The case's events: common.py's JSON lines, or a coding agent's own log read for them."""
    log = log_dir / f"{slug}.jsonl"
    if log.exists():
        return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    for agent in agent_logs.READERS:
        own = log_dir / f"{slug}.{agent}.log"
        if own.exists():
            return agent_logs.read(agent, own)
    return []


def main() -> int:
    card_path, log_dir, suite_dir = (Path(a) for a in sys.argv[1:4])
    answers = {}
    for p in sorted(suite_dir.glob("*.toml")):
        with open(p, "rb") as f:
            answers[p.stem] = tomllib.load(f)["suite"]["answer"]
    results = json.loads(card_path.read_text(encoding="utf-8"))
    # The successful calls harness read in every conversation of a case (a task retried after
    # a fault, a compaction's fresh start): the agent's log covers them all.
    read_all: dict[str, int] = {}
    for f in results["files"]:
        for c in f.get("cases") or []:
            slug = c["id"].split("@")[0].rsplit("/", 1)[-1]
            m = c["metrics"]
            read_all[slug] = read_all.get(slug, 0) + m["tool_calls"] - m["tool_failures"]
    checked, problems = 0, []
    for f in results["files"]:
        for c in f.get("cases") or []:
            card = c.get("card")
            if not card:
                continue
            checked += 1
            slug = c["id"].split("@")[0].rsplit("/", 1)[-1]
            events = events_of(log_dir, slug)
            finals = [e.get("text") or "" for e in events if e["event"] == "final"]
            stopped = [e["error"] for e in events if e["event"] == "stopped"]
            ran = sum(1 for e in events if e["event"] == "tool")
            answer = answers[slug]
            answered = bool(finals) and answer in finals[-1]
            verdict = card["verdict"]
            said = f"{slug}: harness says {verdict}"
            if verdict in ("recovered", "finished") and not answered:
                problems.append(f"{said}, but the agent's final answer {finals[-1:]!r} lacks {answer!r}")
            elif verdict == "ended_without_answer" and answered:
                problems.append(f"{said}, but the agent answered {finals[-1]!r}")
            elif verdict == "looped_to_cap" and not any("iteration cap" in s for s in stopped):
                problems.append(f"{said}, but the agent was not stopped by the cap (stopped: {stopped[-1:]!r}, final: {finals[-1:]!r})")
            elif verdict in ("crashed", "hung") and answered and "after the model answered" not in (card.get("detail") or ""):
                problems.append(f"{said}, but the agent answered {finals[-1]!r}")
            elif verdict == "wrongly_stopped" and answered:
                problems.append(f"{said}, but the agent answered {finals[-1]!r}")
            metrics = c["metrics"]
            detail = card.get("detail") or ""
            if verdict == "not_exercised" and "read as a success" in detail and ran == 0:
                problems.append(f"{said} ({detail}), but the agent ran no tool")
            elif verdict == "not_exercised" and " failed" in detail and ran >= metrics["tool_calls"]:
                problems.append(f"{said} ({detail}), but the agent ran every call ({ran} of {metrics['tool_calls']})")
            read = read_all[slug]
            # Calls of the model's last answer whose results the agent never sent (its turn
            # limit ended it after running them) cannot be read from its requests.
            unsent = 0
            for e in reversed(c.get("trace") or []):
                if e["kind"] == "model_request":
                    break
                if e["kind"] == "model_response":
                    unsent = len(e.get("calls") or [])
                    break
            if not read <= ran <= read + unsent:
                problems.append(f"{slug}: harness read {read} successful tool call(s); the agent ran {ran}")
    if checked == 0:
        print(f"check_card: {card_path} holds no card", file=sys.stderr)
        return 2
    if not any(log_dir.glob("*.jsonl")) and not any(log_dir.glob("*.log")):
        print(f"check_card: the agent logged nothing in {log_dir}: it never ran (see its card)", file=sys.stderr)
        return 2
    for p in problems:
        print(f"      {p}")
    print(f"check_card: {checked} cases, {len(problems)} disagreements")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
