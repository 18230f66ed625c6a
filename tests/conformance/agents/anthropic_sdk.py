"""A hand-written tool loop on the official anthropic SDK, whole or streamed.
    anthropic_sdk.py [--stream]"""

import sys

import anthropic
from common import STEPS, SYSTEM, USER, arguments, call_plain, final, in_order, plain_tools, refused

TOOLS = [{"name": n, "description": d, "input_schema": p} for n, d, p, _ in plain_tools()]


def main():
    a = arguments()
    client = anthropic.Anthropic(max_retries=2)
    messages = [{"role": "user", "content": USER}]
    try:
        for _ in range(STEPS):
            kwargs = dict(model="claude-haiku-4-5", max_tokens=1024, system=SYSTEM, messages=messages, tools=TOOLS)
            if a.stream:
                with client.messages.stream(**kwargs) as s:
                    for _text in s.text_stream:
                        pass
                    message = s.get_final_message()
            else:
                message = client.messages.create(**kwargs)
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
            uses = [b for b in message.content if b.type == "tool_use"]
            if not uses:
                final("".join(b.text for b in message.content if b.type == "text"))
                return 0
            results = []
            for u in uses:
                try:
                    results.append({"type": "tool_result", "tool_use_id": u.id, "content": call_plain(u.name, u.input)})
                except Exception as e:
                    results.append({"type": "tool_result", "tool_use_id": u.id, "content": str(e), "is_error": True})
            messages.append({"role": "user", "content": in_order(results)})
    except anthropic.BadRequestError as e:
        return refused(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
