"""A LlamaIndex FunctionAgent (an AgentWorkflow) with one tool, on llama-index's OpenAI or
Anthropic LLM. FunctionAgent streams by default; `--whole` asks for whole answers
(`streaming=False`).    llamaindex_agent.py [--api openai|anthropic] [--whole]

LlamaIndex has a virtual environment of its own (requirements-llamaindex.lock): its OpenAI LLM
pins openai<3 (openai-agents needs openai>=3), and its Anthropic LLM passes `temperature`, which
the anthropic SDK refuses from 1.0 on, so that venv keeps anthropic 0.125."""

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from common import LIMIT, SYSTEM, TOOL_SET, TRAVEL, USER, final, refused, run_exec  # noqa: E402
from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402


def exec(command: str) -> str:  # noqa: A001 - the tool's name
    """Run a shell command."""
    return run_exec(command)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--api", choices=["openai", "anthropic"], default="openai")
    p.add_argument("--whole", action="store_true")
    a = p.parse_args()
    if a.api == "openai":
        from llama_index.llms.openai import OpenAI
        llm = OpenAI(model="gpt-4o-mini", max_retries=2)
    else:
        from llama_index.llms.anthropic import Anthropic
        llm = Anthropic(model="claude-haiku-4-5", max_retries=2)
    functions = list(TRAVEL) if TOOL_SET == "travel" else [exec]
    tools = [FunctionTool.from_defaults(fn=f) for f in functions]
    agent = FunctionAgent(tools=tools, llm=llm, system_prompt=SYSTEM, streaming=not a.whole)
    iterations = {"max_iterations": LIMIT} if LIMIT else {}
    try:
        response = await agent.run(user_msg=USER, **iterations)
        final(str(response))
    except Exception as e:  # the refusal, or the workflow's iteration limit
        return refused(e)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
