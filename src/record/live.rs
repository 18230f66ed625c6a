//! The live model: a [`Model`] that sends each engine request to a provider over HTTP, tees the
//! exchange (scrubbed) into a cassette, and answers the engine with what the scrubbed exchange
//! parses to — the very path the player takes, so a recording and its replay agree byte for byte.
//!
//! It owns a single-threaded tokio runtime and blocks on it inside `respond`; the engine stays
//! synchronous and pure. Provider faults go back to the engine, whose retry rules decide; before
//! the retry this model sleeps in real time for the wait the engine put on its virtual clock
//! (capped), so a live provider's retry-after is honoured.

use super::cassette::{
    Exchange, HEADER_ALLOW_LIST, Outcome, TimedEvent, TransportError, TransportKind, UsageRecord,
};
use super::scrub::Scrubber;
use crate::json::sorted;
use crate::llm::{FaultKind, Model, ModelError, ModelRequest, ModelResponse, ScriptError};
use crate::policy::RetryConfig;
use crate::provider::{Provider, WireOptions};
use eventsource_stream::Eventsource as _;
use futures_util::StreamExt as _;
use serde_json::Value;
use std::time::{Duration, Instant};

/// How to reach the provider.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Wire format.
    pub provider: Provider,
    /// Base URL as the official SDKs take it.
    pub base_url: String,
    /// The key (never written anywhere).
    pub key: String,
    /// Model, stream flag, token limit.
    pub options: WireOptions,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Longest real sleep before a retry.
    pub max_wait: Duration,
}

/// A live provider as a [`Model`].
pub struct LiveModel {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
    endpoint: Endpoint,
    url: String,
    scrubber: Scrubber,
    retry: RetryConfig,
    /// Faults of each kind in a row (for the engine's backoff).
    faults: [u32; FaultKind::COUNT],
    /// Real time to wait before the next request.
    wait: Duration,
    /// The exchanges so far, scrubbed.
    pub exchanges: Vec<Exchange>,
    /// A failure no loop answers; recording stops.
    pub fatal: Option<Fatal>,
}

/// Why a recording stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fatal {
    /// No provider was reached at all (nothing listens, a wrong host).
    Unreachable(String),
    /// An answer went past [`crate::limits::MAX_RESPONSE_BYTES`].
    TooLarge(String),
    /// The provider answered with a refusal no loop retries (401, 403, a bad request).
    Refused(String),
}

impl LiveModel {
    /// A live model; `retry` is the case's retry configuration (it sets the real waits).
    pub fn new(
        endpoint: Endpoint,
        scrubber: Scrubber,
        retry: RetryConfig,
    ) -> std::io::Result<Self> {
        // https goes through rustls with the ring provider; a second install is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(std::io::Error::other)?;
        Ok(Self {
            rt,
            client,
            url: endpoint
                .provider
                .endpoint(&endpoint.base_url, &endpoint.options),
            endpoint,
            scrubber,
            retry,
            faults: [0; FaultKind::COUNT],
            wait: Duration::ZERO,
            exchanges: Vec::new(),
            fatal: None,
        })
    }

