"""A pydantic-ai Agent with one tool, on OpenAI Chat Completions or Anthropic, whole or
streamed.    pydantic_ai_agent.py [--api openai|anthropic] [--stream]"""

import sys

from common import LIMIT, SYSTEM, TOOL_SET, TRAVEL, USER, arguments, final, refused, run_exec
from pydantic_ai import Agent
from pydantic_ai.usage import UsageLimits


def main():
    a = arguments("openai", "anthropic")
    model = "openai-chat:gpt-4o-mini" if a.api == "openai" else "anthropic:claude-haiku-4-5"
    agent = Agent(model, instructions=SYSTEM)

    if TOOL_SET == "travel":
        for f in TRAVEL:
            agent.tool_plain(f)
    else:
        @agent.tool_plain(name="exec")
        def exec_tool(command: str) -> str:
            """Run a shell command."""
            return run_exec(command)

    limits = UsageLimits(request_limit=LIMIT) if LIMIT else None
    try:
        if a.stream:
            with agent.run_stream_sync(USER, usage_limits=limits) as result:
                final("".join(result.stream_text(delta=True)))
        else:
            final(agent.run_sync(USER, usage_limits=limits).output)
    except Exception as e:  # the refusal, or pydantic-ai giving up on the tool's retries
        return refused(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
