//! OpenTelemetry traces out and in (issue 35): `--otlp` writes every case's trace as OTLP JSON,
//! byte for byte the same for any `--jobs`; `harness import` reads it back to the very trace
//! `--traces` writes; a sweep over it gives the CSV a sweep over the scenarios gives; and the
//! GenAI spans alone (what another tool reads) give the same calls, results and tokens.

use crate::support::Project;
use std::path::Path;

/// The bundled families of scenarios (TOML or JSON) the engine replays alone.
const FAMILIES: [&str; 9] = [
    "agentloop",
    "reflex",
    "ironclaw",
    "moltis",
    "intent-stall",
    "legit-retry",
    "truncation",
    "plan-step",
    "suite",
];

/// The scenario folders not exported here, and why: a new folder is one or the other.
const NOT_EXPORTED: [(&str, &str); 3] = [
    (
        "real",
        "imported transcripts, swept as transcripts in sweep.rs",
    ),
    ("record", "a live recording's scenario and its cassette"),
    (
        "serve",
        "served to black-box agents (serve.rs), not replayed by the engine alone",
    ),
];

#[test]
fn every_scenario_folder_is_exported_or_says_why_not() {
    for entry in std::fs::read_dir(crate::support::repo().join("scenarios")).expect("scenarios/") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            assert!(
                FAMILIES.contains(&name) || NOT_EXPORTED.iter().any(|(n, _)| *n == name),
                "scenarios/{name}: add it to FAMILIES, or to NOT_EXPORTED with the reason"
            );
        }
    }
}

/// A project of the families' scenarios and goldens: its case ids are a sweep's run ids.
fn project() -> Project {
    let p = Project::new();
    for f in FAMILIES {
        p.copy_from_repo(&format!("scenarios/{f}"), &format!("scenarios/{f}"));
        p.copy_from_repo(&format!("snapshots/{f}"), &format!("snapshots/{f}"));
    }
    p
}

fn run_otlp(p: &Project, jobs: &str, otlp: &str, traces: Option<&str>) {
    let mut args = vec!["run", "-q", "--jobs", jobs, "--otlp", otlp];
    if let Some(t) = traces {
        args.extend(["--traces", t]);
    }
    p.harness(&args).expect_code(0);
}

#[test]
fn the_export_is_deterministic_and_reads_back_as_the_same_trace() {
    let p = project();
    run_otlp(&p, "1", "one.jsonl", Some("traces"));
    run_otlp(&p, "2", "two.jsonl", None);
    let one = p.read("one.jsonl");
    assert_eq!(
        one,
        p.read("two.jsonl"),
        "--otlp differs between --jobs 1 and 2"
    );
    let cases = one.lines().count();
    assert!(cases > 100, "only {cases} cases exported");
    let imported = p.join("imported").to_string_lossy().into_owned();
    let out = p.join("one.jsonl").to_string_lossy().into_owned();
    p.harness(&["import", &out, "--out", &imported])
        .expect_code(0)
        .expect_stdout(&format!("{cases} run(s) written"));
    // Every run's events are the lines `--traces` wrote for its case.
    let traces = p.files("traces", ".jsonl");
    assert_eq!(traces.len(), cases);
    for rel in traces {
        let case = rel.trim_start_matches("traces/").trim_end_matches(".jsonl");
        let stem = harness::import::file_stem(&format!("one.jsonl#{case}"));
        let back = p.read(&format!("imported/{stem}.jsonl"));
        let (header, events) = back.split_once('\n').expect("a header line");
        assert!(header.contains("\"source\":\"otlp\""), "{header}");
        assert_eq!(
            events,
            p.read(&rel),
            "{case}: the imported trace is not the trace run wrote"
        );
    }
}

/// The detector's view of each run: per call its tool, arguments, failure and result, and
/// the tokens of each response.
fn views(runs: &[harness::import::Run]) -> Vec<(String, String)> {
    runs.iter()
        .map(|r| {
            let v = harness::detector::View::from_events(&r.events);
            let calls: Vec<String> = v
                .calls
                .iter()
                .map(|c| format!("{} {} failed={} {:?}", c.name, c.key, c.failed, c.result))
                .collect();
            (r.id.clone(), format!("{calls:#?}\n{:?}", v.responses))
        })
        .collect()
}

