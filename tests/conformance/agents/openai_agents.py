"""An openai-agents Agent with one function tool, run by Runner: the Responses API (the SDK's
default) or Chat Completions, whole or streamed.
    openai_agents.py [--api responses|chat] [--stream]"""

import asyncio
import os
import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from agents.exceptions import AgentsException, MaxTurnsExceeded
from common import LIMIT, SYSTEM, TOOL_SET, TRAVEL, USER, arguments, final, refused, run_exec
from openai import APIStatusError, AsyncOpenAI


@function_tool(name_override="exec")
def exec_tool(command: str) -> str:
    """Run a shell command.

    Args:
        command: The command line.
    """
    return run_exec(command)


async def main():
    a = arguments("responses", "chat")
    # The SDK's own tracing (to OpenAI's platform) off, unless an OpenTelemetry instrumentation
    # reads its spans (traced.py sets AGENT_TRACING).
    if not os.environ.get("AGENT_TRACING"):
        set_tracing_disabled(True)
    client = AsyncOpenAI(max_retries=2)
    model = "gpt-4o-mini" if a.api == "responses" else OpenAIChatCompletionsModel("gpt-4o-mini", client)
    tools = [function_tool(f) for f in TRAVEL] if TOOL_SET == "travel" else [exec_tool]
    agent = Agent(name="coder", instructions=SYSTEM, tools=tools, model=model)
    turns = {"max_turns": LIMIT} if LIMIT else {}
    try:
        if a.stream:
            result = Runner.run_streamed(agent, USER, **turns)
            async for _event in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, USER, **turns)
        final(result.final_output)
    except (APIStatusError, MaxTurnsExceeded, AgentsException) as e:
        return refused(e)
    return 0


if __name__ == "__main__":
    from agents import set_default_openai_client
    set_default_openai_client(AsyncOpenAI(max_retries=2), use_for_tracing=False)
    sys.exit(asyncio.run(main()))
