"""What every conformance agent shares: the prompt `harness exec` hands over, the tools, and the
agent's own log.

Tools: by default one, `exec`, which lists files for a command and fails without one. With
AGENT_TOOLS=travel, two of a travel agent's own instead — `search_flights(origin, destination,
date)` and `read_file(path)` — which `harness suite` drives through its portable scenarios. Each
framework wraps these plain typed functions its own way (its schemas, its validation); the
hand-written loops call them with the arguments as sent, as such loops do.

The log: with AGENT_LOG_DIR set, each run appends JSON lines to `<dir>/<scenario stem>.jsonl`
(the scenario is HARNESS_SCENARIO): every tool the agent ran (`{"event": "tool", …}`), its final
answer (`final`), or the error that stopped it (`stopped`). The conformance suite checks each
report card against it: what harness says the agent did is what the agent says it did."""

import argparse
import inspect
import json
import os
import sys
from pathlib import Path

SYSTEM = os.environ.get("HARNESS_SYSTEM", "You are a coding agent. Use tools to act.")
USER = os.environ.get("HARNESS_USER", "List the files in the project.")
DESCRIPTION = "Run a shell command"
STEPS = 40
# AGENT_REVERSE_RESULTS=1: send the results of one answer's parallel calls back in the other
# order than the calls (each still names its call's id), as some agents do.
REVERSE = os.environ.get("AGENT_REVERSE_RESULTS") == "1"


def in_order(results: list) -> list:
    """One answer's tool results in the order the agent sends them back."""
    return list(reversed(results)) if REVERSE else results
TOOL_SET = os.environ.get("AGENT_TOOLS", "exec")
# A framework's own turn limit: above the scenario's cap for the exec conformance cases (the
# served trace is then the scenario's, whatever the framework); the framework's default for the
# failure-mode suite, whose scorecard reports each framework's loop as its docs ship it.
LIMIT = None if TOOL_SET == "travel" else STEPS


def arguments(*apis: str) -> argparse.Namespace:
    """The agent's command line: `--api` among `apis` (the first by default), and `--stream`."""
    p = argparse.ArgumentParser()
    if apis:
        p.add_argument("--api", choices=list(apis), default=apis[0])
    p.add_argument("--stream", action="store_true")
    return p.parse_args()


def log(event: str, **fields) -> None:
    """Append one event to the run's log, when AGENT_LOG_DIR asks for one."""
    folder = os.environ.get("AGENT_LOG_DIR")
    if not folder:
        return
    stem = Path(os.environ.get("HARNESS_SCENARIO", "run")).stem
    with open(Path(folder) / f"{stem}.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": event, **fields}, default=str) + "\n")


def run_exec(command: str) -> str:
    """Run a shell command (the scripted model calls it without one)."""
    if not command:
        raise ValueError("missing 'command' parameter")
    log("tool", name="exec", args={"command": command})
    return "a.txt\nb.txt"


def search_flights(origin: str, destination: str, date: str) -> str:
    """Search flights between two airports on a date.

    Args:
        origin: The airport to leave from.
        destination: The airport to fly to.
        date: The day of travel, YYYY-MM-DD.
    """
    log("tool", name="search_flights", args={"origin": origin, "destination": destination, "date": date})
    return f"3 flights from {origin} to {destination} on {date}: 07:10, 12:45, 18:30"


def read_file(path: str) -> str:
    """Read a text file.

    Args:
        path: The file's path.
    """
    log("tool", name="read_file", args={"path": path})
    return f"(the contents of {path})"


TRAVEL = [search_flights, read_file]


def schema_of(f) -> dict:
    """The JSON Schema of a travel tool's parameters (all strings, all required)."""
    names = list(inspect.signature(f).parameters)
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": names}


def plain_tools() -> list:
    """The tools as (name, description, parameters schema, function taking keyword arguments)."""
    if TOOL_SET == "travel":
        return [(f.__name__, f.__doc__.strip().splitlines()[0], schema_of(f), f) for f in TRAVEL]
    schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    return [("exec", DESCRIPTION, schema, lambda command="": run_exec(command))]


def call_plain(name: str, args) -> str:
    """Run a hand-written loop's tool call: the function with the arguments as sent. An unknown
    tool, arguments that are no object or a missing argument raise, as Python does."""
    for n, _, _, f in plain_tools():
        if n == name:
            if not isinstance(args, dict):
                raise TypeError(f"{name}() arguments must be an object, not {type(args).__name__}")
            return f(**args)
    raise KeyError(f"unknown tool {name!r}")


def final(text) -> None:
    """The run's answer: printed, and logged."""
    log("final", text="" if text is None else str(text))
    print(text)


def refused(e: BaseException) -> int:
    """The server refused a request (iteration cap, script exhausted), or the framework gave
    up: the run ends here."""
    log("stopped", error=f"{type(e).__name__}: {e}")
    print(f"agent: stopped: {type(e).__name__}: {e}", file=sys.stderr)
    return 0
