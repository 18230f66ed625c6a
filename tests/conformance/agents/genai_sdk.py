"""A hand-written tool loop on Google's official google-genai SDK (the Gemini API), whole or
streamed. It reaches harness through GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY, which `harness
exec` sets, as the SDK reads them.
    genai_sdk.py [--stream]"""

import sys

from google import genai
from google.genai import errors, types
from common import STEPS, SYSTEM, USER, arguments, call_plain, final, in_order, plain_tools, refused

TOOLS = [types.Tool(function_declarations=[
    types.FunctionDeclaration(name=n, description=d, parameters_json_schema=p) for n, d, p, _ in plain_tools()
])]


def main():
    a = arguments()
    client = genai.Client(http_options=types.HttpOptions(retry_options=types.HttpRetryOptions(attempts=3)))
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=TOOLS,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents = [types.Content(role="user", parts=[types.Part(text=USER)])]
    try:
        for _ in range(STEPS):
            if a.stream:
                parts = []
                for chunk in client.models.generate_content_stream(
                        model="gemini-2.5-flash", contents=contents, config=config):
                    if chunk.candidates and chunk.candidates[0].content and chunk.candidates[0].content.parts:
                        parts.extend(chunk.candidates[0].content.parts)
                content = types.Content(role="model", parts=parts)
            else:
                response = client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
                content = response.candidates[0].content
            contents.append(content)
            calls = [p.function_call for p in content.parts or [] if p.function_call]
            if not calls:
                final("".join(p.text for p in content.parts or [] if p.text))
                return 0
            results = []
            for c in calls:
                try:
                    response = {"output": call_plain(c.name, dict(c.args or {}))}
                except Exception as e:
                    response = {"error": str(e)}
                results.append(types.Part(function_response=types.FunctionResponse(id=c.id, name=c.name, response=response)))
            contents.append(types.Content(role="user", parts=in_order(results)))
    except errors.ClientError as e:
        return refused(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
