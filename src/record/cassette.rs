//! The cassette format: one recorded run against a live provider, exchange by exchange, and the
//! single function that turns a recorded exchange into what the engine sees. Version 1 holds a
//! scenario case run by harness's own engine (`harness record`); version 2 adds the cassette of
//! one conversation of any agent, recorded over the wire by `harness proxy` (`agent`, and no
//! scenario). The live model and the player both use [`Exchange::outcome`], so a recording and
//! its replay parse the same bytes the same way.

use crate::diagnostic::{Cause, Diagnostic};
use crate::llm::{FaultKind, ModelResponse, ProviderFault, Purpose};
use crate::provider::{Api, Provider, SseEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The newest cassette format this build reads.
pub const VERSION: u32 = 2;

/// The version `harness record` writes (a scenario's cassette needs nothing version 2 added).
pub const SCENARIO_VERSION: u32 = 1;

/// Response headers a cassette keeps; every other header is dropped when recording.
pub const HEADER_ALLOW_LIST: &[&str] = &["content-type", "retry-after", "retry-after-ms"];

/// One recorded run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cassette {
    /// Format version: 1, or 2 for an agent's cassette.
    pub version: u32,
    /// The scenario, relative to the cassette's folder, with `/` separators (empty in an
    /// agent's cassette).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scenario: String,
    /// The scenario case recorded, as its id read when recording (for the reader).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub case: String,
    /// The profile of that case (selects it on replay).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub profile: String,
    /// The agent whose conversation this is, when it was recorded through `harness proxy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentRecord>,
    /// Wire format.
    pub provider: Provider,
    /// Model name sent.
    pub model: String,
    /// Base URL recorded against (scrubbed).
    pub base_url: String,
    /// Whether responses were streamed.
    pub stream: bool,
    /// Output token limit sent, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// How to replay.
    #[serde(default)]
    pub replay: ReplayOptions,
    /// The exchanges, in call order.
    pub exchanges: Vec<Exchange>,
}

impl Cassette {
    /// The API its answers were given on: the agent's, or the provider's own for a recording
    /// of harness's engine.
    pub fn api(&self) -> Api {
        self.agent.as_ref().map_or(self.provider.into(), |a| a.api)
    }
}

/// Who was recorded through the proxy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentRecord {
    /// The API the conversation was held on.
    pub api: Api,
    /// The command recorded (secrets scrubbed), for the reader; empty when the proxy ran
    /// without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Which conversation of the recorded session this is (1-based, in the order they began).
    pub conversation: u32,
}

/// Replay settings, editable in the cassette.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayOptions {
    /// Virtual latency of a replayed response: as recorded, scaled, or zero.
    #[serde(default)]
    pub delay: Delay,
    /// Factor for `delay = "scaled"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    /// Request fields the strict match ignores besides the built-in volatile ones: paths of
    /// object keys and array indices separated by `/`, `*` for any (`messages/*/tool_call_id`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
}

impl ReplayOptions {
    /// The virtual latency of a response recorded after `elapsed_ms`.
    pub fn latency(&self, elapsed_ms: u64) -> u64 {
        match self.delay {
            Delay::Recorded => elapsed_ms,
            Delay::Zero => 0,
            Delay::Scaled => {
                let f = self.scale.unwrap_or(1.0).max(0.0);
                (elapsed_ms as f64 * f).round() as u64
            }
        }
    }
}

/// Latency on replay (`harness proxy --delay` takes `recorded` or `zero`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delay {
    /// As measured when recording.
    #[default]
    Recorded,
    /// Multiplied by `scale` (set in the cassette, with its factor).
    Scaled,
    /// None: the virtual clock stands still.
    Zero,
}

/// One request and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// The engine's model call number.
    pub call: u32,
    /// Why the engine called (omitted for loop turns).
    #[serde(default, skip_serializing_if = "Purpose::is_turn")]
    pub purpose: Purpose,
    /// The request body as canonical JSON (keys sorted, secrets scrubbed).
    pub request: Value,
    /// HTTP status (absent when no response came).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Allow-listed response headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// A whole response body (JSON, or the text as a string when it was not JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// A streamed response: every event, with its time since the request was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Vec<TimedEvent>>,
    /// What went wrong on the connection, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TransportError>,
    /// Time from sending the request to the end of the response.
    pub elapsed_ms: u64,
    /// Token usage the response reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageRecord>,
}

