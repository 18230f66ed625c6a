"""A LangChain agent (`create_agent`, a LangGraph graph) with one tool, on ChatOpenAI or
ChatAnthropic, whole or streamed.    langchain_agent.py [--api openai|anthropic] [--stream]"""

import sys

from common import LIMIT, SYSTEM, TOOL_SET, TRAVEL, USER, arguments, final, refused, run_exec
from langchain.agents import create_agent
from langchain_core.tools import tool


@tool("exec")
def exec_tool(command: str) -> str:
    """Run a shell command."""
    return run_exec(command)


def main():
    a = arguments("openai", "anthropic")
    if a.api == "openai":
        from langchain_openai import ChatOpenAI
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=2, streaming=a.stream)
    else:
        from langchain_anthropic import ChatAnthropic
        model = ChatAnthropic(model="claude-haiku-4-5", max_retries=2, streaming=a.stream)
    tools = [tool(f) for f in TRAVEL] if TOOL_SET == "travel" else [exec_tool]
    agent = create_agent(model, tools=tools, system_prompt=SYSTEM)
    config = {"recursion_limit": 2 * LIMIT + 1} if LIMIT else {}
    try:
        state = agent.invoke({"messages": [{"role": "user", "content": USER}]}, config=config)
        final(state["messages"][-1].content)
    except Exception as e:  # the refusal, or the graph's recursion limit
        return refused(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
