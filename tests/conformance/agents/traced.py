"""Run a conformance agent with OpenTelemetry on, as a team instruments theirs: a tracer provider
exporting over OTLP/HTTP (protobuf, the Python SDK's HTTP encoding) to
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (`harness exec --collect` sets it), the instrumentations named
turned on, then the agent script run in this process and the spans flushed before it ends.

    traced.py --instrument NAME[,NAME…] [--pydantic-ai-version N] [--agent-span] -- AGENT.py ARGS…

With --agent-span the whole run is inside an `invoke_agent` span (GenAI conventions), as a team
wraps a hand-written loop so that its model calls are one trace.

Instrumentations:
  langchain      OpenInference's LangChain instrumentation (LangChain and LangGraph)
  openai         OpenInference's OpenAI client instrumentation
  openai-agents  OpenInference's openai-agents instrumentation (the SDK's tracing left on)
  anthropic      OpenInference's Anthropic client instrumentation
  anthropic-sdk  nothing to turn on: the anthropic SDK (2.x) traces itself once a tracer
                 provider is set; this asks for its message content
                 (ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content)
  pydantic-ai    pydantic-ai's own instrumentation, `Agent.instrument_all` with content, in
                 the event format --pydantic-ai-version names

The anthropic SDK's own spans (metadata only, by default) are on in every run that uses it, as
they are for a team that sets a tracer provider."""

import argparse
import os
import runpy
import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def instrument(names, provider, pydantic_version):
    for name in names:
        if name == "langchain":
            from openinference.instrumentation.langchain import LangChainInstrumentor
            LangChainInstrumentor().instrument(tracer_provider=provider)
        elif name == "openai":
            from openinference.instrumentation.openai import OpenAIInstrumentor
            OpenAIInstrumentor().instrument(tracer_provider=provider)
        elif name == "openai-agents":
            from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
            OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
            os.environ["AGENT_TRACING"] = "1"  # openai_agents.py leaves the SDK's tracing on
        elif name == "anthropic":
            from openinference.instrumentation.anthropic import AnthropicInstrumentor
            AnthropicInstrumentor().instrument(tracer_provider=provider)
        elif name == "anthropic-sdk":
            os.environ["ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE"] = "content"
        elif name == "pydantic-ai":
            from pydantic_ai import Agent
            from pydantic_ai.models.instrumented import InstrumentationSettings
            Agent.instrument_all(InstrumentationSettings(
                tracer_provider=provider, version=pydantic_version, include_content=True))
        else:
            sys.exit(f"traced.py: unknown instrumentation {name!r}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--instrument", required=True)
    p.add_argument("--pydantic-ai-version", type=int, default=5)
    p.add_argument("--agent-span", action="store_true")
    p.add_argument("agent", nargs=argparse.REMAINDER)
    a = p.parse_args()
    agent = a.agent[1:] if a.agent[:1] == ["--"] else a.agent
    if not agent:
        sys.exit("traced.py: no agent script after --")
    names = a.instrument.split(",")
    provider = TracerProvider(resource=Resource.create({"service.name": f"conformance-{a.instrument}"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    instrument(names, provider, a.pydantic_ai_version)
    script = agent[0]
    sys.argv = agent
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    code = 0
    span = None
    if a.agent_span:
        span = trace.get_tracer("conformance.agent").start_as_current_span(
            "invoke_agent conformance",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "conformance"})
        span.__enter__()
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        if span is not None:
            span.__exit__(None, None, None)
        provider.shutdown()  # every span exported before the process ends
    return code


if __name__ == "__main__":
    sys.exit(main())