/// One server-sent event and when it arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimedEvent {
    /// Milliseconds since the request was sent.
    pub t_ms: u64,
    /// The event name, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The data payload as sent.
    pub data: String,
}

/// A connection-level failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransportError {
    /// What failed.
    pub kind: TransportKind,
    /// The client's message (scrubbed).
    pub message: String,
}

/// Kinds of connection failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransportKind {
    /// No complete response within the timeout.
    Timeout,
    /// The connection broke while the response was coming in.
    Cut,
    /// No connection (refused, unreachable).
    Connect,
}

/// Usage as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageRecord {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
}

/// What one exchange means to the engine.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// An answer.
    Response(ModelResponse),
    /// A provider failure the loop can answer (retry, compaction, end the run).
    Fault(ProviderFault),
    /// A failure no loop answers (authentication, a malformed request): recording stops.
    Fatal(String),
}

impl Exchange {
    /// An exchange of this request, with no answer yet (call 0, a loop turn).
    pub fn unanswered(request: Value) -> Self {
        Self {
            call: 0,
            purpose: Purpose::Turn,
            request,
            status: None,
            headers: BTreeMap::new(),
            body: None,
            chunks: None,
            error: None,
            elapsed_ms: 0,
            usage: None,
        }
    }

    /// The provider's retry-after hint: `retry-after-ms`, else `retry-after` in seconds.
    fn retry_after_ms(&self) -> Option<u64> {
        if let Some(ms) = self.headers.get("retry-after-ms") {
            return ms
                .trim()
                .parse::<f64>()
                .ok()
                .map(|v| v.max(0.0).round() as u64);
        }
        let s = self
            .headers
            .get("retry-after")?
            .trim()
            .parse::<f64>()
            .ok()?;
        Some((s.max(0.0) * 1000.0).round() as u64)
    }

    /// The events of a streamed response.
    pub fn events(&self) -> Vec<SseEvent> {
        self.chunks
            .iter()
            .flatten()
            .map(|c| SseEvent {
                event: c.event.clone(),
                data: c.data.clone(),
            })
            .collect()
    }