    /// Send one request body; the raw exchange (not yet scrubbed), the elapsed time, and
    /// whether the answer went past [`crate::limits::MAX_RESPONSE_BYTES`] (then it is not kept).
    #[expect(
        clippy::disallowed_methods,
        reason = "a live recording measures the provider's latency (an edge: record)"
    )]
    async fn send(&self, body: &Value) -> (Exchange, u64, bool) {
        let max = crate::limits::MAX_RESPONSE_BYTES;
        let started = Instant::now();
        let ms = |s: Instant| s.elapsed().as_millis() as u64;
        let mut ex = Exchange::unanswered(Value::Null);
        let mut rb = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap_or_default());
        for (k, v) in self.endpoint.provider.auth_headers(&self.endpoint.key) {
            rb = rb.header(k, v);
        }
        let deadline = tokio::time::Instant::now() + self.endpoint.timeout;
        let response = match tokio::time::timeout_at(deadline, rb.send()).await {
            Err(_) => {
                ex.error = Some(TransportError {
                    kind: TransportKind::Timeout,
                    message: format!(
                        "no response within {} ms",
                        self.endpoint.timeout.as_millis()
                    ),
                });
                return (ex, ms(started), false);
            }
            Ok(Err(e)) => {
                ex.error = Some(TransportError {
                    kind: if e.is_timeout() {
                        TransportKind::Timeout
                    } else {
                        TransportKind::Connect
                    },
                    message: error_chain(&e),
                });
                return (ex, ms(started), false);
            }
            Ok(Ok(r)) => r,
        };
        if response.content_length().is_some_and(|n| n > max) {
            return (ex, ms(started), true);
        }
        ex.status = Some(response.status().as_u16());
        for (name, value) in response.headers() {
            if HEADER_ALLOW_LIST.contains(&name.as_str()) {
                ex.headers.insert(
                    name.as_str().to_owned(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                );
            }
        }
        let is_sse = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        if self.endpoint.options.stream && response.status().is_success() && is_sse {
            let mut chunks = Vec::new();
            let mut bytes = 0u64;
            let mut events = response.bytes_stream().eventsource();
            loop {
                match tokio::time::timeout_at(deadline, events.next()).await {
                    Err(_) => {
                        ex.error = Some(TransportError {
                            kind: TransportKind::Timeout,
                            message: format!(
                                "stream stalled past {} ms",
                                self.endpoint.timeout.as_millis()
                            ),
                        });
                        break;
                    }
                    Ok(None) => break,
                    Ok(Some(Ok(_))) if chunks.len() >= crate::limits::MAX_STREAM_CHUNKS => {
                        ex.error = Some(TransportError {
                            kind: TransportKind::Cut,
                            message: format!(
                                "the stream went past {} events, the limit per stream",
                                crate::limits::MAX_STREAM_CHUNKS
                            ),
                        });
                        break;
                    }
                    Ok(Some(Ok(e))) => {
                        bytes = bytes.saturating_add((e.data.len() + e.event.len()) as u64);
                        if bytes > max {
                            return (ex, ms(started), true);
                        }
                        chunks.push(TimedEvent {
                            t_ms: ms(started),
                            event: crate::provider::SseEvent::wire_name(e.event),
                            data: e.data,
                        });
                    }
                    Ok(Some(Err(e))) => {
                        ex.error = Some(TransportError {
                            kind: TransportKind::Cut,
                            message: e.to_string(),
                        });
                        break;
                    }
                }
            }
            ex.chunks = Some(chunks);
        } else {
            let mut response = response;
            let read = async {
                let mut bytes: Vec<u8> = Vec::new();
                while let Some(chunk) = response.chunk().await? {
                    if bytes.len() as u64 + chunk.len() as u64 > max {
                        return Ok(None);
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok::<_, reqwest::Error>(Some(bytes))
            };
            match tokio::time::timeout_at(deadline, read).await {
                Ok(Ok(None)) => return (ex, ms(started), true),
                Err(_) => {
                    ex.error = Some(TransportError {
                        kind: TransportKind::Timeout,
                        message: format!(
                            "body incomplete after {} ms",
                            self.endpoint.timeout.as_millis()
                        ),
                    });
                }
                Ok(Err(e)) => {
                    ex.error = Some(TransportError {
                        kind: TransportKind::Cut,
                        message: error_chain(&e),
                    });
                }
                Ok(Ok(Some(bytes))) => {
                    ex.body = Some(serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                        Value::String(String::from_utf8_lossy(&bytes).into_owned())
                    }));
                }
            }
        }
        (ex, ms(started), false)
    }

    /// The real wait before retrying after this fault, as the engine computes its virtual one.
    fn plan_wait(&mut self, kind: FaultKind, hint: Option<u64>) {
        self.faults[kind as usize] += 1;
        let rule = match kind {
            FaultKind::RateLimit => &self.retry.rate_limit,
            FaultKind::ServerError => &self.retry.server_error,
            FaultKind::Timeout => &self.retry.timeout,
            FaultKind::ContextOverflow | FaultKind::Refused => return,
        };
        let ms = rule.delay(self.faults[kind as usize], hint);
        self.wait = Duration::from_millis(ms).min(self.endpoint.max_wait);
    }
}

/// A reqwest error with its sources (the top line alone rarely says what happened).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// Scrub an exchange for the cassette: request, body, events, error text.
pub fn scrub_exchange(scrubber: &Scrubber, ex: &mut Exchange) {
    scrubber.scrub_value(&mut ex.request);
    ex.request = sorted(&ex.request);
    for v in ex.headers.values_mut() {
        *v = scrubber.scrub(v);
    }
    if let Some(b) = &mut ex.body {
        scrubber.scrub_value(b);
    }
    if let Some(c) = &mut ex.chunks {
        scrubber.scrub_events(c);
    }
    if let Some(e) = &mut ex.error {
        e.message = scrubber.scrub(&e.message);
    }
}

