"""Check an instrumented agent's OpenTelemetry trace, as `harness import` read it, against
harness's own trace of the same run (inferred from the agent's requests, `harness exec
--traces`): the same tool calls in the same order (tool, arguments, failed or not, result) and
the same token counts per model answer (or, where the spans recorded none, the import saying
they are unknown).

    check_otlp.py INFERRED.jsonl IMPORTED.jsonl     exit 0 and one line saying what agreed"""

import json
import sys


def read(path):
    events = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    return [e for e in events if "kind" in e]  # an imported trace starts with its header


def view(events):
    calls, order, tokens = {}, [], []
    for e in events:
        if e["kind"] == "tool_call_start":
            calls[e["id"]] = {"tool": e["name"], "args": json.dumps(e["args"], sort_keys=True), "ok": None, "result": None}
            order.append(e["id"])
        elif e["kind"] == "tool_call_end" and e["id"] in calls:
            calls[e["id"]].update(ok=e["ok"], result=e.get("output", e.get("error")))
        elif e["kind"] == "model_response":
            # None: the span recorded no usage, and the import says so (tokens_unknown).
            tokens.append(None if e.get("tokens_unknown") else (e["input_tokens"], e["output_tokens"]))
    # Ids are left out: harness's trace names calls by the script's ids, the wire by its own.
    return [calls[i] for i in order], tokens


def main():
    inferred, imported = view(read(sys.argv[1])), view(read(sys.argv[2]))
    problems = []
    if len(inferred[0]) == 0:
        problems.append("harness's own trace has no tool call: nothing to compare")
    if inferred[0] != imported[0]:
        problems.append(f"calls differ:\n  harness:  {inferred[0]}\n  imported: {imported[0]}")
    known = [(h, i) for h, i in zip(inferred[1], imported[1]) if i is not None]
    if len(inferred[1]) != len(imported[1]) or any(h != i for h, i in known):
        problems.append(f"tokens per answer differ:\n  harness:  {inferred[1]}\n  imported: {imported[1]}")
    if problems:
        print("\n".join(problems))
        return 1
    failed = sum(1 for c in inferred[0] if c["ok"] is False)
    unknown = len(inferred[1]) - len(known)
    said = f" ({unknown} not recorded, said unknown)" if unknown else ""
    print(f"{len(inferred[0])} calls ({failed} failed) with their results, and {len(inferred[1])} answers' tokens agree{said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