    /// What the engine sees, with this virtual latency, reading the answer as `api` sends it
    /// (a provider stands for its own API).
    pub fn outcome(&self, api: impl Into<Api>, latency_ms: u64) -> Outcome {
        let api = api.into();
        let provider = api.provider();
        let fault = |kind: FaultKind, message: String, retry_after_ms: Option<u64>| {
            Outcome::Fault(ProviderFault {
                kind,
                message,
                retry_after_ms,
                latency_ms,
            })
        };
        if let Some(e) = &self.error {
            match e.kind {
                TransportKind::Timeout => {
                    return fault(FaultKind::Timeout, "the request timed out".to_owned(), None);
                }
                TransportKind::Connect => {
                    return fault(
                        FaultKind::ServerError,
                        format!("connection failed: {}", e.message),
                        None,
                    );
                }
                // A cut stream is judged by what arrived (it may be complete).
                TransportKind::Cut => {}
            }
        }
        let status = self.status.unwrap_or(0);
        if !(200..300).contains(&status) {
            let body = self.body.clone().unwrap_or(Value::Null);
            let message = crate::provider::error_message(&body)
                .or_else(|| body.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
                .unwrap_or_else(|| format!("HTTP {status}"));
            return match provider.fault(status, &body) {
                Some(kind) => fault(
                    kind,
                    message,
                    self.retry_after_ms()
                        .or_else(|| provider.retry_after_in_body(&body)),
                ),
                None => Outcome::Fatal(format!("HTTP {status}: {message}")),
            };
        }
        let parsed = match &self.chunks {
            Some(_) => api.parse_stream(&self.events()),
            None => api.parse_body(self.body.as_ref().unwrap_or(&Value::Null)),
        };
        match parsed {
            Ok(mut r) => {
                r.latency_ms = latency_ms;
                Outcome::Response(r)
            }
            Err(e) => Outcome::Fault(e.fault(latency_ms)),
        }
    }
}

/// Parse a cassette text.
pub fn parse(text: &str) -> Result<Cassette, Diagnostic> {
    // A cassette this build reads is read once, straight; any other is read again below, for
    // what is wrong and where (the version first: a newer format may not read at all).
    if let Ok(c) = serde_json::from_str::<Cassette>(text) {
        if c.version <= VERSION {
            check_limits(text, &c)?;
            return Ok(c);
        }
    }
    read_reporting(text)
}

/// [`parse`] the long way: the version looked for first, then the cassette read with the path
/// of what fails to read.
fn read_reporting(text: &str) -> Result<Cassette, Diagnostic> {
    let version: Option<u64> = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("version").and_then(Value::as_u64));
    if let Some(v) = version.filter(|v| *v > u64::from(VERSION)) {
        let at = text.find("\"version\"").unwrap_or(0);
        let (line, col) = crate::scenario::line_col(text, at);
        return Err(Diagnostic::at(
            line,
            col,
            format!("cassette format version {v} is newer than this build reads ({VERSION})"),
        )
        .hint("upgrade harness, or re-record the cassette with this build")
        .cause(Cause::Version));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let c = serde_path_to_error::deserialize::<_, Cassette>(&mut de).map_err(|e| {
        let inner = e.inner();
        let path = e.path().to_string();
        let message = inner.to_string();
        let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m);
        let line = inner.line().max(1);
        let col = crate::scenario::json_token_start(text, line, inner.column().max(1));
        let message = if path == "." || path == "?" {
            format!("invalid cassette: {message}")
        } else {
            format!("invalid cassette at `{path}`: {message}")
        };
        Diagnostic::at(line, col, message).hint(
            "cassettes are written by `harness record`; re-record it, or compare with the format in docs/recording.md",
        )
    })?;
    check_limits(text, &c)?;
    Ok(c)
}

/// A cassette's version and counts against what this build reads ([`crate::limits`]).
fn check_limits(text: &str, c: &Cassette) -> Result<(), Diagnostic> {
    use crate::limits::{MAX_CASSETTE_EXCHANGES, MAX_STREAM_CHUNKS};
    let at = |key: &str| crate::scenario::line_col(text, text.find(key).unwrap_or(0));
    let error = |(line, col): (usize, usize), message: String, hint: &'static str| {
        Diagnostic::at(line, col, message).hint(hint)
    };
    if c.version == 0 || c.version > VERSION {
        return Err(error(
            at("\"version\""),
            format!(
                "cassette format version {} is not one this build reads (1 to {VERSION})",
                c.version
            ),
            "cassettes are written by `harness record` (version 1) and `harness proxy` (version 2); re-record it",
        ));
    }
    match (&c.agent, c.scenario.is_empty()) {
        (None, true) => {
            return Err(error(
                (1, 1),
                "invalid cassette: it names no `scenario` and no `agent`".to_owned(),
                "a cassette of `harness record` names its scenario; one of `harness proxy` describes its agent",
            ));
        }
        (Some(_), false) => {
            return Err(error(
                at("\"agent\""),
                "invalid cassette: it names both a `scenario` and an `agent`".to_owned(),
                "an agent's cassette (`harness proxy`) has no scenario; remove one of them",
            ));
        }
        (Some(_), true) if c.version < 2 => {
            return Err(error(
                at("\"version\""),
                "an agent's cassette must be format version 2".to_owned(),
                "`harness proxy` writes version 2; re-record it",
            ));
        }
        _ => {}
    }
    if c.exchanges.len() > MAX_CASSETTE_EXCHANGES {
        return Err(error(
            at("\"exchanges\""),
            format!(
                "the cassette holds {} exchanges, over the limit of {MAX_CASSETTE_EXCHANGES} per cassette",
                c.exchanges.len()
            ),
            "no run makes this many model calls (see docs/robustness.md \"Limits\"); record a shorter run",
        ));
    }
    let streamed = c
        .exchanges
        .iter()
        .enumerate()
        .filter_map(|(i, e)| Some((i, e.chunks.as_ref()?)));
    for (nth, (i, chunks)) in streamed.enumerate() {
        if chunks.len() > MAX_STREAM_CHUNKS {
            // The `chunks` key of this exchange: the nth one in the file.
            let offset = text
                .match_indices("\"chunks\"")
                .nth(nth)
                .map_or(0, |(o, _)| o);
            return Err(error(
                crate::scenario::line_col(text, offset),
                format!(
                    "exchange {} (`exchanges[{i}]`) streams {} events, over the limit of {MAX_STREAM_CHUNKS} per stream",
                    i + 1,
                    chunks.len()
                ),
                "no provider streams this many events for one answer (see docs/robustness.md \"Limits\"); record a shorter answer",
            ));
        }
    }
    Ok(())
}

