//! `harness proxy`: record any agent's real session. The proxy listens on loopback, forwards
//! every request to the real provider (the key from harness's environment when it has one,
//! never written), and passes the answer back as it comes: status, headers and body byte for
//! byte, a stream chunk by chunk as the provider sends it, a provider's fault or a cut stream
//! unchanged. Each model request (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`, the
//! Gemini API's `models/{model}:generateContent` and `:streamGenerateContent`) is teed,
//! scrubbed, into the session; any other path (model lists, token counts) is forwarded and not
//! recorded. A Gemini request is kept with the model and stream form its path names folded
//! into its body (`model`, `"stream": true`), and the key its clients may send in the query
//! (`?key=`) is scrubbed as a header's is, and left out when harness sends its own.
//!
//! When the session ends, its exchanges are split into conversations by [`super::continues`],
//! the matcher `harness serve` decides by, applied in arrival order once every answer is in
//! (an answer's ids are known only when it has ended, and the next request may come first):
//! a request belongs to the conversation whose answer served an id it echoes (a call id, the
//! Responses API's `previous_response_id`); one with no assistant message starts a
//! conversation, unless it retries one whose last answer was a fault, or grows its first user
//! message by one text-protocol step; one whose history holds no id served continues the
//! latest conversation with the same first user message. Each conversation becomes one cassette
//! (format version 2, [`crate::record::cassette`]).

mod keep;

pub use keep::{Kept, Recording, Write, cassette_of, conversations, keep, partial_path};

use super::http::{Running, Signals, Timeouts, read_body, render};
use super::{AnswerBody, Api, DUMMY_KEY, Handled, Session, refusal};
use crate::diagnostic::Diagnostic;
use crate::provider::{Provider, SseEvent};
use crate::record::cassette::{
    Exchange, HEADER_ALLOW_LIST, TimedEvent, TransportError, TransportKind,
};
use crate::record::live::{error_chain, scrub_exchange};
use crate::record::scrub::Scrubber;
use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Response, Uri};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Where the proxy forwards to, and with which keys.
#[derive(Debug, Clone)]
pub struct Upstreams {
    /// Each provider's base URL, as its SDK takes it (`https://api.openai.com/v1`,
    /// `https://api.anthropic.com`), and the key to send instead of the agent's, if any; in
    /// the order of [`Provider::ALL`].
    pub each: Vec<(Provider, String, Option<String>)>,
    /// How long the provider may take to start answering.
    pub timeout: Duration,
}

impl Upstreams {
    /// The upstreams `--upstream` names (`PROVIDER=URL`, e.g. `openai=URL`, or a bare URL for
    /// all), over the providers' defaults, with the keys the environment sets (never the
    /// dummy key).
    pub fn named(upstream: &[String], timeout: Duration) -> Result<Self, Diagnostic> {
        let mut base: Vec<String> = Provider::ALL
            .iter()
            .map(|p| p.default_base_url().to_owned())
            .collect();
        for u in upstream {
            let (which, url) = match u.split_once('=') {
                Some((name, url)) => match name.parse::<Provider>() {
                    Ok(p) => (Some(p), url),
                    // A URL's own `=` (a query) is no provider name.
                    Err(_) if name.contains(['/', ':', '?']) => (None, u.as_str()),
                    Err(why) => {
                        return Err(Diagnostic::new(format!("--upstream {u}: {why}"))
                            .hint("write PROVIDER=URL for one provider, or a bare URL for all"));
                    }
                },
                None => (None, u.as_str()),
            };
            crate::record::check_base_url(url).map_err(|d| Diagnostic {
                message: format!("--upstream {u}: {}", d.message),
                ..d
            })?;
            for (p, b) in Provider::ALL.iter().zip(base.iter_mut()) {
                if which.is_none_or(|w| w == *p) {
                    *b = url.to_owned();
                }
            }
        }
        // The first of the provider's key variables that is set (Gemini's clients read three).
        let key = |p: Provider| {
            p.key_groups().iter().copied().flatten().find_map(|var| {
                std::env::var(var)
                    .ok()
                    .map(|k| k.trim().to_owned())
                    .filter(|k| !k.is_empty() && k != DUMMY_KEY)
            })
        };
        Ok(Self {
            each: Provider::ALL
                .iter()
                .copied()
                .zip(base)
                .map(|(p, b)| (p, b, key(p)))
                .collect(),
            timeout,
        })
    }

    /// A provider's base URL.
    pub fn base(&self, p: Provider) -> &str {
        self.each
            .iter()
            .find(|(q, ..)| *q == p)
            .map_or_else(|| p.default_base_url(), |(_, b, _)| b.as_str())
    }

    /// The key to send a provider instead of the agent's, if any.
    pub fn key(&self, p: Provider) -> Option<&str> {
        self.each
            .iter()
            .find(|(q, ..)| *q == p)
            .and_then(|(_, _, k)| k.as_deref())
    }

    /// Every key it sends (secrets to scrub).
    pub fn keys(&self) -> impl Iterator<Item = String> + '_ {
        self.each.iter().filter_map(|(_, _, k)| k.clone())
    }
}

