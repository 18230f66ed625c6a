"""Check an instrumented agent's OpenTelemetry trace, as `harness import` read it, against
harness's own trace of the same run (inferred from the agent's requests, `harness exec
--traces`), field by field:

- the tool calls in order: tool, arguments, failed or not, result;
- each model answer: its finish, its text, how many calls it asked for, and its token counts
  (or, where the spans recorded none, the import saying they are unknown);
- the provider errors the agent met (their kinds), the messages the agent added mid-loop
  (nudges: role and text), and how the run ended (outcome and iterations).

Not compared: ids (harness's trace names calls by the script's ids, the wire by its own),
times, stream chunk counts, `run_start` (the agent's cap and the offered tools, which most
instrumentations do not record), the task as a user turn (harness's trace starts from it), and
which rule read a failure (an instrumentation that drops Anthropic's `is_error` leaves the text
to read; the failure itself is compared). Calls harness's trace skipped as never sent (the agent
ended first) may follow in the import, seen run by their spans: they must be the calls of
harness's last answer, tool and arguments.

    check_otlp.py INFERRED.jsonl IMPORTED.jsonl     exit 0 and one line saying what agreed"""

import json
import sys


def read(path):
    events = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    return [e for e in events if "kind" in e]  # an imported trace starts with its header


def view(events):
    calls, order, tokens, answers, rest, unsent = {}, [], [], [], [], []
    asked = {}  # call id -> its arguments, as the answer asked for it
    for e in events:
        # A call the agent never sent a result of (it ended first): whether it ran, harness's
        # trace cannot see, and a tool span may show (pydantic-ai's call over its retry limit).
        if e["kind"] == "tool_call_skipped" and e["reason"].startswith("the agent ended without sending"):
            unsent.append((e["name"], asked.get(e["id"])))
        if e["kind"] == "tool_call_start":
            calls[e["id"]] = {"tool": e["name"], "args": json.dumps(e["args"], sort_keys=True), "ok": None, "result": None}
            order.append(e["id"])
        elif e["kind"] == "tool_call_end" and e["id"] in calls:
            calls[e["id"]].update(ok=e["ok"], result=e.get("output", e.get("error")))
        elif e["kind"] == "model_response":
            for c in e.get("calls", []):
                args = json.loads(c["args"]) if isinstance(c["args"], str) else c["args"]
                asked[c["id"]] = json.dumps(args, sort_keys=True)
            # None: the span recorded no usage, and the import says so (tokens_unknown).
            tokens.append(None if e.get("tokens_unknown") else (e["input_tokens"], e["output_tokens"]))
            answers.append({"finish": e["finish"], "text": e.get("text"), "calls": len(e.get("calls", []))})
        elif e["kind"] == "provider_error":
            rest.append(("provider_error", e["fault"]))
        elif e["kind"] == "message_injected":
            rest.append(("nudge", e["role"], e["text"]))
        elif e["kind"] == "outcome":
            rest.append(("outcome", e["outcome"], e["iterations"]))
    return [calls[i] for i in order], tokens, answers, rest, unsent


def main():
    inferred, imported = view(read(sys.argv[1])), view(read(sys.argv[2]))
    problems = []
    if len(inferred[0]) == 0:
        problems.append("harness's own trace has no tool call: nothing to compare")
    # The calls harness could not see run may follow in the import, seen run by their spans.
    extra = imported[0][len(inferred[0]):]
    if inferred[0] != imported[0][:len(inferred[0])] or len(extra) > len(inferred[4]) or [(c["tool"], c["args"]) for c in extra] != inferred[4][:len(extra)]:
        problems.append(f"calls differ:\n  harness:  {inferred[0]}\n  imported: {imported[0]}")
    known = [(h, i) for h, i in zip(inferred[1], imported[1]) if i is not None]
    if len(inferred[1]) != len(imported[1]) or any(h != i for h, i in known):
        problems.append(f"tokens per answer differ:\n  harness:  {inferred[1]}\n  imported: {imported[1]}")
    if inferred[2] != imported[2]:
        problems.append(f"answers differ (finish, text, calls asked for):\n  harness:  {inferred[2]}\n  imported: {imported[2]}")
    if inferred[3] != imported[3]:
        problems.append(f"provider errors, nudges or the outcome differ:\n  harness:  {inferred[3]}\n  imported: {imported[3]}")
    if problems:
        print("\n".join(problems))
        return 1
    failed = sum(1 for c in inferred[0] if c["ok"] is False)
    unknown = len(inferred[1]) - len(known)
    said = f" ({unknown} not recorded, said unknown)" if unknown else ""
    if extra:
        said += f" ({len(extra)} more seen run by the spans alone)"
    ending = next((r for r in inferred[3] if r[0] == "outcome"), ("outcome", "none", 0))
    print(f"{len(inferred[0])} calls ({failed} failed) with their results, {len(inferred[1])} answers with their tokens{said}, and the end ({ending[1]} after {ending[2]}) agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
