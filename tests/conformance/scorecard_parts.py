"""docs/scorecard.md in two parts: the frameworks' scorecard, then the coding agents' (from the
line `## Coding agents` on). Each part is made by its own part of the conformance suite.

    scorecard_parts.py write DOC frameworks|coding FILE   put FILE in as that part, keep the other
    scorecard_parts.py check DOC frameworks|coding FILE   is that part of DOC what FILE says?

`check` compares a part byte for byte: the coding agents put facts of the machine they run on
into their prompts (Claude Code the kernel's release, Gemini CLI the date), and agent.sh makes
those the same everywhere (coding-agents/fixed_env.c). Prints a unified diff and exits 1 when
the part differs; exits 2 on bad use."""

import difflib
import os
import sys
from pathlib import Path

MARK = "## Coding agents"


def split(text: str) -> tuple[str, str]:
    """The frameworks' part and the coding agents' part (empty when the document has none)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.rstrip("\n") == MARK:
            return "".join(lines[:i]), "".join(lines[i:])
    return text, ""


def join(frameworks: str, coding: str) -> str:
    if not coding:
        return frameworks
    return frameworks.rstrip("\n") + "\n\n" + coding


def main() -> int:
    if len(sys.argv) != 5 or sys.argv[1] not in ("write", "check") or sys.argv[3] not in ("frameworks", "coding"):
        print(__doc__, file=sys.stderr)
        return 2
    verb, doc, part, file = sys.argv[1], Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    new = file.read_text(encoding="utf-8")
    if part == "coding" and not new.startswith(MARK + "\n"):
        print(f"scorecard_parts: {file} does not start with the line `{MARK}`", file=sys.stderr)
        return 2
    old = doc.read_text(encoding="utf-8") if doc.exists() else ""
    frameworks, coding = split(old)
    if verb == "write":
        text = join(new, coding) if part == "frameworks" else join(frameworks, new)
        tmp = doc.with_name(doc.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, doc)
        return 0
    have = frameworks if part == "frameworks" else coding
    # The frameworks' part ends where the coding agents' begins: compare it without the blank
    # line that join() puts between them.
    if part == "frameworks" and coding:
        have, new = have.rstrip("\n") + "\n", new.rstrip("\n") + "\n"
    if have == new:
        return 0
    sys.stdout.writelines(
        difflib.unified_diff(
            have.splitlines(keepends=True), new.splitlines(keepends=True), f"{doc} ({part})", "now"
        )
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