/// The cassette path of the `n`-th (1-based) conversation recorded to `out` (a folder, or a
/// `NAME.cassette.json` whose further conversations go to `NAME-N.cassette.json`).
pub fn cassette_path(out: &Path, n: usize) -> PathBuf {
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    match name.strip_suffix(crate::record::CASSETTE_SUFFIX) {
        Some(_) if n == 1 => out.to_owned(),
        Some(stem) => out.with_file_name(format!("{stem}-{n}{}", crate::record::CASSETTE_SUFFIX)),
        None => out.join(format!(
            "conversation-{n}{}",
            crate::record::CASSETTE_SUFFIX
        )),
    }
}

/// The cassettes already at `out` that a recording would replace.
pub fn existing_cassettes(out: &Path) -> Vec<PathBuf> {
    if crate::record::is_cassette(out) {
        let mut found: Vec<PathBuf> = out.exists().then(|| out.to_owned()).into_iter().collect();
        if let (Some(dir), Some(stem)) = (
            out.parent(),
            out.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(crate::record::CASSETTE_SUFFIX)),
        ) {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let numbered = name
                    .strip_prefix(&format!("{stem}-"))
                    .and_then(|r| r.strip_suffix(crate::record::CASSETTE_SUFFIX))
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
                if numbered {
                    found.push(e.path());
                }
            }
        }
        found.sort();
        return found;
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(out)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| crate::record::is_cassette(p))
        .collect();
    found.sort();
    found
}

/// The API's path, as the docs name it.
pub fn api_name(api: Api) -> &'static str {
    api.route()
}

/// One model request as it passed through, and its answer once it has ended.
#[derive(Debug, Clone)]
pub struct Slot {
    /// The API it was sent to.
    pub api: Api,
    /// The exchange, complete once `done` (scrubbed when the proxy stops).
    pub exchange: Exchange,
    /// The answer has ended (else the session ended first).
    pub done: bool,
    /// The answer went past [`crate::limits::MAX_RESPONSE_BYTES`]: passed on, not kept.
    pub too_large: bool,
    /// The answer came compressed (its `content-encoding`) although harness asked for none:
    /// passed on, not kept.
    pub encoded: Option<String>,
    /// Answered from this recorded exchange (cassette, exchange; 0-based) of the session's
    /// replay, not by the provider.
    pub replayed: Option<(usize, usize)>,
}

struct Shared {
    client: reqwest::Client,
    upstreams: Upstreams,
    scrubber: Mutex<Scrubber>,
    slots: Mutex<Vec<Slot>>,
    read_timeout: Duration,
    /// The recordings answering what they hold, in a record mode that replays (`none`,
    /// `once`, `new_episodes`).
    replay: Mutex<Option<Session>>,
    /// What the replay refused, as it told the agent.
    refusals: Mutex<Vec<String>>,
    /// Requests the proxy does not pass on (an endpoint it does not serve, a path that is not
    /// plain), each as the agent was told.
    unsent: Mutex<Vec<String>>,
    /// Set when the proxy begins to stop: an answer cut after it was cut by the proxy, not by
    /// the agent.
    stopping: Arc<std::sync::atomic::AtomicBool>,
    /// Record mode `none`: nothing goes to the provider, not even a request that is no model
    /// request (a model list).
    offline: bool,
    /// What the session's recording holds so far, as a cassette would write it (an estimate
    /// kept below [`crate::limits::MAX_CASSETTE_BYTES`]), and the requests refused past it.
    budget: Mutex<Budget>,
}

/// The session's recording against the cassette limits: a request that would take it past
/// them is refused (413) before it is sent, so no conversation is recorded that a replay would
/// refuse to read.
#[derive(Debug, Default)]
struct Budget {
    /// Bytes a cassette of the whole session would hold (estimated from above).
    bytes: u64,
    /// Requests refused at the limit.
    refused: usize,
}

/// Bytes a recorded request or answer of `text_len` bytes of JSON takes in a cassette: its
/// pretty-printed text nested in an exchange (an estimate from above).
fn cassette_cost(text_len: usize) -> u64 {
    (text_len as u64).saturating_mul(5) / 4 + 512
}

/// How the session's recording ended against the cassette limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounded {
    /// Model requests refused (413, not sent) because the recording would have passed a limit.
    pub refused: usize,
}

/// A running proxy.
pub struct Proxy {
    running: Running,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Bind `addr` and forward to `upstreams` until stopped (or, with [`Signals::Stop`], until
    /// Ctrl-C, SIGTERM or SIGHUP). `scrubber` knows the keys in use; the keys agents send are added.
    pub fn start(
        upstreams: Upstreams,
        scrubber: Scrubber,
        addr: SocketAddr,
        signals: Signals,
    ) -> io::Result<Self> {
        Self::start_replaying(upstreams, scrubber, addr, signals, None)
    }

    /// [`Proxy::start`], with `replay` answering the requests its recordings hold: those its
    /// record mode leaves to the provider ([`Handled::Live`]) are forwarded and recorded.
    pub fn start_replaying(
        upstreams: Upstreams,
        scrubber: Scrubber,
        addr: SocketAddr,
        signals: Signals,
        replay: Option<Session>,
    ) -> io::Result<Self> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(io::Error::other)?;
        let timeouts = Timeouts::default();
        let shared = Arc::new(Shared {
            client,
            upstreams,
            scrubber: Mutex::new(scrubber),
            slots: Mutex::new(Vec::new()),
            read_timeout: timeouts.read,
            budget: Mutex::new(Budget::default()),
            offline: replay
                .as_ref()
                .and_then(|s| s.replay())
                .is_some_and(|r| r.record_mode == Some(super::replay::RecordMode::None)),
            replay: Mutex::new(replay),
            refusals: Mutex::new(Vec::new()),
            unsent: Mutex::new(Vec::new()),
            stopping: Arc::default(),
        });
        let app = Router::new()
            .fallback(forward)
            .layer(DefaultBodyLimit::disable())
            .with_state(Arc::clone(&shared));
        let running = Running::start(
            "harness-proxy",
            addr,
            signals,
            timeouts,
            app,
            Arc::clone(&shared.stopping),
        )?;
        Ok(Self { running, shared })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.running.addr()
    }

