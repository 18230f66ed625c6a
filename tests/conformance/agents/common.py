"""What every conformance agent shares: the prompt and tool `harness exec` hands over, and the
one tool, `exec`, which lists files for a command and fails without one."""

import argparse
import os
import sys

SYSTEM = os.environ.get("HARNESS_SYSTEM", "You are a coding agent. Use tools to act.")
USER = os.environ.get("HARNESS_USER", "List the files in the project.")
DESCRIPTION = "Run a shell command"
STEPS = 40


def arguments(*apis: str) -> argparse.Namespace:
    """The agent's command line: `--api` among `apis` (the first by default), and `--stream`."""
    p = argparse.ArgumentParser()
    if apis:
        p.add_argument("--api", choices=list(apis), default=apis[0])
    p.add_argument("--stream", action="store_true")
    return p.parse_args()


def run_exec(command: str) -> str:
    """Run a shell command (the scripted model calls it without one)."""
    if not command:
        raise ValueError("missing 'command' parameter")
    return "a.txt\nb.txt"


def refused(e: BaseException) -> int:
    """The server refused a request (iteration cap, script exhausted): the run ends here."""
    print(f"agent: stopped: {type(e).__name__}: {e}", file=sys.stderr)
    return 0
