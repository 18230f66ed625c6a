"""An inspect_ai task solved by its `react()` agent with one tool, run with `inspect eval`:
    inspect eval inspect_agent.py --model openai/gpt-4o-mini [--epochs 3]
    inspect eval inspect_agent.py --model anthropic/claude-haiku-4-5"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import SYSTEM, TOOL_SET, USER, log, read_file, run_exec, search_flights  # noqa: E402
from inspect_ai import Task, task  # noqa: E402
from inspect_ai.agent import as_solver, react  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.scorer import includes  # noqa: E402
from inspect_ai.solver import Generate, TaskState, solver  # noqa: E402
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


@tool(name="search_flights")
def search_flights_tool():
    async def execute(origin: str, destination: str, date: str) -> str:
        """Search flights between two airports on a date.

        Args:
            origin: The airport to leave from.
            destination: The airport to fly to.
            date: The day of travel, YYYY-MM-DD.
        """
        return search_flights(origin, destination, date)

    return execute


@tool(name="read_file")
def read_file_tool():
    async def execute(path: str) -> str:
        """Read a text file.

        Args:
            path: The file's path.
        """
        return read_file(path)

    return execute


@solver
def logged_react(tools):
    """`react()` as the task's solver, its answer or the error that ended it logged as the
    other conformance agents log theirs (inspect records both in its own eval log)."""
    agent = as_solver(react(prompt=SYSTEM, tools=tools))

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        try:
            state = await agent(state, generate)
        except Exception as e:
            log("stopped", error=f"{type(e).__name__}: {e}")
            raise
        log("final", text=state.output.completion)
        return state

    return solve


@task
def reflex():
    tools = [search_flights_tool(), read_file_tool()] if TOOL_SET == "travel" else [exec_tool()]
    return Task(
        dataset=[Sample(input=USER, target="a.txt")],
        solver=logged_react(tools),
        scorer=includes(),
    )