    /// Has it stopped on its own (a signal)?
    pub fn finished(&self) -> bool {
        self.running.finished()
    }

    /// How the recording stands against the cassette limits.
    pub fn bounded(&self) -> Bounded {
        Bounded {
            refused: lock(&self.shared.budget).refused,
        }
    }

    /// Stop, and the session's model requests in arrival order, with the scrubber that knows
    /// every key seen.
    pub fn stop(self) -> io::Result<(Vec<Slot>, Scrubber)> {
        self.stop_replaying()
            .map(|(slots, scrubber, _)| (slots, scrubber))
    }

    /// From now on, an answer cut short is harness's doing (it is ending the agent: a timeout
    /// or a stop signal), not the agent's.
    pub fn mark_stopping(&self) {
        self.shared
            .stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The requests not passed on so far (each as the agent was told), in order; taken.
    pub fn unsent(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.shared.unsent))
    }

    /// [`Proxy::stop`], with what the replay refused (each as the agent was told), in order.
    pub fn stop_replaying(self) -> io::Result<(Vec<Slot>, Scrubber, Vec<String>)> {
        self.running.stop()?;
        let refusals = std::mem::take(&mut *lock(&self.shared.refusals));
        let mut slots = std::mem::take(&mut *lock(&self.shared.slots));
        let scrubber = lock(&self.shared.scrubber).clone();
        // Scrubbed once the session is over, not on the answer's way back to the agent: every
        // key seen by then is scrubbed from every exchange, also one recorded before that key
        // first came.
        for slot in &mut slots {
            scrub_exchange(&scrubber, &mut slot.exchange);
        }
        Ok((slots, scrubber, refusals))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The API a path belongs to, when it is a model request.
fn api_of(path: &str) -> Option<Api> {
    Api::of_path(path)
}

/// Whether the proxy passes `method path` on: only the endpoints `serve` itself answers (the
/// three model APIs and Anthropic's token count by POST, the model list and one model by GET,
/// with or without `/v1`), each segment plain — no `.` or `..` and no encoded `/`, `\` or `.`
/// that would climb out of the upstream's base path with harness's key. `Err` is the status
/// and why.
fn passes(method: &Method, path: &str) -> Result<(), (u16, String)> {
    let shown = path.escape_default();
    let segments: Vec<&str> = path.strip_prefix('/').unwrap_or(path).split('/').collect();
    let plain = |seg: &str| {
        !seg.is_empty() && !matches!(seg, "." | "..") && !seg.contains('%') && !seg.contains('\\')
    };
    if !segments.iter().all(|s| plain(s)) {
        return Err((
            400,
            format!(
                "harness proxy: the path {shown} is not a plain API path (empty, `.` or `..` segments, or percent-escapes); it was not sent"
            ),
        ));
    }
    let provider = Provider::of_request(path, |_| false);
    if !provider.proxied() {
        return Err((
            404,
            format!(
                "harness proxy: {method} {shown} is the {} API's, which the proxy does not forward yet (`harness serve` and `exec` serve it); it was not sent",
                provider.title()
            ),
        ));
    }
    let (post, get) = if provider == Provider::Gemini {
        // `/{version}/models/{model}:{method}` and the model list, by the API's versions.
        let below = match segments.as_slice() {
            [v, rest @ ..] if ["v1beta", "v1alpha", "v1"].contains(v) => rest,
            rest => rest,
        };
        let post = matches!(below, ["models", m] if m.rsplit_once(':').is_some_and(|(model, method)| {
            !model.is_empty()
                && matches!(method, "generateContent" | "streamGenerateContent" | "countTokens")
        }));
        let get = matches!(below, ["models"]) || matches!(below, ["models", m] if !m.contains(':'));
        (post, get)
    } else {
        let below = match segments.as_slice() {
            ["v1", rest @ ..] => rest,
            rest => rest,
        };
        let post = matches!(
            below,
            ["chat", "completions"] | ["responses"] | ["messages"] | ["messages", "count_tokens"]
        );
        (post, matches!(below, ["models"] | ["models", _]))
    };
    match (post || get, method) {
        (false, _) => Err((
            404,
            format!(
                "harness proxy: {method} {shown} is none of the API endpoints the proxy passes on (chat/completions, responses, messages, messages/count_tokens, models; the Gemini API's models/{{model}}:generateContent, :streamGenerateContent and :countTokens); it was not sent"
            ),
        )),
        (true, m) if (post && *m == Method::POST) || (get && *m == Method::GET) => Ok(()),
        (true, _) => Err((
            405,
            format!(
                "harness proxy: {method} is not how {shown} is asked ({}); it was not sent",
                if post { "POST" } else { "GET" }
            ),
        )),
    }
}

/// Is this request for Anthropic (by its path, or its headers on a path both share)?
fn provider_of(path: &str, headers: &HeaderMap) -> Provider {
    Provider::of_request(path, |h| headers.contains_key(h))
}

/// The key a request carries in its query (`?key=`, as Gemini's clients may send it).
fn query_key(query: Option<&str>) -> Option<String> {
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("key="))
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
}

