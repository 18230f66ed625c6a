// A Vercel AI SDK agent: `ToolLoopAgent` with the SDK's defaults (it stops after 20 steps), on
// the OpenAI provider (its default, the Responses API, or Chat Completions), the Anthropic
// provider or the Google one (the Gemini API), whole or streamed. The OpenAI and Anthropic
// providers read OPENAI_BASE_URL / ANTHROPIC_BASE_URL; the Google provider reads no base URL
// from the environment, so the agent hands it GOOGLE_GEMINI_BASE_URL's, with the API version
// it expects in it (`/v1beta`), as a team pointing it elsewhere does.
//     node ai_sdk_agent.mjs [--api openai|openai-chat|anthropic|google] [--stream]
// With AGENT_TELEMETRY=proto or json, the SDK's own OpenTelemetry spans (experimental_telemetry,
// inputs and outputs recorded) are exported over OTLP/HTTP by the OpenTelemetry JS SDK 3.x
// (@opentelemetry/exporter-trace-otlp-proto or -http) to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// flushed before the process ends.
// Tools and log as the Python agents' common.py: `exec`, or with AGENT_TOOLS=travel
// `search_flights` and `read_file`; with AGENT_LOG_DIR, one JSON line per tool run, the final
// answer, or the error that stopped the run, in <dir>/<scenario stem>.jsonl.
import { appendFileSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { ToolLoopAgent, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { z } from "zod";

const SYSTEM = process.env.HARNESS_SYSTEM ?? "You are a coding agent. Use tools to act.";
const USER = process.env.HARNESS_USER ?? "List the files in the project.";
const api = process.argv.includes("--api") ? process.argv[process.argv.indexOf("--api") + 1] : "openai";
const stream = process.argv.includes("--stream");

function log(event, fields) {
  const dir = process.env.AGENT_LOG_DIR;
  if (!dir) return;
  const scenario = process.env.HARNESS_SCENARIO ?? "run";
  const stem = basename(scenario, extname(scenario));
  appendFileSync(join(dir, `${stem}.jsonl`), JSON.stringify({ event, ...fields }) + "\n");
}

const tools =
  process.env.AGENT_TOOLS === "travel"
    ? {
        search_flights: tool({
          description: "Search flights between two airports on a date.",
          inputSchema: z.object({
            origin: z.string().describe("The airport to leave from."),
            destination: z.string().describe("The airport to fly to."),
            date: z.string().describe("The day of travel, YYYY-MM-DD."),
          }),
          execute: async ({ origin, destination, date }) => {
            log("tool", { name: "search_flights", args: { origin, destination, date } });
            return `3 flights from ${origin} to ${destination} on ${date}: 07:10, 12:45, 18:30`;
          },
        }),
        read_file: tool({
          description: "Read a text file.",
          inputSchema: z.object({ path: z.string().describe("The file's path.") }),
          execute: async ({ path }) => {
            log("tool", { name: "read_file", args: { path } });
            return `(the contents of ${path})`;
          },
        }),
      }
    : {
        exec: tool({
          description: "Run a shell command",
          inputSchema: z.object({ command: z.string().describe("The command line.") }),
          execute: async ({ command }) => {
            if (!command) throw new Error("missing 'command' parameter");
            log("tool", { name: "exec", args: { command } });
            return "a.txt\nb.txt";
          },
        }),
      };

const gemini = process.env.GOOGLE_GEMINI_BASE_URL;
const model =
  api === "anthropic"
    ? createAnthropic()("claude-haiku-4-5")
    : api === "google"
      ? createGoogleGenerativeAI(gemini ? { baseURL: `${gemini.replace(/\/$/, "")}/v1beta` } : {})("gemini-2.5-flash")
      : api === "openai-chat"
      ? createOpenAI().chat("gpt-4o-mini")
      : createOpenAI()("gpt-4o-mini");

// OpenTelemetry, when asked: a tracer provider the AI SDK's spans go to (its global one).
let provider;
let telemetry;
if (process.env.AGENT_TELEMETRY) {
  const { context, trace } = await import("@opentelemetry/api");
  const { AsyncLocalStorageContextManager } = await import("@opentelemetry/context-async-hooks");
  const { BatchSpanProcessor, TracerProvider } = await import("@opentelemetry/sdk-trace");
  const { resourceFromAttributes } = await import("@opentelemetry/resources");
  const { OTLPTraceExporter } =
    process.env.AGENT_TELEMETRY === "json"
      ? await import("@opentelemetry/exporter-trace-otlp-http")
      : await import("@opentelemetry/exporter-trace-otlp-proto");
  provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": "conformance-ai-sdk" }),
    // SDK 3.x's BatchSpanProcessor reads no OTEL_BSP_* variable: the suite's batch size by hand.
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(),
        maxExportBatchSize: Number(process.env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE ?? 512),
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  telemetry = { isEnabled: true, recordInputs: true, recordOutputs: true };
}

const agent = new ToolLoopAgent({ model, instructions: SYSTEM, tools, experimental_telemetry: telemetry });
try {
  let text;
  if (stream) {
    let failure;
    const result = await agent.stream({ prompt: USER, onError: ({ error }) => (failure = error) });
    for await (const _part of result.textStream);
    if (failure) throw failure;
    text = await result.text;
  } else {
    text = (await agent.generate({ prompt: USER })).text;
  }
  log("final", { text: text ?? "" });
  console.log(text);
} catch (e) {
  // The server refused a request (iteration cap, script exhausted), or the SDK gave up.
  log("stopped", { error: `${e?.name}: ${e?.message}` });
  console.error(`agent: stopped: ${e?.name}: ${e?.message}`);
} finally {
  await provider?.forceFlush();
  await provider?.shutdown();
}
