"""A hand-written tool loop on the official openai SDK: Chat Completions or Responses, whole
or streamed.    openai_sdk.py [--api chat|responses] [--stream]"""

import json
import sys

import openai
from common import STEPS, SYSTEM, USER, arguments, call_plain, final, in_order, plain_tools, refused


def call_tool(name, arguments):
    try:
        return call_plain(name, json.loads(arguments or "{}"))
    except Exception as e:  # the tool's failure goes back to the model, as text
        return f"Error: {e}"


def chat(client, stream):
    tools = [{"type": "function", "function": {"name": n, "description": d, "parameters": p}}
             for n, d, p, _ in plain_tools()]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    for _ in range(STEPS):
        if stream:
            with client.chat.completions.stream(model="gpt-4o-mini", messages=messages, tools=tools) as s:
                for _event in s:
                    pass
                message = s.get_final_completion().choices[0].message
        else:
            message = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools).choices[0].message
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        if not message.tool_calls:
            final(message.content)
            return
        messages += in_order([{"role": "tool", "tool_call_id": c.id, "content": call_tool(c.function.name, c.function.arguments)}
                              for c in message.tool_calls])


def responses(client, stream):
    tools = [{"type": "function", "name": n, "description": d, "parameters": p} for n, d, p, _ in plain_tools()]
    items = [{"role": "user", "content": USER}]
    for _ in range(STEPS):
        if stream:
            with client.responses.stream(model="gpt-4o-mini", instructions=SYSTEM, input=items, tools=tools) as s:
                for _event in s:
                    pass
                response = s.get_final_response()
        else:
            response = client.responses.create(model="gpt-4o-mini", instructions=SYSTEM, input=items, tools=tools)
        calls = [o for o in response.output if o.type == "function_call"]
        items += [o.model_dump(exclude_none=True) for o in response.output]
        if not calls:
            final(response.output_text)
            return
        items += in_order([{"type": "function_call_output", "call_id": c.call_id, "output": call_tool(c.name, c.arguments)}
                           for c in calls])


def main():
    a = arguments("chat", "responses")
    client = openai.OpenAI(max_retries=2)
    try:
        (chat if a.api == "chat" else responses)(client, a.stream)
    except openai.BadRequestError as e:
        return refused(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