/// The upstream URL of a request path: below a base that holds the `/v1` (OpenAI's), or a
/// base that does not (Anthropic's, Gemini's). With `own_key` (harness sends its key in a
/// header) the agent's `?key=` is left out.
fn upstream_url(base: &str, provider: Provider, uri: &Uri, own_key: bool) -> String {
    let base = base.trim_end_matches('/');
    let path = uri.path();
    let url = if !provider.base_holds_version() {
        // The path holds its version: a base's own is dropped.
        const VERSIONS: [&str; 3] = ["/v1", "/v1beta", "/v1alpha"];
        let versioned = VERSIONS
            .iter()
            .any(|v| path.strip_prefix(v).is_some_and(|r| r.starts_with('/')));
        let base = VERSIONS
            .iter()
            .find_map(|v| base.strip_suffix(v))
            .filter(|_| versioned)
            .unwrap_or(base);
        format!("{base}{path}")
    } else {
        let below = path
            .strip_prefix("/v1")
            .filter(|p| p.starts_with('/') || p.is_empty());
        format!("{base}{}", below.unwrap_or(path))
    };
    let query: Vec<&str> = uri
        .query()
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|kv| !(own_key && kv.starts_with("key=")))
        .collect();
    if query.is_empty() {
        url
    } else {
        format!("{url}?{}", query.join("&"))
    }
}

/// Headers that belong to one connection, not to the request or answer passed on.
const HOP: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
    // Asked for plain bodies, so the recording can read them; the agent gets them plain.
    "accept-encoding",
];

