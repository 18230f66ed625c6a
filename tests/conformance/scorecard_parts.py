"""docs/scorecard.md in three parts: the frameworks' scorecard, then the coding agents' (from the
line `## Coding agents` on), then the IronClaw profile beside the real runtime (from the line
`## IronClaw: the profile beside the real runtime` on). Each part is made by its own part of the
conformance suite.

    scorecard_parts.py write DOC frameworks|coding|runtimes FILE   put FILE in as that part
    scorecard_parts.py check DOC frameworks|coding|runtimes FILE   is that part of DOC what FILE says?

`check` compares a part byte for byte (but for the blank lines between parts): the coding
agents put facts of the machine they run on into their prompts (Claude Code the kernel's release, Gemini CLI the date), and agent.sh makes
those the same everywhere (coding-agents/fixed_env.c). Prints a unified diff and exits 1 when
the part differs; exits 2 on bad use."""

import difflib
import os
import sys
from pathlib import Path

PARTS = ["frameworks", "coding", "runtimes"]
# The line each part after the first begins with.
MARKS = {"coding": "## Coding agents", "runtimes": "## IronClaw: the profile beside the real runtime"}


def split(text: str) -> dict[str, str]:
    """Each part's text (empty for a part the document does not have)."""
    lines = text.splitlines(keepends=True)
    starts = {"frameworks": 0}
    for i, line in enumerate(lines):
        for part, mark in MARKS.items():
            if line.rstrip("\n") == mark and part not in starts:
                starts[part] = i
    order = sorted(starts.items(), key=lambda kv: kv[1])
    parts = {p: "" for p in PARTS}
    for n, (part, at) in enumerate(order):
        stop = order[n + 1][1] if n + 1 < len(order) else len(lines)
        parts[part] = "".join(lines[at:stop])
    return parts


def join(parts: dict[str, str]) -> str:
    present = [parts[p].rstrip("\n") + "\n" for p in PARTS if parts[p]]
    return "\n".join(present)


def main() -> int:
    if len(sys.argv) != 5 or sys.argv[1] not in ("write", "check") or sys.argv[3] not in PARTS:
        print(__doc__, file=sys.stderr)
        return 2
    verb, doc, part, file = sys.argv[1], Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    new = file.read_text(encoding="utf-8")
    if part in MARKS and not new.startswith(MARKS[part] + "\n"):
        print(f"scorecard_parts: {file} does not start with the line `{MARKS[part]}`", file=sys.stderr)
        return 2
    old = doc.read_text(encoding="utf-8") if doc.exists() else ""
    parts = split(old)
    if verb == "write":
        parts[part] = new
        tmp = doc.with_name(doc.name + ".tmp")
        tmp.write_text(join(parts), encoding="utf-8")
        os.replace(tmp, doc)
        return 0
    # Parts are compared without the blank line join() puts between them.
    have, new = parts[part].rstrip("\n") + "\n", new.rstrip("\n") + "\n"
    if have == new:
        return 0
    sys.stdout.writelines(
        difflib.unified_diff(
            have.splitlines(keepends=True),
            new.splitlines(keepends=True),
            f"{doc} ({part})",
            "now",
        )
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