/// The cassette as its file text: pretty JSON with a final newline.
pub fn render(c: &Cassette) -> String {
    let mut s = serde_json::to_string_pretty(c).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exchange(status: u16, body: Value) -> Exchange {
        Exchange {
            call: 1,
            purpose: Purpose::Turn,
            request: json!({}),
            status: Some(status),
            headers: BTreeMap::new(),
            body: Some(body),
            chunks: None,
            error: None,
            elapsed_ms: 40,
            usage: None,
        }
    }

    #[test]
    fn rate_limit_honours_retry_after() {
        let mut e = exchange(429, json!({"error": {"message": "slow down"}}));
        e.headers.insert("retry-after".into(), "1.5".into());
        match e.outcome(Provider::Openai, 40) {
            Outcome::Fault(f) => {
                assert_eq!(f.kind, FaultKind::RateLimit);
                assert_eq!(f.retry_after_ms, Some(1500));
                assert_eq!(f.message, "slow down");
                assert_eq!(f.latency_ms, 40);
            }
            other => panic!("expected a fault, got {other:?}"),
        }
        e.headers.insert("retry-after-ms".into(), "250".into());
        assert!(
            matches!(e.outcome(Provider::Openai, 0), Outcome::Fault(f) if f.retry_after_ms == Some(250))
        );
        assert!(
            matches!(exchange(401, json!("nope")).outcome(Provider::Openai, 0), Outcome::Fatal(m) if m == "HTTP 401: nope")
        );
    }

    #[test]
    fn cut_stream_is_a_server_error() {
        let mut e = exchange(200, Value::Null);
        e.body = None;
        e.chunks = Some(vec![TimedEvent {
            t_ms: 3,
            event: None,
            data: json!({"choices": [{"delta": {"content": "Hi"}}]}).to_string(),
        }]);
        e.error = Some(TransportError {
            kind: TransportKind::Cut,
            message: "connection reset".into(),
        });
        assert!(matches!(e.outcome(Provider::Openai, 9), Outcome::Fault(f)
            if f.kind == FaultKind::ServerError && f.message.contains("connection cut")));
    }

    /// What `parse` gives, comparable: the cassette as JSON, or the error's place and words.
    fn outcome(r: Result<Cassette, Diagnostic>) -> Result<Value, String> {
        r.map(|c| serde_json::to_value(c).unwrap())
            .map_err(|d| format!("{}:{}: {d}", d.line(), d.col()))
    }

    #[test]
    fn read_at_once_or_the_long_way_alike() {
        // The bundled cassette, and the same spoilt in the ways a hand edit spoils one.
        let good =
            include_str!("../../scenarios/record/fixtures/cassettes/reflex-live.cassette.json")
                .to_owned();
        let texts = [
            good.clone(),
            format!("{good}\n"),
            // Past the document, read or refused alike.
            format!("{good} trailing"),
            format!("{good}{{}}"),
            good.replace("\"version\": 1", "\"version\": 3"),
            good.replace("\"version\": 1", "\"version\": 99999999999"),
            good.replace("\"version\": 1", "\"version\": 1, \"version\": 2"),
            good.replace("\"version\": 1", "\"version\": 3, \"unknown\": true"),
            good.replace("\"model\": \"stub-model\"", "\"model\": 5"),
            good.replace("\"stream\": true,", ""),
            good.replace("\"delay\": \"recorded\"", "\"delay\": \"never\""),
            String::new(),
            "[]".to_owned(),
        ];
        for t in &texts {
            assert_eq!(outcome(parse(t)), outcome(read_reporting(t)), "{t}");
        }
        assert_eq!(
            texts.iter().filter(|t| **t == good).count(),
            1,
            "each spoils it"
        );
        // Every refused cassette of the fixtures, among them some that read whole and are
        // refused by their limits (version 0, an agent's at version 1, both a scenario and an
        // agent): each way gives the same refusal, in the same place.
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/invalid/cassette");
        let mut read_whole_then_refused = 0;
        let mut files = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let limit = crate::limits::MAX_CASSETTE_BYTES;
            let Ok(t) = crate::store::read_input_text(&path, "cassette", limit) else {
                continue;
            };
            files += 1;
            assert_eq!(outcome(parse(&t)), outcome(read_reporting(&t)), "{t}");
            if serde_json::from_str::<Cassette>(&t).is_ok() && parse(&t).is_err() {
                read_whole_then_refused += 1;
            }
        }
        assert!(files >= 10, "{files} fixtures");
        assert!(read_whole_then_refused >= 3, "{read_whole_then_refused}");
        assert!(parse(&texts[0]).is_ok());
    }

    #[test]
    fn delays_and_versions() {
        let mut r = ReplayOptions::default();
        assert_eq!(r.latency(120), 120);
        r.delay = Delay::Scaled;
        r.scale = Some(0.5);
        assert_eq!(r.latency(120), 60);
        r.delay = Delay::Zero;
        assert_eq!(r.latency(120), 0);
        let err = parse("{\n  \"version\": 3\n}").expect_err("refused");
        assert_eq!((err.line(), err.col()), (2, 3));
        assert!(
            parse("{\"version\": 1}")
                .err()
                .is_some_and(|e| e.message.contains("missing field"))
        );
    }

    fn cassette(exchanges: Vec<Exchange>) -> Cassette {
        Cassette {
            version: SCENARIO_VERSION,
            scenario: "s.toml".into(),
            case: "s".into(),
            profile: "moltis".into(),
            agent: None,
            provider: Provider::Openai,
            model: "m".into(),
            base_url: "http://127.0.0.1".into(),
            stream: true,
            max_tokens: None,
            replay: ReplayOptions::default(),
            exchanges,
        }
    }

    #[test]
    fn counts_past_the_limits_are_located_errors() {
        use crate::limits::{MAX_CASSETTE_EXCHANGES, MAX_STREAM_CHUNKS};
        let one = exchange(200, json!({}));
        let at_limit = render(&cassette(vec![one.clone(); MAX_CASSETTE_EXCHANGES]));
        assert!(parse(&at_limit).is_ok());
        let over = render(&cassette(vec![one.clone(); MAX_CASSETTE_EXCHANGES + 1]));
        let err = parse(&over).expect_err("too many exchanges");
        assert!(
            err.message
                .contains("10001 exchanges, over the limit of 10000"),
            "{err:?}"
        );
        assert_eq!(
            over.lines().nth(err.line() - 1).map(str::trim_start),
            Some("\"exchanges\": [")
        );

        let chunk = TimedEvent {
            t_ms: 0,
            event: None,
            data: "{}".into(),
        };
        let mut long = one.clone();
        long.chunks = Some(vec![chunk; MAX_STREAM_CHUNKS + 1]);
        let mut short = one;
        short.chunks = Some(Vec::new());
        let text = render(&cassette(vec![short, long]));
        let err = parse(&text).expect_err("too many events");
        assert!(
            err.message
                .contains("exchange 2 (`exchanges[1]`) streams 100001 events"),
            "{err:?}"
        );
        // At the second exchange's `chunks`, not the first's.
        let first = text.find("\"chunks\"").unwrap();
        assert!(crate::scenario::line_col(&text, first).0 < err.line());
        let version_0 = text.replacen("\"version\": 1", "\"version\": 0", 1);
        assert!(
            parse(&version_0)
                .expect_err("version 0")
                .message
                .contains("version 0")
        );
    }
}
