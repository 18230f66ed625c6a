"""The peer of `cargo bench --bench run_corpus`: inspect_ai's `react()` agent on its mock model.

    python inspect_react.py SAMPLES LOG_DIR

Runs one `eval()` of a task with SAMPLES samples. Each sample is five model turns answered by
inspect_ai's `mockllm` provider: four calls of an `exec` tool (run by the agent, its output
added to the conversation), then a call of `submit` with the answer, which the task's
`includes()` scorer checks. That is the shape of a scripted scenario replayed by harness: model
turns from a script, tools run, the run scored. The eval log is written to LOG_DIR (inspect's
default format), as a user's run writes it.

Prints one line, `samples=N turns=T passed=P seconds=S`: S is the wall time of the `eval()`
call alone (imports and interpreter start excluded); the benchmark takes the difference between
a large and a small run to get the cost of the turns alone."""

import sys
import time

from inspect_ai import Task, eval
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.tool import tool

TOOL_TURNS = 4


@tool(name="exec")
def exec_tool():
    async def execute(command: str) -> str:
        """Run a shell command.

        Args:
            command: The command line.
        """
        return f"ran: {command}\nexit 0"

    return execute


def script(input, tools, tool_choice, config):
    """The model's answer to a conversation: the next scripted turn, from how many tool
    results the conversation already holds."""
    done = sum(1 for m in input if m.role == "tool")
    if done < TOOL_TURNS:
        output = ModelOutput.for_tool_call(
            "mockllm/model", "exec", {"command": f"make step-{done + 1}"}
        )
    else:
        output = ModelOutput.for_tool_call(
            "mockllm/model", "submit", {"answer": "fixed"}
        )
    # Usage given, so the mock does not count tokens with tiktoken (whose encoding it would
    # download): the peer is spared that work, which makes the comparison kinder to it.
    output.usage = ModelUsage(
        input_tokens=100 * (done + 1), output_tokens=10, total_tokens=100 * (done + 1) + 10
    )
    return output


def main() -> None:
    samples, log_dir = int(sys.argv[1]), sys.argv[2]
    task = Task(
        dataset=[
            Sample(input=f"Fix the build, case {i}.", target="fixed", id=i)
            for i in range(samples)
        ],
        solver=react(tools=[exec_tool()]),
        scorer=includes(),
    )
    model = get_model("mockllm/model", custom_outputs=script)
    start = time.perf_counter()
    (log,) = eval(task, model=model, log_dir=log_dir, display="none")
    seconds = time.perf_counter() - start
    if log.status != "success" or log.results is None:
        sys.exit(f"inspect eval ended with status {log.status}")
    passed = sum(
        1
        for s in log.samples or []
        if any(score.value == "C" for score in (s.scores or {}).values())
    )
    turns = sum(
        sum(1 for m in s.messages if m.role == "assistant") for s in log.samples or []
    )
    print(f"samples={samples} turns={turns} passed={passed} seconds={seconds:.6f}")


if __name__ == "__main__":
    main()
