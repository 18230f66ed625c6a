"""A LangChain agent (`create_agent`, a LangGraph graph) with one tool, on ChatOpenAI or
ChatAnthropic, whole or streamed.    langchain_agent.py [--api openai|anthropic] [--stream]"""

import sys

from common import STEPS, SYSTEM, USER, arguments, refused, run_exec
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
    agent = create_agent(model, tools=[exec_tool], system_prompt=SYSTEM)
    config = {"recursion_limit": 2 * STEPS + 1}
    try:
        state = agent.invoke({"messages": [{"role": "user", "content": USER}]}, config=config)
        print(state["messages"][-1].content)
    except Exception as e:  # the refusal, or the graph's recursion limit
        return refused(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