#[test]
fn sweeps_read_the_export_as_they_read_the_scenarios() {
    let p = project();
    run_otlp(&p, "2", "runs.jsonl", None);
    let export = p.join("runs.jsonl").to_string_lossy().into_owned();
    p.harness(&["sweep", "scenarios", "--out", "scenarios.csv"])
        .expect_code(0);
    p.harness(&["sweep", "runs.jsonl", "--out", "otlp.csv"])
        .expect_code(0);
    assert_eq!(
        p.read("otlp.csv"),
        p.read("scenarios.csv"),
        "a sweep over the export differs from one over the scenarios"
    );
    // And over the runs `import` wrote of it.
    p.harness(&["import", "runs.jsonl", "--out", "imported"])
        .expect_code(0);
    p.harness(&["sweep", "imported", "--out", "imported.csv"])
        .expect_code(0);
    assert_eq!(
        p.read("imported.csv"),
        p.read("scenarios.csv"),
        "a sweep over the imported export differs from one over the scenarios"
    );
    // The GenAI spans alone, without harness's own events, read as the same runs.
    let text = std::fs::read_to_string(Path::new(&export)).expect("the export");
    let exact = harness::import::otlp::import(&text, "runs.jsonl");
    let spans = harness::import::otlp::import_without_harness_events(&text, "runs.jsonl");
    assert!(exact.errors.is_empty() && spans.errors.is_empty());
    // A run without a model call is an agent span alone there: no run, and said (only
    // harness's own events show what such a run was).
    let called = |r: &&harness::import::Run| {
        r.events
            .iter()
            .any(|e| matches!(e.event, harness::trace::Event::ModelRequest { .. }))
    };
    let without = exact.runs.iter().filter(|r| !called(r)).count();
    assert!(
        without > 0,
        "the bundled scenarios have runs without a model call"
    );
    assert!(
        spans
            .warnings
            .iter()
            .any(|w| w.starts_with(&format!("{without} conversation(s) with an agent span"))),
        "{:?}",
        spans.warnings
    );
    let exact_runs: Vec<&harness::import::Run> = exact.runs.iter().filter(called).collect();
    assert_eq!(exact_runs.len(), spans.runs.len());
    let exact = harness::import::FileImport {
        runs: exact_runs.into_iter().cloned().collect(),
        ..Default::default()
    };
    // Except where the engine counted a result as a success whose text reads as a failure by
    // the rules `exec` reads an agent's results by (`Error: …`): the spans alone say nothing
    // else, and another tool (or `exec`) reads it failed; and the calls of one answer, which
    // the spans give in the model's order.
    let rules = harness::failure::FailureRules::default();
    let mut differ = Vec::new();
    let mut by_text = 0;
    for (a, b) in exact.runs.iter().zip(&spans.runs) {
        let (va, vb) = (
            harness::detector::View::from_events(&a.events),
            harness::detector::View::from_events(&b.events),
        );
        if views(std::slice::from_ref(a)) == views(std::slice::from_ref(b)) {
            continue;
        }
        // The same calls, each failed when the engine failed it or its text reads as failed,
        // and read in the model's order (the engine lists a batch's refused calls after the
        // ones it ran).
        let calls = |v: &harness::detector::View, by_text: bool| {
            let mut out: Vec<String> = v
                .calls
                .iter()
                .map(|c| {
                    let failed = c.failed || (by_text && rules.classify(None, &c.result).is_some());
                    format!("{} {} {failed} {:?}", c.name, c.key, c.result)
                })
                .collect();
            out.sort();
            out
        };
        let explained = va.responses == vb.responses && calls(&va, true) == calls(&vb, false);
        if explained {
            by_text += 1;
        } else {
            differ.push(a.id.clone());
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} runs read differently from their spans: {differ:?}",
        differ.len(),
        exact.runs.len()
    );
    assert!(
        by_text < exact.runs.len() / 10,
        "{by_text} runs read differently by their results' text or their calls' order: the export lost more than that"
    );
}

/// Every span id of an OTLP JSON line set to zeros (as some exporters write them).
fn zero_ids(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                if k == "spanId" || k == "parentSpanId" {
                    *x = serde_json::Value::from("0000000000000000");
                } else {
                    zero_ids(x);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(zero_ids),
        _ => {}
    }
}

#[test]
fn spans_with_all_zero_ids_are_each_read_and_said() {
    let p = Project::new();
    p.copy_from_repo("scenarios/reflex", "scenarios/reflex");
    p.harness(&["run", "-q", "--otlp", "runs.jsonl"]);
    let zeroed: String = p
        .read("runs.jsonl")
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("OTLP JSON");
            zero_ids(&mut v);
            format!("{v}\n")
        })
        .collect();
    p.write("zeroed.jsonl", zeroed);
    let run = p.harness(&["import", "zeroed.jsonl", "--out", "imported"]);
    run.expect_code(0);
    assert!(
        run.stderr.contains("share the id `0000000000000000`")
            && run.stderr.contains(": each span is read"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "name themselves as their parent, read as spans without one: `0000000000000000` ("
        ),
        "{}",
        run.stderr
    );
    let sweep = p.harness(&["sweep", "zeroed.jsonl", "--out", "zeroed.csv"]);
    sweep.expect_code(0);
    assert!(
        sweep.stderr.contains("note: zeroed.jsonl: ") && sweep.stderr.contains("each span is read"),
        "{}",
        sweep.stderr
    );
}

