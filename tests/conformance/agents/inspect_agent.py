"""An inspect_ai task solved by its `react()` agent with one tool, run with `inspect eval`:
    inspect eval inspect_agent.py --model openai/gpt-4o-mini [--epochs 3]
    inspect eval inspect_agent.py --model anthropic/claude-haiku-4-5"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import SYSTEM, USER, run_exec  # noqa: E402
from inspect_ai import Task, task  # noqa: E402
from inspect_ai.agent import react  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.scorer import includes  # noqa: E402
from inspect_ai.tool import tool  # noqa: E402


@tool(name="exec")
def exec_tool():
    async def execute(command: str) -> str:
        """Run a shell command.

        Args:
            command: The command line.
        """
        return run_exec(command)

    return execute


@task
def reflex():
    return Task(
        dataset=[Sample(input=USER, target="a.txt")],
        solver=react(prompt=SYSTEM, tools=[exec_tool()]),
        scorer=includes(),
    )
