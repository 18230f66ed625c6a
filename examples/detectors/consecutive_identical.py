#!/usr/bin/env python3
"""A loop detector for `harness sweep --detector exec:PATH[:k=2,3]`: fires when k identical
tool calls (same tool, same parsed arguments) come in a row, like the built-in
`consecutive-identical`. One JSON line per run on stdin, one answer line per run on stdout."""
import json
import sys

params = dict(arg.split("=", 1) for arg in sys.argv[1:])
k = int(params.get("k", "3"))

for line in sys.stdin:
    run = json.loads(line)
    fired, streak, last, index = None, 0, None, 0
    for event in run["events"]:
        if event["kind"] != "tool_call_start":
            continue
        call = (event["name"], json.dumps(event["args"], sort_keys=True))
        streak = streak + 1 if call == last else 1
        last = call
        if streak >= k and fired is None:
            fired = index
        index += 1
    print(json.dumps({"fired": fired, "verdict": "stop"}), flush=True)