/// Per call (in start order) its tool, arguments (`None`: unknown), failure and result; per
/// answer its tokens (`None`: unknown).
type Seen = (
    Vec<(String, Option<String>, bool, String)>,
    Vec<Option<(u64, u64)>>,
);

fn seen(events: &[harness::trace::TimedEvent]) -> Seen {
    let calls = harness::detector::View::from_events(events)
        .calls
        .into_iter()
        .map(|c| {
            (
                c.name,
                (!c.args_unknown).then_some(c.key),
                c.failed,
                c.result,
            )
        })
        .collect();
    let tokens = events
        .iter()
        .filter_map(|e| match &e.event {
            harness::trace::Event::ModelResponse {
                input_tokens,
                output_tokens,
                tokens_unknown,
                ..
            } => Some((!tokens_unknown).then_some((*input_tokens, *output_tokens))),
            _ => None,
        })
        .collect();
    (calls, tokens)
}

/// Real agents traced by the instrumentations teams run (fixtures/otlp-instrumented, each with
/// the trace `harness exec` inferred from the same run's requests): each file imports as one
/// run with exec's calls, arguments, failures, results and tokens (unknown where the spans do
/// not record them), and says what it merged or could not see.
#[test]
fn instrumented_agents_import_as_exec_saw_them() {
    // (fixture, what its warnings say, a difference the spans cannot avoid)
    let cases: [(&str, &[&str], Option<&str>); 21] = [
        (
            "langchain-openai-with-openai-client",
            &[
                "3 by `openinference.instrumentation.langchain` and `openinference.instrumentation.openai`",
            ],
            None,
        ),
        (
            "langchain-anthropic-with-sdk-spans",
            &[
                "4 by `com.anthropic.sdk.python`",
                "6 tool result(s) sent to an Anthropic model",
            ],
            None,
        ),
        (
            "anthropic-openinference-stream-with-sdk-spans",
            &["2 by `com.anthropic.sdk.python` and `openinference.instrumentation.anthropic`"],
            None,
        ),
        ("ai-sdk-anthropic-stream", &[], None),
        (
            "openai-agents-chat-stream",
            &["3 model answer(s) without token counts"],
            None,
        ),
        (
            "openai-agents-responses-with-openai-client",
            &[
                "4 by `openinference.instrumentation.openai` and `openinference.instrumentation.openai_agents`",
            ],
            None,
        ),
        (
            "pydantic-ai-v2-anthropic",
            &["2 tool result(s) sent to an Anthropic model"],
            None,
        ),
        // pydantic-ai records a failed call's validation errors as they were; its OpenAI model
        // sends them wrapped in `{"error": …}`: the text differs, the failure does not, and
        // the import says so.
        (
            "pydantic-ai-v5-openai-stream",
            &["1 failed tool result(s) recorded by pydantic-ai 2.16 or later"],
            Some("result"),
        ),
        (
            "llamaindex-openai-stream",
            &["2 model-call span(s) that record no call"],
            None,
        ),
        (
            "smolagents-parallel-step-error",
            &["3 later model call(s) whose recorded input holds no answer"],
            None,
        ),
        (
            "openlit-openai-stream",
            &["2 streamed model answer(s) whose token counts OpenLIT estimated"],
            None,
        ),
        // OpenLLMetry's openai-agents spans on Chat Completions record no output: each answer
        // is the agent's copy in the next call's input, and the tool spans run its calls.
        (
            "openllmetry-openai-agents-chat",
            &["3 model answer(s) whose span recorded no output"],
            None,
        ),
        // OpenInference's google-genai spans name the answer's calls without their ids, and
        // results are Gemini's `{"output": …}` / `{"error": …}` objects.
        (
            "google-genai-openinference",
            &["1 model answer(s) whose span recorded no output, its calls without ids"],
            None,
        ),
        // OpenLLMetry's google-generativeai keeps a stream's last chunk alone: one call of two.
        (
            "openllmetry-google-genai-stream",
            &["1 model answer(s) whose span recorded no output"],
            None,
        ),
        // strands-agents as it ships: every message a span event, in Bedrock Converse blocks,
        // a tool's input and result events of its span; and with the latest conventions, one
        // `gen_ai.client.inference.operation.details` event a call. Nothing said missing.
        ("strands-openai-stream", &[], None),
        ("strands-openai-stream-latest-conventions", &[], None),
        // util-genai with content in events only: log records beside the spans.
        ("google-genai-otel-event-only", &[], None),
        // OpenLIT's input holds what was sent so far but the model's answers: the agent's two
        // nudges are read once each.
        (
            "openlit-openai-nudges",
            &["3 later model call(s) whose recorded input holds no answer"],
            None,
        ),
        // LiteLLM prints a streamed refusal at the cap as Python bytes (`scenario\'s`).
        (
            "litellm-anthropic-stream-capped",
            &["5 model answer(s) without token counts"],
            None,
        ),
        // OpenLLMetry's LangChain records the whole tool callback as the arguments, and an
        // Anthropic answer's `tool_use` blocks as text parts too.
        (
            "openllmetry-langchain-anthropic",
            &[
                "4 by `com.anthropic.sdk.python` and `opentelemetry.instrumentation.langchain`",
                "6 tool result(s) sent to an Anthropic model",
            ],
            None,
        ),
        (
            "traceloop-anthropic-stream-with-sdk-spans",
            &[
                "2 merged call(s) whose two spans record other token counts, one by an instrumentation known to miscount",
            ],
            None,
        ),
    ];
    let dir = crate::support::repo().join("fixtures/otlp-instrumented");
    for (name, says, differs) in cases {
        let text =
            std::fs::read_to_string(dir.join(format!("{name}.otlp.jsonl"))).expect("the fixture");
        let exec: Vec<harness::trace::TimedEvent> =
            std::fs::read_to_string(dir.join(format!("{name}.exec.jsonl")))
                .expect("its exec trace")
                .lines()
                .map(|l| serde_json::from_str(l).expect("a trace event"))
                .collect();
        // The anthropic SDK's traces do not record `is_error`: a team names what its tools
        // raise (`--failure missing`), as the conformance suite does.
        let patterns = if name.starts_with("traceloop-anthropic") {
            vec!["missing".to_owned()]
        } else {
            Vec::new()
        };
        let rules = harness::failure::FailureRules::new(&patterns, true).expect("rules");
        let got = harness::import::otlp::import_reading(&text, "f.jsonl", &rules);
        assert!(got.errors.is_empty(), "{name}: {:?}", got.errors);
        assert_eq!(
            got.runs.len(),
            1,
            "{name}: one run, no phantom ones: {:?}",
            got.runs.iter().map(|r| &r.id).collect::<Vec<_>>()
        );
        for s in says {
            assert!(
                got.warnings.iter().any(|w| w.contains(s)),
                "{name}: no warning says {s:?}: {:?}",
                got.warnings
            );
        }
        // The tools offered, where the spans list them (all but openai-agents' Chat Completions
        // under either instrumentation, and OpenLIT), are the agent's.
        let offered = |events: &[harness::trace::TimedEvent]| match events.first().map(|e| &e.event)
        {
            Some(harness::trace::Event::RunStart { tools, .. }) => tools.clone(),
            _ => Vec::new(),
        };
        let tools = offered(&got.runs[0].events);
        assert!(
            tools == offered(&exec)
                || (tools.is_empty()
                    && [
                        "openai-agents-chat-stream",
                        "openlit-openai-stream",
                        "openlit-openai-nudges",
                        "openllmetry-openai-agents-chat",
                    ]
                    .contains(&name)),
            "{name}: tools {tools:?}"
        );
        // How the run ended: a run exec served to its cap ends there in the import too (the
        // failed model call is harness's refusal, not a provider error).
        let ending = |events: &[harness::trace::TimedEvent]| {
            let faults = events
                .iter()
                .filter(|e| matches!(e.event, harness::trace::Event::ProviderError { .. }))
                .count();
            let end = events.iter().rev().find_map(|e| match &e.event {
                harness::trace::Event::Outcome {
                    outcome,
                    iterations,
                    ..
                } => Some((*outcome, *iterations)),
                _ => None,
            });
            (faults, end)
        };
        assert_eq!(
            ending(&got.runs[0].events),
            ending(&exec),
            "{name}: provider errors and the end"
        );
        // Each answer: its finish, its text and how many calls it asked for.
        let answers =
            |events: &[harness::trace::TimedEvent]| -> Vec<(String, Option<String>, usize)> {
                events
                    .iter()
                    .filter_map(|e| match &e.event {
                        harness::trace::Event::ModelResponse {
                            finish,
                            text,
                            calls,
                            ..
                        } => Some((format!("{finish:?}"), text.clone(), calls.len())),
                        _ => None,
                    })
                    .collect()
            };
        assert_eq!(
            answers(&got.runs[0].events),
            answers(&exec),
            "{name}: answers"
        );
        // What the agent added besides results: its nudges and the user's turns, where and
        // as often as it sent them.
        let added = |events: &[harness::trace::TimedEvent]| -> Vec<String> {
            events
                .iter()
                .filter_map(|e| match &e.event {
                    harness::trace::Event::MessageInjected { text, .. } => {
                        Some(format!("nudge {text}"))
                    }
                    harness::trace::Event::ModelResponse { .. } => Some("answer".to_owned()),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(added(&got.runs[0].events), added(&exec), "{name}: nudges");
        let (want, have) = (seen(&exec), seen(&got.runs[0].events));
        assert!(
            !want.0.is_empty(),
            "{name}: exec's trace has calls to compare"
        );
        assert_eq!(want.1.len(), have.1.len(), "{name}: answers");
        for (w, h) in want.1.iter().zip(&have.1) {
            assert!(
                h.is_none() || h == w,
                "{name}: tokens {:?} vs {:?}",
                want.1,
                have.1
            );
        }
        assert_eq!(
            want.0.len(),
            have.0.len(),
            "{name}: calls {:#?}\nvs {:#?}",
            want.0,
            have.0
        );
        for (w, h) in want.0.iter().zip(&have.0) {
            let (w, h) = match differs {
                Some("result") => ((&w.0, &w.1, w.2), (&h.0, &h.1, h.2)),
                _ => {
                    assert_eq!(w, h, "{name}");
                    continue;
                }
            };
            assert_eq!(w, h, "{name}");
        }
    }
}

/// OTLP files as collectors write them (fixtures/otlp-files: one run's requests as JSON lines,
/// and the same requests gzip'd with a byte-order mark, zstd'd whole, length-prefixed
/// protobuf as the Collector's file exporter writes `format: proto`, each request zstd'd as
/// with `compression: zstd`, and in the pre-2021 `instrumentationLibrarySpans` form) import
/// to the very same trace; a bare protobuf request reads too; bytes that are none of these
/// are a located error and exit 2.
#[test]
fn collector_file_shapes_import_alike() {
    let p = Project::new();
    p.copy_from_repo("fixtures/otlp-files", "in");
    p.harness(&["import", "in", "--out", "out"])
        .expect_code(0)
        .expect_stdout("8 run(s) written");
    let trace = |stem: &str| {
        let files = p.files("out", ".jsonl");
        let f = files
            .iter()
            .find(|f| f.contains(stem))
            .unwrap_or_else(|| panic!("a run of {stem} in {files:?}"));
        let text = p.read(f);
        text.split_once('\n').expect("a header").1.to_owned()
    };
    let reference = trace("reference");
    assert!(
        reference.contains("tool_call_end"),
        "the reference run has calls"
    );
    for shape in [
        "gzip-with-bom",
        "whole",
        "collector-proto",
        "collector-proto-zstd",
        "collector-json-zstd",
        "instrumentation-library",
    ] {
        assert_eq!(trace(shape), reference, "{shape} reads otherwise");
    }
    assert!(trace("one-request").contains("model_response"));
    // A binary file that is no OTLP: located, named, exit 2; the good file is still read.
    p.write("bad/noise.pb", [0x0a, 0x09, 0x01, 0x02, 0xff]);
    p.copy_from_repo("fixtures/otlp-files/whole.jsonl.zst", "bad/whole.jsonl.zst");
    let run = p.harness(&["import", "bad", "--out", "bad-out"]);
    run.expect_code(2).expect_stdout("1 run(s) written");
    assert!(
        run.stderr.contains("noise.pb:1:1") && run.stderr.contains("not an OTLP protobuf request"),
        "{run}"
    );
    p.harness(&["sweep", "bad", "--out", "bad.csv"])
        .expect_code(2);
}

/// Rotations (`<base>-NNNN.jsonl` beside `<base>.jsonl`) are read as one file: a run the
/// rotation split is one run, named by the current file. A numbered name alone is no rotation;
/// a set whose files are not all OTLP is read apart, and said.
#[test]
fn rotated_files_are_read_together_and_only_they() {
    let p = Project::new();
    let reference =
        std::fs::read_to_string(crate::support::repo().join("fixtures/otlp-files/reference.jsonl"))
            .expect("the reference");
    let lines: Vec<&str> = reference.lines().collect();
    let (a, b) = lines.split_at(lines.len() / 2);
    p.write("in/traces-0001.jsonl", a.join("\n") + "\n");
    p.write("in/traces.jsonl", b.join("\n") + "\n");
    p.write("in/solo-2024.jsonl", reference.clone());
    p.write("in/mixed.jsonl", b.join("\n") + "\n");
    p.copy_from_repo(
        "fixtures/transcripts/openai/runs.jsonl",
        "in/mixed-0001.jsonl",
    );
    let run = p.harness(&["import", "in", "--out", "out"]);
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("mixed.jsonl and its 1 earlier rotation(s) were read apart"),
        "{run}"
    );
    let files = p.files("out", ".jsonl");
    let named = |stem: &str| files.iter().filter(|f| f.contains(stem)).count();
    assert_eq!(
        named("out/traces_"),
        1,
        "one run of the rotated pair: {files:?}"
    );
    assert_eq!(
        named("out/solo-2024_"),
        1,
        "a numbered name alone keeps its name: {files:?}"
    );
    let joined = files
        .iter()
        .find(|f| f.contains("out/traces_"))
        .expect("the run");
    let whole = p.read(joined.as_str());
    assert_eq!(
        whole.matches("\"kind\":\"tool_call_end\"").count(),
        2,
        "{whole}"
    );
}

/// One trace of an agent instrumented with content capture off (the GenAI conventions'
/// default): chat spans that say only that the model asked for tools, and three `exec` tool
/// spans with their call ids and no arguments, failing (`status` ERROR) when `fail` says so.
fn blind_trace(trace: &str, fail: bool) -> String {
    blind_trace_naming(trace, fail, false)
}

/// [`blind_trace`], whose chat spans name their calls (id and name, no arguments) when `named`
/// says so, as openai-v2's `gen_ai.choice` events do with capture off.
fn blind_trace_naming(trace: &str, fail: bool, named: bool) -> String {
    let span = |id: &str, parent: &str, name: &str, at: u64, attrs: serde_json::Value| {
        serde_json::json!({
            "traceId": trace, "spanId": id, "parentSpanId": parent, "name": name,
            "startTimeUnixNano": (at * 1_000_000).to_string(),
            "endTimeUnixNano": ((at + 5) * 1_000_000).to_string(),
            "attributes": attrs,
        })
    };
    let kv = |k: &str, v: &str| serde_json::json!({"key": k, "value": {"stringValue": v}});
    let chat = |id: &str, at: u64, reason: &str| {
        span(
            id,
            "agent",
            "chat m",
            at,
            serde_json::json!([
                kv("gen_ai.operation.name", "chat"),
                {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": reason}]}}},
            ]),
        )
    };
    let mut spans = vec![span(
        "agent",
        "",
        "invoke_agent a",
        0,
        serde_json::json!([kv("gen_ai.operation.name", "invoke_agent")]),
    )];
    for i in 0..3u64 {
        let mut c = chat(&format!("c{i}"), 10 + 20 * i, "tool_calls");
        if named {
            // openai-v2 with capture off: a `gen_ai.choice` event naming the call, no arguments.
            let body = serde_json::json!({"index": 0, "finish_reason": "tool_calls", "message":
                {"tool_calls": [{"id": format!("call_{i}"), "type": "function", "function": {"name": "exec"}}]}});
            c["events"] = serde_json::json!([{
                "name": "gen_ai.choice",
                "timeUnixNano": ((15 + 20 * i) * 1_000_000).to_string(),
                "attributes": [kv("gen_ai.event.content", &body.to_string())],
            }]);
        }
        spans.push(c);
        let mut tool = span(
            &format!("t{i}"),
            "agent",
            "execute_tool exec",
            20 + 20 * i,
            serde_json::json!([
                kv("gen_ai.operation.name", "execute_tool"),
                kv("gen_ai.tool.name", "exec"),
                kv("gen_ai.tool.call.id", &format!("call_{i}")),
            ]),
        );
        if fail {
            tool["status"] = serde_json::json!({"code": 2, "message": "exit 1"});
        }
        spans.push(tool);
    }
    spans.push(chat("c9", 90, "stop"));
    serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).to_string()
}

/// Calls recorded without their arguments are not three identical calls: the import marks
/// their arguments unknown, and a sweep leaves such runs out of the rows of every detector
/// that compares arguments, and out of every row when its stuck label would have to.
#[test]
fn calls_recorded_without_arguments_are_judged_by_nothing_that_compares_them() {
    let p = Project::new();
    // The working run's answers name their calls, without arguments.
    p.write(
        "blind.jsonl",
        format!(
            "{}\n{}\n",
            blind_trace("failing", true),
            blind_trace_naming("working", false, true)
        ),
    );
    let import = p.harness(&["import", "blind.jsonl", "--out", "imported"]);
    import.expect_code(0);
    for said in [
        "3 tool span(s) of calls no model output showed, without their arguments",
        "3 call(s) the model's answers named without their arguments",
    ] {
        assert!(import.stderr.contains(said), "{said}: {}", import.stderr);
    }
    let traces = p.files("imported", ".jsonl");
    assert_eq!(traces.len(), 2, "{traces:?}");
    for t in &traces {
        let text = p.read(t);
        // Named in the answer too: twice a call.
        let marks = if t.contains("working") { 6 } else { 3 };
        assert_eq!(
            text.matches("\"args_unknown\":true").count(),
            marks,
            "{t}: {text}"
        );
    }
    for input in ["blind.jsonl", "imported"] {
        let sweep = p.harness(&["sweep", input, "--out", "s.csv"]);
        sweep.expect_code(0);
        let csv = p.read("s.csv");
        let rows: Vec<Vec<&str>> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').collect())
            .collect();
        assert!(rows.len() > 8, "{csv}");
        for r in &rows {
            // detector, params, runs, successful_runs, false_alarms, stuck_runs, caught
            let (runs, stuck, caught) = (r[2], r[5], r[6]);
            if r[0] == "gemini-chanting" {
                // The failing run is stuck by its failures alone (no arguments needed); the
                // working one cannot be labelled without them.
                assert_eq!((runs, stuck), ("1", "1"), "{input}: {csv}");
            } else {
                assert_eq!((runs, stuck, caught), ("0", "0", "0"), "{input}: {csv}");
            }
        }
        assert!(
            sweep.stdout.contains("Not scored: up to 2 run(s) left out"),
            "{}",
            sweep.stdout
        );
        assert!(
            sweep
                .stderr
                .contains("note: detector consecutive-identical k=3: 2 run(s) left out of its row"),
            "{}",
            sweep.stderr
        );
        assert!(
            sweep
                .stderr
                .contains("neither its stuck label nor a detector can judge it"),
            "{}",
            sweep.stderr
        );
    }
    // A sweep whose every setting left every run out judged nothing: not a result.
    let none = p.harness(&[
        "sweep",
        "blind.jsonl",
        "--detector",
        "consecutive-identical",
        "--out",
        "n.csv",
    ]);
    none.expect_code(2);
    assert!(
        none.stderr
            .contains("nothing was scored: every setting left all 2 run(s) out of its row"),
        "{}",
        none.stderr
    );
    p.harness(&[
        "sweep",
        "blind.jsonl",
        "--detector",
        "consecutive-identical",
        "--out",
        "n.csv",
        "--allow-empty",
    ])
    .expect_code(0);
    // Shards merged leave the same runs out.
    let whole = p.read("s.csv");
    for m in ["1", "2"] {
        p.harness(&[
            "sweep",
            "imported",
            "--partition",
            &format!("count:{m}/2"),
            "--partial",
            &format!("part-{m}.jsonl"),
        ])
        .expect_code(0);
    }
    let merged = p.harness(&[
        "sweep",
        "--merge",
        "part-2.jsonl",
        "part-1.jsonl",
        "--out",
        "merged.csv",
    ]);
    merged.expect_code(0);
    assert_eq!(p.read("merged.csv"), whole, "the merged shards differ");
    assert!(
        merged.stderr.contains("2 run(s) left out of its row"),
        "{}",
        merged.stderr
    );
}

/// A trace whose answers recorded none of their calls (content capture off) but whose tool
/// spans record each call's arguments becomes a scenario that makes those calls: each is
/// scripted into the answer before it. Where the arguments were not recorded either, no
/// scenario is written: it would have to make them up.
#[test]
fn a_scenario_of_calls_no_answer_recorded_makes_those_calls() {
    let p = Project::new();
    // The tool spans record the arguments: `{"n": 0}`, `{"n": 1}`, `{"n": 2}`.
    let mut trace: serde_json::Value =
        serde_json::from_str(&blind_trace("failing", true)).expect("JSON");
    let spans = trace["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array_mut()
        .expect("spans");
    for (n, s) in spans
        .iter_mut()
        .filter(|s| s["name"] == "execute_tool exec")
        .enumerate()
    {
        s["attributes"].as_array_mut().expect("attributes").push(serde_json::json!(
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": format!("{{\"n\": {n}}}")}}
        ));
    }
    p.write("known.jsonl", trace.to_string() + "\n");
    p.harness(&[
        "import",
        "known.jsonl",
        "--as",
        "scenario",
        "--out",
        "scenarios",
    ])
    .expect_code(0);
    let files = p.files("scenarios", ".toml");
    assert_eq!(files.len(), 1, "{files:?}");
    let toml = p.read(&files[0]);
    assert!(toml.contains("3 tool calls (3 failed)"), "{toml}");
    assert!(
        toml.contains("3 of the calls were seen run but not in the answer before them")
            && !toml.contains("recorded without their arguments"),
        "{toml}"
    );
    p.harness(&["run", "scenarios"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    let golden = p.files("snapshots", ".snap");
    let golden = p.read(&golden[0]);
    for n in 0..3 {
        assert!(
            golden.contains(&format!("tool_call_start call_{n} exec({{\"n\":{n}}})")),
            "{golden}"
        );
    }
    assert_eq!(
        golden.matches(" exec failed error=\"exit 1\"").count(),
        3,
        "{golden}"
    );
    assert!(golden.contains("outcome response iterations=4"), "{golden}");
    // Arguments nobody recorded: not written, and said why.
    p.write("blind.jsonl", blind_trace("failing", true) + "\n");
    let blind = p.harness(&[
        "import",
        "blind.jsonl",
        "--as",
        "scenario",
        "--out",
        "blind",
    ]);
    blind.expect_code(2);
    assert!(
        blind
            .stderr
            .contains("3 of its calls were recorded without their arguments: a scenario would have to make them up"),
        "{}",
        blind.stderr
    );
    assert!(p.files("blind", ".toml").is_empty());
}

/// An agent traced with capture off and no tool spans (openai-v2's default, its tools not
/// instrumented): its answers asked for tools and recorded none. Such a run is no evidence
/// for any detector: the import marks the answers `calls_unknown`, and a sweep of nothing
/// else judged nothing.
#[test]
fn answers_whose_calls_were_not_recorded_are_judged_by_no_detector() {
    let kv = |k: &str, v: &str| serde_json::json!({"key": k, "value": {"stringValue": v}});
    let span = |id: &str, at: u64, reason: &str| {
        serde_json::json!({
            "traceId": "t1", "spanId": id, "parentSpanId": "agent", "name": "chat m",
            "startTimeUnixNano": (at * 1_000_000).to_string(),
            "endTimeUnixNano": ((at + 5) * 1_000_000).to_string(),
            "attributes": [kv("gen_ai.operation.name", "chat"),
                {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": reason}]}}}],
        })
    };
    let mut spans = vec![serde_json::json!({
        "traceId": "t1", "spanId": "agent", "parentSpanId": "", "name": "invoke_agent a",
        "startTimeUnixNano": "0", "endTimeUnixNano": "100000000",
        "attributes": [kv("gen_ai.operation.name", "invoke_agent")],
    })];
    for i in 0..4u64 {
        spans.push(span(&format!("c{i}"), 10 + 10 * i, "tool_calls"));
    }
    let p = Project::new();
    p.write(
        "unseen.jsonl",
        serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).to_string()
            + "\n",
    );
    let import = p.harness(&["import", "unseen.jsonl", "--out", "imported"]);
    import.expect_code(0);
    assert!(
        import.stderr.contains(
            "3 answer(s) asked for tools that no span recorded, and the model was asked again"
        ),
        "{}",
        import.stderr
    );
    let trace = p.read(&p.files("imported", ".jsonl")[0]);
    assert_eq!(
        trace.matches("\"calls_unknown\":true").count(),
        4,
        "{trace}"
    );
    let sweep = p.harness(&["sweep", "imported", "--out", "s.csv"]);
    sweep.expect_code(2);
    assert!(
        sweep
            .stderr
            // The last answer's calls never ran: the three before it are what no detector saw.
            .contains("3 of its answers asked for tools the trace did not record"),
        "{}",
        sweep.stderr
    );
    p.harness(&["sweep", "imported", "--out", "s.csv", "--allow-empty"])
        .expect_code(0);
    for row in p.read("s.csv").lines().skip(1) {
        assert!(row.split(',').nth(2) == Some("0"), "{row}");
    }
}

/// Arguments an answer's call leaves out are unknown only where nothing of the call was
/// captured: with the messages captured, they are none (Bedrock's instrumentation leaves out
/// an empty input whatever the capture). And a scenario of a run whose last answer named a
/// call without its arguments is not written: it would make that call up.
#[test]
fn left_out_arguments_are_none_where_content_was_captured() {
    let p = Project::new();
    let mut trace: serde_json::Value =
        serde_json::from_str(&blind_trace_naming("captured", false, true)).expect("JSON");
    let spans = trace["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array_mut()
        .expect("spans");
    for s in spans.iter_mut() {
        if let Some(events) = s.get_mut("events").and_then(|e| e.as_array_mut()) {
            events.insert(
                0,
                serde_json::json!({"name": "gen_ai.user.message", "timeUnixNano": "1",
                    "attributes": [{"key": "gen_ai.event.content",
                        "value": {"stringValue": "{\"content\": \"List the files.\"}"}}]}),
            );
        }
    }
    p.write("captured.jsonl", trace.to_string() + "\n");
    let import = p.harness(&["import", "captured.jsonl", "--out", "imported"]);
    import.expect_code(0);
    assert!(
        !import.stderr.contains("without their arguments"),
        "{}",
        import.stderr
    );
    let text = p.read(&p.files("imported", ".jsonl")[0]);
    assert!(!text.contains("args_unknown"), "{text}");
    assert_eq!(
        text.matches("\"name\":\"exec\",\"args\":{}").count(),
        3,
        "{text}"
    );
    // Capture off, the last answer's call named and never run: no scenario.
    let mut trace: serde_json::Value =
        serde_json::from_str(&blind_trace_naming("last", false, true)).expect("JSON");
    trace["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array_mut()
        .expect("spans")
        .retain(|s| s["spanId"] != "t2" && s["spanId"] != "c9");
    p.write("last.jsonl", trace.to_string() + "\n");
    let scenario = p.harness(&["import", "last.jsonl", "--as", "scenario", "--out", "sc"]);
    scenario.expect_code(2);
    assert!(
        scenario
            .stderr
            .contains("recorded without their arguments: a scenario would have to make them up"),
        "{}",
        scenario.stderr
    );
}
