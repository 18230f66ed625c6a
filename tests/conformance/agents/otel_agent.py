"""The hand-written Chat Completions loop of openai_sdk.py with OpenTelemetry tracing on, as a
team instruments its agent: the official openai SDK wrapped by one of the instrumentation
packages users install, spans exported over OTLP/HTTP (protobuf, the Python SDK's only HTTP
encoding) to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the loop inside an `invoke_agent` span, and
with --tool-spans each tool call in an `execute_tool` span (GenAI conventions).

    otel_agent.py --instrumentation openai-v2|openinference|traceloop [--stream] [--tool-spans]

openai-v2 records message content only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
(the suite sets `span_only`); OpenInference and Traceloop record it by default."""

import argparse
import json
import sys

import openai
from common import STEPS, SYSTEM, USER, call_plain, final, plain_tools, refused
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode


def instrument(name, provider):
    if name == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    elif name == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=provider)


def complete(client, messages, tools, stream):
    """One call: the assistant message as a dict (content, tool_calls), whole or streamed."""
    if not stream:
        m = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools).choices[0].message
        return m.model_dump(exclude_none=True)
    text, calls = [], {}
    chunks = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools,
                                            stream=True, stream_options={"include_usage": True})
    for chunk in chunks:
        for choice in chunk.choices:
            d = choice.delta
            if d.content:
                text.append(d.content)
            for t in d.tool_calls or []:
                c = calls.setdefault(t.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                c["id"] = t.id or c["id"]
                if t.function and t.function.name:
                    c["function"]["name"] += t.function.name
                if t.function and t.function.arguments:
                    c["function"]["arguments"] += t.function.arguments
    message = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def run_tool(tracer, call, tool_spans):
    name, arguments = call["function"]["name"], call["function"]["arguments"]

    def result():
        try:
            return call_plain(name, json.loads(arguments or "{}"))
        except Exception as e:  # the tool's failure goes back to the model, as text
            return f"Error: {e}"

    if not tool_spans:
        return result()
    with tracer.start_as_current_span(f"execute_tool {name}", attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call["id"], "gen_ai.tool.call.arguments": arguments or "{}",
    }) as span:
        text = result()
        span.set_attribute("gen_ai.tool.call.result", text)
        if text.startswith("Error"):
            span.set_status(Status(StatusCode.ERROR, text))
        return text


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--instrumentation", choices=["openai-v2", "openinference", "traceloop"], required=True)
    p.add_argument("--stream", action="store_true")
    p.add_argument("--tool-spans", action="store_true")
    a = p.parse_args()
    provider = TracerProvider(resource=Resource.create({"service.name": f"conformance-{a.instrumentation}"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    instrument(a.instrumentation, provider)
    tracer = trace.get_tracer("conformance.agent")
    client = openai.OpenAI(max_retries=2)
    tools = [{"type": "function", "function": {"name": n, "description": d, "parameters": s}}
             for n, d, s, _ in plain_tools()]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    rc = 0
    with tracer.start_as_current_span("invoke_agent conformance", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "conformance",
    }):
        try:
            for _ in range(STEPS):
                message = complete(client, messages, tools, a.stream)
                messages.append(message)
                if not message.get("tool_calls"):
                    final(message.get("content"))
                    break
                for call in message["tool_calls"]:
                    messages.append({"role": "tool", "tool_call_id": call["id"],
                                     "content": run_tool(tracer, call, a.tool_spans)})
        except openai.BadRequestError as e:
            rc = refused(e)
    provider.shutdown()  # every span exported before the process ends
    return rc


if __name__ == "__main__":
    sys.exit(main())
