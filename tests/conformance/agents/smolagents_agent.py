"""A smolagents ToolCallingAgent with one tool, on an OpenAI-compatible server (OpenAIServerModel)
or on Anthropic through LiteLLMModel, whole or streamed.
    smolagents_agent.py [--api openai|anthropic] [--stream]"""

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network for the price list

from common import LIMIT, TOOL_SET, TRAVEL, USER, arguments, final, refused, run_exec  # noqa: E402
from smolagents import LiteLLMModel, OpenAIServerModel, Tool, ToolCallingAgent, tool  # noqa: E402


class Exec(Tool):
    name = "exec"
    description = "Run a shell command"
    inputs = {"command": {"type": "string", "description": "The command line."}}
    output_type = "string"

    def forward(self, command: str) -> str:
        return run_exec(command)


def main():
    a = arguments("openai", "anthropic")
    if a.api == "openai":
        model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=os.environ["OPENAI_BASE_URL"],
                                  api_key=os.environ["OPENAI_API_KEY"])
    else:
        model = LiteLLMModel(model_id="anthropic/claude-haiku-4-5", api_base=os.environ["ANTHROPIC_BASE_URL"],
                             api_key=os.environ["ANTHROPIC_API_KEY"])
    tools = [tool(f) for f in TRAVEL] if TOOL_SET == "travel" else [Exec()]
    agent = ToolCallingAgent(tools=tools, model=model, **({"max_steps": LIMIT} if LIMIT else {}), stream_outputs=a.stream, verbosity_level=0)
    try:
        final(agent.run(USER))
    except Exception as e:
        return refused(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
