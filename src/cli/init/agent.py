"""An example agent: the official openai SDK, one tool, and the loop that runs it until the model
answers. `harness exec` starts it with OPENAI_BASE_URL pointing at a scripted model, and the
scenario's prompts in HARNESS_SYSTEM / HARNESS_USER. Replace it with your own agent's command."""

import json
import os

from openai import OpenAI


def get_weather(city: str) -> str:
    return f"Sunny, 22 °C in {city}."


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city today.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]

client = OpenAI()
messages = [
    {"role": "system", "content": os.environ.get("HARNESS_SYSTEM", "You are a helpful assistant.")},
    {"role": "user", "content": os.environ.get("HARNESS_USER", "What is the weather in Paris today?")},
]
for _ in range(10):
    message = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS).choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    if not message.tool_calls:
        print(message.content)
        break
    for call in message.tool_calls:
        try:
            result = get_weather(**json.loads(call.function.arguments))
        except Exception as e:  # the model's mistake goes back to it
            result = f"Error: {e}"
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
