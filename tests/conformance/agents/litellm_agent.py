"""A hand-written tool loop over litellm.completion, to OpenAI or Anthropic, whole or streamed.
    litellm_agent.py [--api openai|anthropic] [--stream]"""

import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network for the price list
import litellm  # noqa: E402
from common import STEPS, SYSTEM, USER, arguments, call_plain, final, plain_tools, refused

TOOLS = [{"type": "function", "function": {"name": n, "description": d, "parameters": p}}
         for n, d, p, _ in plain_tools()]


def main():
    a = arguments("openai", "anthropic")
    if a.api == "openai":
        model, base = "openai/gpt-4o-mini", os.environ["OPENAI_BASE_URL"]
    else:
        model, base = "anthropic/claude-haiku-4-5", os.environ["ANTHROPIC_BASE_URL"]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    try:
        for _ in range(STEPS):
            r = litellm.completion(model=model, api_base=base, messages=messages, tools=TOOLS, stream=a.stream, max_tokens=1024)
            if a.stream:
                r = litellm.stream_chunk_builder(list(r), messages=messages)
            message = r.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                final(message.content)
                return 0
            for c in message.tool_calls:
                try:
                    out = call_plain(c.function.name, json.loads(c.function.arguments or "{}"))
                except Exception as e:
                    out = f"Error: {e}"
                messages.append({"role": "tool", "tool_call_id": c.id, "content": out})
    except litellm.exceptions.BadRequestError as e:
        return refused(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