/// What the engine gets for a recorded exchange (shared with the player).
pub fn answer(outcome: Outcome, request: &ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
    match outcome {
        Outcome::Response(r) => Ok(r),
        Outcome::Fault(f) => Err(ModelError::Provider(f)),
        Outcome::Fatal(_) => Err(stop(request)),
    }
}

/// The error that stops the engine at once (the caller knows why).
pub fn stop(request: &ModelRequest<'_>) -> ModelError {
    ModelError::Script(ScriptError {
        call: request.call,
        iteration: request.iteration,
        turns: 0,
        purpose: request.purpose,
    })
}

/// Usage as a cassette records it.
pub fn usage_of(outcome: &Outcome) -> Option<UsageRecord> {
    match outcome {
        Outcome::Response(r) => Some(UsageRecord {
            input: r.usage.input,
            output: r.usage.output,
        }),
        _ => None,
    }
}

impl Model for LiveModel {
    #[expect(
        clippy::disallowed_methods,
        reason = "a live recording waits out the provider's retry delay (an edge: record)"
    )]
    fn respond(&mut self, request: &ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        if self.fatal.is_some() {
            return Err(stop(request));
        }
        if !self.wait.is_zero() {
            std::thread::sleep(std::mem::take(&mut self.wait));
        }
        let body = self
            .endpoint
            .provider
            .render_request(request, &self.endpoint.options);
        let (mut ex, elapsed, too_large) = self.rt.block_on(self.send(&body));
        if too_large {
            self.fatal = Some(Fatal::TooLarge(format!(
                "the provider's answer to model call {} is over the limit of {} bytes a recording keeps",
                request.call,
                crate::limits::MAX_RESPONSE_BYTES
            )));
            return Err(stop(request));
        }
        ex.call = request.call;
        ex.purpose = request.purpose;
        ex.request = body;
        ex.elapsed_ms = elapsed;
        scrub_exchange(&self.scrubber, &mut ex);
        let never_reached = self.exchanges.iter().all(|e| e.status.is_none());
        let outcome = match &ex.error {
            // A provider never reached is a wrong URL or a server that is down, not a fault
            // to record and retry.
            Some(e) if e.kind == TransportKind::Connect && never_reached => {
                self.fatal = Some(Fatal::Unreachable(format!(
                    "cannot connect to {}: {}",
                    self.scrubber.scrub(&self.url),
                    e.message
                )));
                return Err(stop(request));
            }
            _ => ex.outcome(self.endpoint.provider, elapsed),
        };
        ex.usage = usage_of(&outcome);
        self.exchanges.push(ex);
        match &outcome {
            // As the engine counts: in a row, or over the run with `retry.per_run`.
            Outcome::Response(_) if !self.retry.per_run => self.faults = [0; FaultKind::COUNT],
            Outcome::Response(_) => {}
            Outcome::Fault(f) => self.plan_wait(f.kind, f.retry_after_ms),
            Outcome::Fatal(m) => self.fatal = Some(Fatal::Refused(self.scrubber.scrub(m))),
        }
        answer(outcome, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, Purpose, Role};

    #[test]
    fn an_unreachable_https_provider_is_fatal_not_a_panic() {
        let endpoint = Endpoint {
            provider: Provider::Anthropic,
            // Port 9 on loopback: nothing listens; the TLS stack must still build.
            base_url: "https://127.0.0.1:9".into(),
            key: "sk-ant-test-0123456789".into(),
            options: WireOptions {
                model: "m".into(),
                stream: false,
                max_tokens: None,
            },
            timeout: Duration::from_secs(5),
            max_wait: Duration::ZERO,
        };
        let mut live = LiveModel::new(
            endpoint,
            Scrubber::default(),
            crate::policy::Config::profile("none")
                .expect("profile")
                .retry,
        )
        .expect("client builds");
        let messages = [Message::new(Role::User, "hi")];
        let request = ModelRequest {
            purpose: Purpose::Turn,
            iteration: 1,
            call: 1,
            messages: &messages,
            tools: &[],
            force_text: false,
            lineage: None,
        };
        assert!(matches!(live.respond(&request), Err(ModelError::Script(_))));
        let Some(Fatal::Unreachable(fatal)) = live.fatal.clone() else {
            panic!("not unreachable: {:?}", live.fatal);
        };
        assert!(
            fatal.starts_with("cannot connect to https://127.0.0.1:9/v1/messages"),
            "{fatal}"
        );
    }
}
