"""A smolagents ToolCallingAgent with one tool, on an OpenAI-compatible server, whole or
streamed.    smolagents_agent.py [--stream]"""

import argparse
import os
import sys

from common import STEPS, USER, refused, run_exec
from smolagents import OpenAIServerModel, Tool, ToolCallingAgent


class Exec(Tool):
    name = "exec"
    description = "Run a shell command"
    inputs = {"command": {"type": "string", "description": "The command line."}}
    output_type = "string"

    def forward(self, command: str) -> str:
        return run_exec(command)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--stream", action="store_true")
    a = p.parse_args()
    model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=os.environ["OPENAI_BASE_URL"],
                              api_key=os.environ["OPENAI_API_KEY"])
    agent = ToolCallingAgent(tools=[Exec()], model=model, max_steps=STEPS, stream_outputs=a.stream, verbosity_level=0)
    try:
        print(agent.run(USER))
    except Exception as e:
        return refused(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