#[expect(
    clippy::disallowed_methods,
    reason = "the proxy measures the provider's latency for the cassette (an edge: serve)"
)]
async fn forward(
    State(s): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response<axum::body::Body> {
    let provider = provider_of(uri.path(), &headers);
    if let Err((status, message)) = passes(&method, uri.path()) {
        lock(&s.unsent).push(message.clone());
        return render(refusal(provider, status, &message), 0.0);
    }
    let bytes = match read_body("harness proxy", provider, &headers, body, s.read_timeout).await {
        Ok(b) => b,
        Err((answer, why)) => {
            lock(&s.unsent).push(why);
            return answer;
        }
    };
    let (base, key) = (s.upstreams.base(provider), s.upstreams.key(provider));
    // The agent's own key is a secret too, whether it is sent on or replaced: in a header, or
    // in the query (the Gemini API's `?key=`).
    lock(&s.scrubber).learn(
        super::http::keys(&headers)
            .into_iter()
            .chain(query_key(uri.query())),
    );
    let url = upstream_url(base, provider, &uri, key.is_some());
    let mut out = reqwest::header::HeaderMap::new();
    for (name, value) in &headers {
        if HOP.contains(&name.as_str()) {
            continue;
        }
        if super::http::KEY_HEADERS.contains(&name.as_str()) && key.is_some() {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    // Plain bodies, so that the recording can read them (the agent's own wish was dropped
    // with the other per-connection headers).
    out.insert(
        reqwest::header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    if let Some(key) = key {
        for (name, value) in provider.auth_headers(key) {
            if name == "anthropic-version" && out.contains_key(name) {
                continue;
            }
            if let Ok(v) = HeaderValue::from_str(&value) {
                out.insert(HeaderName::from_static(name), v);
            }
        }
    }
    let api = api_of(uri.path()).filter(|_| method == Method::POST);
    // What the path says besides the API (Gemini's model and stream form).
    let mut hints = super::http::hints(&headers);
    if let Some(routed) = Api::route_of(uri.path(), uri.query()) {
        hints.model = routed.model;
        hints.stream = routed.stream;
    }
    // A recorded answer is no live request: only what goes to the provider is charged here
    // (a replayed exchange is charged when it is kept for writing).
    if let Some(api) = api {
        if let Some(answered) = replayed(&s, api, hints.clone(), &headers, &bytes) {
            return answered;
        }
    }
    if api.is_some() && !s.offline {
        let mut budget = lock(&s.budget);
        let cost = cassette_cost(bytes.len());
        let exchanges = lock(&s.slots).len();
        if budget.bytes.saturating_add(cost) > crate::limits::MAX_CASSETTE_BYTES
            || exchanges >= crate::limits::MAX_CASSETTE_EXCHANGES
        {
            budget.refused += 1;
            let message = format!(
                "harness proxy: recording this request would take the session past what a cassette may hold ({} MiB, {} exchanges; docs/robustness.md \"Limits\"); it was not sent",
                crate::limits::MAX_CASSETTE_BYTES / (1024 * 1024),
                crate::limits::MAX_CASSETTE_EXCHANGES
            );
            return render(refusal(provider, 413, &message), 0.0);
        }
        budget.bytes += cost;
    }
    if api.is_none() && s.offline {
        let message = format!(
            "harness proxy: record mode `none` never asks the provider, and {} {} is no model request a recording answers",
            method,
            uri.path()
        );
        lock(&s.refusals).push(message.clone());
        return render(refusal(provider, 503, &message), 0.0);
    }
    let slot = api.map(|api| {
        let mut request = serde_json::from_slice::<Value>(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        if api.model_in_path() {
            hints.fold_into(&mut request);
        }
        let mut slots = lock(&s.slots);
        slots.push(Slot {
            api,
            exchange: Exchange::unanswered(request),
            done: false,
            too_large: false,
            encoded: None,
            replayed: None,
        });
        slots.len() - 1
    });
    let started = Instant::now();
    let sent = s
        .client
        .request(method, &url)
        .headers(out)
        .body(bytes)
        .send();
    let failed = |kind: TransportKind, message: String| {
        let message = format!("harness proxy: cannot reach the provider: {message}");
        let served = refusal(provider, 502, &message);
        let mut tee = Tee::new(&s, slot, started, false);
        if let AnswerBody::Json(b) = &served.body {
            tee.body = b.to_string().into_bytes();
        }
        tee.status = Some(502);
        tee.finish(Some((kind, message)));
        render(served, 0.0)
    };
    let response = match tokio::time::timeout(s.upstreams.timeout, sent).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return failed(TransportKind::Connect, error_chain(&e)),
        Err(_) => {
            return failed(
                TransportKind::Timeout,
                format!(
                    "no answer from {url} within {} ms",
                    s.upstreams.timeout.as_millis()
                ),
            );
        }
    };
    let status = response.status();
    let mut builder = Response::builder().status(status.as_u16());
    let mut kept = BTreeMap::new();
    for (name, value) in response.headers() {
        if HOP.contains(&name.as_str()) {
            continue;
        }
        if HEADER_ALLOW_LIST.contains(&name.as_str()) {
            kept.insert(
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            );
        }
        builder = builder.header(name.as_str(), value.as_bytes());
    }
    let is_sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let mut tee = Tee::new(&s, slot, started, is_sse);
    tee.status = Some(status.as_u16());
    tee.headers = kept;
    // Asked for plain bodies; a provider that compresses regardless cannot be recorded (its
    // bytes still reach the agent, with their header).
    tee.encoded = response
        .headers()
        .get("content-encoding")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned())
        .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"));
    // The provider may not fall silent mid-answer for longer than it may take to start one
    // (`--upstream-timeout-ms`): past it the answer is cut, and recorded as cut, saying why.
    let idle = s.upstreams.timeout;
    let stream = futures_util::stream::unfold(
        (response.bytes_stream(), Some(tee)),
        move |(mut upstream, mut tee)| async move {
            use futures_util::StreamExt as _;
            let t = tee.as_mut()?;
            let Ok(next) = tokio::time::timeout(idle, upstream.next()).await else {
                let message = format!(
                    "the provider sent nothing for {} ms in the middle of its answer (--upstream-timeout-ms)",
                    idle.as_millis()
                );
                if let Some(t) = tee.take() {
                    t.finish(Some((TransportKind::Cut, message.clone())));
                }
                return Some((Err(io::Error::other(message)), (upstream, None)));
            };
            match next {
                Some(Ok(bytes)) => {
                    t.push(&bytes);
                    Some((Ok(bytes), (upstream, tee)))
                }
                Some(Err(e)) => {
                    let message = error_chain(&e);
                    if let Some(t) = tee.take() {
                        t.finish(Some((TransportKind::Cut, message.clone())));
                    }
                    Some((Err(io::Error::other(message)), (upstream, None)))
                }
                None => {
                    if let Some(t) = tee.take() {
                        t.finish(None);
                    }
                    None
                }
            }
        },
    );
    builder
        .body(axum::body::Body::from_stream(stream))
        .unwrap_or_else(|_| {
            render(
                refusal(
                    provider,
                    502,
                    "harness proxy: the provider's answer has headers that cannot be passed on",
                ),
                0.0,
            )
        })
}

/// The answer of the session's replay to a model request, unless its record mode leaves the
/// request to the provider (or nothing replays). A recorded answer is kept in the session as
/// the exchange it came from.
fn replayed(
    s: &Arc<Shared>,
    api: Api,
    hints: super::RequestHints,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Option<Response<axum::body::Body>> {
    let mut replaying = lock(&s.replay);
    let session = replaying.as_mut()?;
    session.learn_keys(super::http::keys(headers));
    let array = hints.stream == Some(false);
    let Handled::Answered {
        mut answer,
        recorded,
    } = session.handle_request(api, bytes, hints)
    else {
        return None;
    };
    if array {
        super::http::as_json_array(&mut answer);
    }
    let exchange = recorded.and_then(|(c, n)| {
        let r = session.replay()?;
        r.cassettes.get(c)?.cassette.exchanges.get(n).cloned()
    });
    drop(replaying);
    if recorded.is_none() {
        let said = match &answer.body {
            AnswerBody::Json(v) => v["error"]["message"]
                .as_str()
                .map_or_else(|| v.to_string(), str::to_owned),
            _ => format!("answered {}", answer.status),
        };
        lock(&s.refusals).push(said);
    }
    if let Some(exchange) = exchange {
        // Kept to be written again (`once`, `new_episodes`); mode `none` writes nothing, so it
        // charges nothing.
        if !s.offline {
            let cost = serde_json::to_vec(&exchange).map_or(0, |v| v.len());
            lock(&s.budget).bytes += cassette_cost(cost);
        }
        lock(&s.slots).push(Slot {
            api,
            exchange,
            done: true,
            too_large: false,
            encoded: None,
            replayed: recorded,
        });
    }
    Some(render(answer, 0.0))
}

/// What an answer has brought so far, written into its slot when it ends (or is dropped: the
/// agent went away mid-answer, or the session ended).
struct Tee {
    shared: Arc<Shared>,
    slot: Option<usize>,
    started: Instant,
    sse: bool,
    status: Option<u16>,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
    /// Stream bytes not yet closed by an empty line (kept as bytes: a character may be split
    /// across two network reads).
    pending: Vec<u8>,
    events: Vec<TimedEvent>,
    /// The stream's terminal event has come ([`SseEvent::ends_stream`]): the answer is whole,
    /// whoever closes the connection first.
    ended: bool,
    bytes: u64,
    too_large: bool,
    /// The answer's `content-encoding`, when it has one other than identity.
    encoded: Option<String>,
    finished: bool,
}

impl Tee {
    fn new(shared: &Arc<Shared>, slot: Option<usize>, started: Instant, sse: bool) -> Self {
        Self {
            shared: Arc::clone(shared),
            slot,
            started,
            sse,
            status: None,
            headers: BTreeMap::new(),
            body: Vec::new(),
            pending: Vec::new(),
            events: Vec::new(),
            ended: false,
            bytes: 0,
            too_large: false,
            encoded: None,
            finished: false,
        }
    }

    fn ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.slot.is_none() || self.too_large {
            return;
        }
        self.bytes = self.bytes.saturating_add(bytes.len() as u64);
        if self.bytes > crate::limits::MAX_RESPONSE_BYTES {
            self.too_large = true;
            return;
        }
        if !self.sse {
            self.body.extend_from_slice(bytes);
            return;
        }
        self.pending.extend_from_slice(bytes);
        let t_ms = self.ms();
        for block in take_blocks(&mut self.pending) {
            self.event(t_ms, &block);
        }
    }

    /// Keep the event of one complete block, if it carries one.
    fn event(&mut self, t_ms: u64, block: &str) {
        if let Some(e) = parse_block(block) {
            self.ended |= e.ends_stream();
            self.events.push(TimedEvent {
                t_ms,
                event: e.event,
                data: e.data,
            });
        }
    }

    fn finish(mut self, error: Option<(TransportKind, String)>) {
        self.finished = true;
        self.write(error);
    }

    fn write(&mut self, error: Option<(TransportKind, String)>) {
        let Some(at) = self.slot else {
            return;
        };
        let elapsed = self.ms();
        if self.sse && !self.pending.is_empty() {
            // A last event the provider did not close with an empty line.
            let rest = std::mem::take(&mut self.pending);
            self.event(elapsed, &normal_lines(&rest));
        }
        // An answer whose terminal event came is whole, however the connection ended.
        let error = error.filter(|_| !self.ended);
        // Counted against the cassette limits before the slots are locked (the requests'
        // side takes the budget, then the slots).
        lock(&self.shared.budget).bytes +=
            cassette_cost(usize::try_from(self.bytes).unwrap_or(usize::MAX))
                + 96 * self.events.len() as u64;
        let mut slots = lock(&self.shared.slots);
        let Some(slot) = slots.get_mut(at) else {
            return;
        };
        let ex = &mut slot.exchange;
        ex.status = self.status;
        ex.headers = std::mem::take(&mut self.headers);
        ex.elapsed_ms = elapsed;
        if self.sse {
            ex.chunks = Some(std::mem::take(&mut self.events));
        } else if self.status.is_some() {
            let bytes = std::mem::take(&mut self.body);
            let body = serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
            match body {
                // Gemini's stream without `alt=sse`, one JSON array: kept as the events it
                // holds (a replay gives the array again to a client that asks so).
                Value::Array(items)
                    if slot.api == Api::GenerateContent
                        && self.status.is_some_and(|s| (200..300).contains(&s)) =>
                {
                    ex.chunks = Some(
                        items
                            .into_iter()
                            .map(|item| TimedEvent {
                                t_ms: elapsed,
                                event: None,
                                data: item.to_string(),
                            })
                            .collect(),
                    );
                }
                body => ex.body = Some(body),
            }
        }
        ex.error = error.map(|(kind, message)| TransportError { kind, message });
        slot.done = true;
        slot.too_large = self.too_large;
        slot.encoded = self.encoded.take();
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        if !self.finished {
            self.finished = true;
            // Who cut it: the proxy ending its session (a signal, or the agent's command
            // ended) while the answer still came, or the agent hanging up.
            let who = if self
                .shared
                .stopping
                .load(std::sync::atomic::Ordering::SeqCst)
            {
                "the proxy's session ended before the answer did (it was stopped)"
            } else {
                "the agent closed the connection before the answer ended"
            };
            self.write(Some((TransportKind::Cut, who.to_owned())));
        }
    }
}

/// The complete event blocks at the start of `pending`, removed and decoded: each ends with an
/// empty line, whatever the line ends (CRLF, LF or CR). A CR at the very end waits for the next
/// read, as it may be half of a CRLF. Blocks are decoded whole, so a character split across
/// two network reads is never broken.
fn take_blocks(pending: &mut Vec<u8>) -> Vec<String> {
    let mut blocks = Vec::new();
    let (mut start, mut at) = (0, 0);
    while let Some(offset) = pending[at..]
        .iter()
        .position(|b| matches!(b, b'\r' | b'\n'))
    {
        let end = at + offset;
        let width = match (pending[end], pending.get(end + 1)) {
            (b'\r', Some(b'\n')) => 2,
            (b'\r', None) => break,
            _ => 1,
        };
        if end == at {
            // An empty line: the block since `start` is complete.
            if at > start {
                blocks.push(normal_lines(&pending[start..at]));
            }
            start = end + width;
        }
        at = end + width;
    }
    pending.drain(..start);
    blocks
}

/// Stream bytes as text with `\n` line ends.
fn normal_lines(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .replace("\r\n", "\n")
        .replace('\r', "\n")
}

/// One SSE block's event name and data, if it carries data.
fn parse_block(block: &str) -> Option<SseEvent> {
    let mut event = None;
    let mut data: Option<String> = None;
    for line in block.lines() {
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => event = SseEvent::wire_name(value.to_owned()),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    data.map(|data| SseEvent { event, data })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upstream_urls_follow_the_sdks_base_urls() {
        let uri = |s: &str| s.parse::<Uri>().expect("uri");
        assert_eq!(
            upstream_url(
                "https://api.openai.com/v1",
                Provider::Openai,
                &uri("/v1/chat/completions"),
                false
            ),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            upstream_url(
                "http://127.0.0.1:9/v1/",
                Provider::Openai,
                &uri("/chat/completions?x=1"),
                false
            ),
            "http://127.0.0.1:9/v1/chat/completions?x=1"
        );
        assert_eq!(
            upstream_url(
                "https://api.anthropic.com",
                Provider::Anthropic,
                &uri("/v1/messages"),
                false
            ),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            upstream_url(
                "http://h/v1",
                Provider::Anthropic,
                &uri("/v1/messages"),
                false
            ),
            "http://h/v1/messages"
        );
        // Gemini's paths hold their version; the agent's `?key=` goes on only when harness
        // sends no key of its own.
        let gemini =
            uri("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=AIzaSECRET");
        assert_eq!(
            upstream_url(
                "https://generativelanguage.googleapis.com",
                Provider::Gemini,
                &gemini,
                true
            ),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            upstream_url("http://h/v1beta", Provider::Gemini, &gemini, true),
            "http://h/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            upstream_url("http://h/", Provider::Gemini, &gemini, false),
            "http://h/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=AIzaSECRET"
        );
        assert_eq!(query_key(gemini.query()), Some("AIzaSECRET".to_owned()));
        assert_eq!(query_key(Some("alt=sse")), None);
        assert_eq!(
            api_of("/v1beta/models/gemini-2.5-flash:generateContent"),
            Some(Api::GenerateContent)
        );
        assert_eq!(api_of("/v1/messages"), Some(Api::Messages));
        assert_eq!(api_of("/responses"), Some(Api::Responses));
        assert_eq!(api_of("/v1/models"), None);
    }

    /// `--upstream PROVIDER=URL` names each provider of the registry and only it; a bare URL
    /// is every provider's; a name no provider has is an error, not a bare URL.
    #[test]
    fn each_provider_of_the_registry_is_an_upstream_of_its_own() {
        let t = Duration::from_secs(1);
        for &p in Provider::ALL {
            let u = Upstreams::named(&[format!("{}=http://127.0.0.1:9/x", p.as_str())], t)
                .expect("named");
            for &q in Provider::ALL {
                let want = if q == p {
                    "http://127.0.0.1:9/x"
                } else {
                    q.default_base_url()
                };
                assert_eq!(u.base(q), want, "{p:?} named, {q:?} read");
            }
        }
        let all = Upstreams::named(&["http://127.0.0.1:9/v1?a=b".to_owned()], t).expect("bare");
        for &p in Provider::ALL {
            assert_eq!(all.base(p), "http://127.0.0.1:9/v1?a=b");
        }
        let err = Upstreams::named(&["nosuch=http://127.0.0.1:9".to_owned()], t)
            .expect_err("an unknown provider");
        assert!(
            err.message.contains("unknown provider `nosuch`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn only_the_served_endpoints_pass_and_no_path_climbs_out() {
        for (method, path) in [
            (Method::POST, "/v1/chat/completions"),
            (Method::POST, "/chat/completions"),
            (Method::POST, "/v1/responses"),
            (Method::POST, "/v1/messages"),
            (Method::POST, "/v1/messages/count_tokens"),
            (Method::GET, "/v1/models"),
            (Method::GET, "/v1/models/gpt-4o-mini"),
            (
                Method::POST,
                "/v1beta/models/gemini-2.5-flash:generateContent",
            ),
            (
                Method::POST,
                "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            ),
            (Method::POST, "/v1/models/gemini-2.5-flash:countTokens"),
            (Method::GET, "/v1beta/models"),
            (Method::GET, "/v1beta/models/gemini-2.5-flash"),
        ] {
            assert_eq!(passes(&method, path), Ok(()), "{method} {path}");
        }
        for (method, path, status) in [
            (Method::POST, "/v1/../../tenant-b/chat/completions", 400),
            (Method::POST, "/v1/%2e%2e/tenant-b/chat/completions", 400),
            (Method::GET, "/v1/models/..%2fadmin", 400),
            (Method::POST, "/v1//chat/completions", 400),
            (Method::POST, "/v1/./chat/completions", 400),
            (Method::DELETE, "/v1/models/gpt-4o-mini", 405),
            (Method::GET, "/v1/chat/completions", 405),
            (Method::POST, "/v1/files", 404),
            (Method::DELETE, "/v1/responses/resp_1", 404),
            (Method::GET, "/v1/models/a/b", 404),
            (Method::POST, "/v1beta/models/g:embedContent", 404),
            (Method::POST, "/v1beta/models/:generateContent", 404),
            (Method::POST, "/v1beta/files", 404),
            (Method::GET, "/v1beta/models/g:generateContent", 405),
            (Method::POST, "/v1beta/models/%2e%2e:generateContent", 400),
        ] {
            assert_eq!(
                passes(&method, path).map_err(|(s, _)| s),
                Err(status),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn stream_blocks_are_cut_at_blank_lines_whatever_the_line_ends() {
        let mut pending = b"event: a\r\ndata: {\"x\":1}\r\n\r\ndata: [DO".to_vec();
        let blocks = take_blocks(&mut pending);
        assert_eq!(pending, b"data: [DO");
        assert_eq!(
            parse_block(&blocks[0]),
            Some(SseEvent::named("a", "{\"x\":1}"))
        );
        assert_eq!(parse_block(": comment"), None);
        // A CR at the end may be half of a CRLF: nothing is closed until the next read.
        let mut pending = b"data: 1\r\n\r".to_vec();
        assert!(take_blocks(&mut pending).is_empty());
        pending.extend_from_slice(b"\ndata: 2\r\r");
        assert_eq!(take_blocks(&mut pending), ["data: 1\n"]);
        assert_eq!(pending, b"data: 2\r\r");
        pending.extend_from_slice(b"data: 3\n\n");
        assert_eq!(take_blocks(&mut pending), ["data: 2\n", "data: 3\n"]);
        assert!(pending.is_empty());
        assert_eq!(parse_block("data: a\ndata:b"), Some(SseEvent::data("a\nb")));
    }

    #[test]
    fn a_character_split_across_reads_is_recorded_whole() {
        let text = "data: {\"t\":\"h\u{e9}llo w\u{f6}rld \u{2713} \u{65e5}\u{672c}\u{8a9e} \u{1f389}\"}\n\n";
        let mut pending = Vec::new();
        let mut blocks = Vec::new();
        for b in text.as_bytes() {
            pending.push(*b);
            blocks.extend(take_blocks(&mut pending));
        }
        assert_eq!(blocks, [text.trim_end().to_owned() + "\n"]);
    }

    fn slot(api: Api, request: Value, body: Value) -> Slot {
        Slot {
            api,
            exchange: Exchange {
                status: Some(200),
                body: Some(body),
                elapsed_ms: 5,
                ..Exchange::unanswered(request)
            },
            done: true,
            too_large: false,
            encoded: None,
            replayed: None,
        }
    }

    fn call_answer(id: &str) -> Value {
        json!({"id": format!("chatcmpl-{id}"), "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "exec", "arguments": "{}"}}]}}]})
    }

    fn follow_up(user: &str, ids: &[&str]) -> Value {
        let mut messages = vec![json!({"role": "user", "content": user})];
        for id in ids {
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "exec", "arguments": "{}"}}]}));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": "Error: no"}));
        }
        json!({"model": "m", "messages": messages})
    }

    #[test]
    fn interleaved_agents_are_told_apart_by_the_ids_they_echo() {
        // Two agents with the same task, interleaved: A1 B1 A2 B2 A3.
        let slots = vec![
            slot(
                Api::ChatCompletions,
                follow_up("task", &[]),
                call_answer("a1"),
            ),
            slot(
                Api::ChatCompletions,
                follow_up("task", &[]),
                call_answer("b1"),
            ),
            slot(
                Api::ChatCompletions,
                follow_up("task", &["a1"]),
                call_answer("a2"),
            ),
            slot(
                Api::ChatCompletions,
                follow_up("task", &["b1"]),
                call_answer("b2"),
            ),
            slot(
                Api::ChatCompletions,
                follow_up("task", &["a1", "a2"]),
                json!({}),
            ),
            slot(Api::ChatCompletions, follow_up("other", &[]), json!({})),
        ];
        assert_eq!(
            conversations(&slots),
            vec![vec![0, 2, 4], vec![1, 3], vec![5]]
        );
        // A retry after a 429 stays in its conversation.
        let mut limited = slot(
            Api::ChatCompletions,
            follow_up("t", &[]),
            json!({"error": {}}),
        );
        limited.exchange.status = Some(429);
        let slots = vec![
            limited,
            slot(Api::ChatCompletions, follow_up("t", &[]), call_answer("c1")),
            slot(Api::ChatCompletions, follow_up("t", &["c1"]), json!({})),
        ];
        assert_eq!(conversations(&slots), vec![vec![0, 1, 2]]);
    }
}
