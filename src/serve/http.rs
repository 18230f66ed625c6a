//! The HTTP side of `harness serve`: an axum router served by hyper on its own thread (a
//! current-thread tokio runtime) routing `POST /v1/chat/completions`, `POST /v1/responses`
//! (each also without `/v1`) and `POST /v1/messages` to a shared [`Session`];
//! `GET /v1/models` and `GET /v1/models/{id}` name the scenario's model in the shape of the
//! API the path belongs to; `POST /v1/messages/count_tokens` counts a request's input tokens
//! as the script's token estimate does. Bodies above [`MAX_REQUEST_BYTES`] are answered 413,
//! and so is every request once the session has read
//! [`crate::limits::MAX_SESSION_REQUEST_BYTES`]; other paths 404 with a hint; every error body
//! is in the shape of the API its path belongs to.
//!
//! Streams are streamed: each event is its own chunk of a chunked body, written as it is
//! produced. With a pace (`--pace F`), the events of an answer are spread over F times its
//! scripted latency on the wall clock (the virtual clock of the trace is unchanged); by default
//! they go out at once. A stream the script cuts before its finish ends by dropping the
//! connection, as a network cut does.
//!
//! A client has [`Timeouts::read`] to send a request's headers, and again its body (408 past
//! it). Stopping (a signal, [`Server::stop`]) closes the listener, lets open connections finish
//! for [`Timeouts::grace`] and cuts the rest, so a stalled client never holds a stop.

use super::{AnswerBody, Api, HttpAnswer, MAX_REQUEST_BYTES, RequestHints, Session, refusal};
use crate::provider::Provider;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State as AxumState};
use axum::http::header::CONTENT_LENGTH;
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode, Uri};
use axum::routing::{get, post};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the handlers share: the session, and what the session has read so far.
struct State {
    session: Mutex<Session>,
    /// Answers sent so far (numbers the request ids).
    answered: AtomicU64,
    read_bytes: AtomicU64,
    max_read_bytes: u64,
    read_timeout: Duration,
    pace: f64,
}

type Shared = Arc<State>;

/// The server's time limits and pacing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    /// How long a client may take to send a request's headers, and then its body.
    pub read: Duration,
    /// How long a stop waits for open connections before it cuts them.
    pub grace: Duration,
    /// Wall-clock seconds per virtual second of a streamed answer's latency (0: no pacing).
    pub pace: f64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            read: Duration::from_millis(crate::limits::READ_TIMEOUT_MS),
            grace: Duration::from_millis(crate::limits::SHUTDOWN_GRACE_MS),
            pace: 0.0,
        }
    }
}

/// A running server.
pub struct Server {
    running: Running,
    state: Shared,
}

/// A router served on a thread of its own (a current-thread tokio runtime) until stopped, or
/// until a signal with [`Signals::Stop`]: what `harness serve` and `harness proxy` share.
pub(super) struct Running {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Running {
    /// Bind `addr` and serve `app` on a thread named `name`; `stopping` is set the moment it
    /// begins to stop (asked, or a signal), before open connections are ended.
    #[expect(
        clippy::disallowed_methods,
        reason = "the server runs on a thread of its own (an edge: serve)"
    )]
    pub(super) fn start(
        name: &str,
        addr: SocketAddr,
        signals: Signals,
        timeouts: Timeouts,
        app: Router,
        stopping: Arc<std::sync::atomic::AtomicBool>,
    ) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                let shutdown = async move {
                    match signals {
                        Signals::Ignore => {
                            let _ = stopped.await;
                        }
                        Signals::Stop => {
                            let stopped = std::pin::pin!(stopped);
                            let signal = std::pin::pin!(signal());
                            let _ = futures_util::future::select(stopped, signal).await;
                        }
                    }
                    stopping.store(true, std::sync::atomic::Ordering::SeqCst);
                };
                // Dropping the runtime at the end drops the connections the grace cut.
                rt.block_on(serve(listener, app, shutdown, timeouts))
            })?;
        Ok(Self {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub(super) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Has it stopped on its own (a signal, or a failure)?
    pub(super) fn finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stop (open connections get [`Timeouts::grace`] to finish) and wait for the thread.
    pub(super) fn stop(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other("the server thread panicked"))?,
            None => Ok(()),
        }
    }
}

/// Also end the server on Ctrl-C (and SIGTERM, SIGHUP), for `harness serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signals {
    /// Stop only when asked ([`Server::stop`]).
    Ignore,
    /// Stop on Ctrl-C, SIGTERM or SIGHUP too.
    Stop,
}

impl Server {
    /// Bind `addr` and serve `session` until stopped, with the default [`Timeouts`] and
    /// session limit.
    pub fn start(session: Session, addr: SocketAddr, signals: Signals) -> io::Result<Self> {
        Self::start_with(
            session,
            addr,
            signals,
            Timeouts::default(),
            crate::limits::MAX_SESSION_REQUEST_BYTES,
        )
    }

    /// Bind `addr` and serve `session` until stopped, reading at most `max_read_bytes` of
    /// request bodies in all.
    pub fn start_with(
        session: Session,
        addr: SocketAddr,
        signals: Signals,
        timeouts: Timeouts,
        max_read_bytes: u64,
    ) -> io::Result<Self> {
        let state = Arc::new(State {
            session: Mutex::new(session),
            answered: AtomicU64::new(0),
            read_bytes: AtomicU64::new(0),
            max_read_bytes,
            read_timeout: timeouts.read,
            pace: timeouts.pace,
        });
        let app = router(Arc::clone(&state));
        let running = Running::start(
            "harness-serve",
            addr,
            signals,
            timeouts,
            app,
            Arc::default(),
        )?;
        Ok(Self { running, state })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.running.addr()
    }

    /// Has it stopped on its own (a signal, or a failure)?
    pub fn finished(&self) -> bool {
        self.running.finished()
    }

    /// Stop serving (open connections get [`Timeouts::grace`] to finish) and hand back the
    /// session.
    pub fn stop(self) -> io::Result<Session> {
        self.running.stop()?;
        let state = Arc::try_unwrap(self.state)
            .map_err(|_| io::Error::other("the session is still shared"))?;
        Ok(state
            .session
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner))
    }
}

/// Accept connections until `shutdown`, each served by hyper with a header read timeout;
/// then close the listener, ask every connection to finish, and cut those still open after
/// the grace period.
#[expect(
    clippy::disallowed_methods,
    reason = "the server paces and times out connections on the wall clock (an edge: serve)"
)]
async fn serve(
    listener: std::net::TcpListener,
    app: Router,
    shutdown: impl std::future::Future<Output = ()>,
    timeouts: Timeouts,
) -> io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let (close, closing) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    // Out of descriptors and the like: wait a little rather than spin.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Small writes (an event of a stream, the end of a chunked body) go out at
                // once, not held back until the previous one is acknowledged.
                let _ = stream.set_nodelay(true);
                let service = hyper_util::service::TowerToHyperService::new(app.clone());
                let mut closing = closing.clone();
                connections.spawn(async move {
                    let mut builder = hyper::server::conn::http1::Builder::new();
                    builder
                        .timer(hyper_util::rt::TokioTimer::new())
                        .header_read_timeout(timeouts.read);
                    let conn =
                        builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                    let mut conn = std::pin::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = closing.changed() => {
                            conn.as_mut().graceful_shutdown();
                            let _ = conn.await;
                        }
                    }
                });
            }
        }
    }
    drop(listener);
    let _ = close.send(true);
    let finished = async { while connections.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(timeouts.grace, finished).await;
    connections.abort_all();
    Ok(())
}

async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            let ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
            let term = std::pin::pin!(term.recv());
            let hup = std::pin::pin!(hup.recv());
            let others = futures_util::future::select(term, hup);
            let _ = futures_util::future::select(ctrl_c, others).await;
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

fn router(state: Shared) -> Router {
    let mut router = Router::new();
    // Each API of the registry, with and without `/v1`: clients differ on whether the base URL
    // holds it.
    for &api in Api::ALL.iter().filter(|a| !a.model_in_path()) {
        let handler = move |AxumState(s): AxumState<Shared>,
                            headers: HeaderMap,
                            body: axum::body::Body| async move {
            handle(&s, api, &headers, body).await
        };
        let route = api.route();
        let bare = route.strip_prefix("/v1").unwrap_or(route);
        for path in [route, bare] {
            router = router.route(path, post(handler).fallback(method_not_allowed));
        }
    }
    for prefix in ["/v1", ""] {
        router = router
            .route(
                &format!("{prefix}/messages/count_tokens"),
                post(count_tokens).fallback(method_not_allowed),
            )
            .route(
                &format!("{prefix}/models"),
                get(models).fallback(method_not_allowed),
            )
            .route(
                &format!("{prefix}/models/{{id}}"),
                get(model).post(gemini).fallback(method_not_allowed),
            );
    }
    // The Gemini API's own version.
    router = router
        .route(
            &format!("/{}/models", crate::provider::gemini::VERSION),
            get(models).fallback(method_not_allowed),
        )
        .route(
            &format!("/{}/models/{{id}}", crate::provider::gemini::VERSION),
            get(model).post(gemini).fallback(method_not_allowed),
        );
    router
        .fallback(not_found)
        // The handlers bound their bodies themselves (`read`).
        .layer(DefaultBodyLimit::disable())
        .layer(axum::middleware::map_response_with_state(
            Arc::clone(&state),
            request_id,
        ))
        .with_state(state)
}

/// Every answer carries a request id, as the providers' do (`x-request-id`, which the OpenAI
/// SDK reads, and Anthropic's `request-id`): numbered in the session, so never random.
async fn request_id(
    AxumState(s): AxumState<Shared>,
    mut response: Response<axum::body::Body>,
) -> Response<axum::body::Body> {
    let n = s.answered.fetch_add(1, Ordering::Relaxed) + 1;
    if let Ok(id) = HeaderValue::from_str(&format!("req_harness{n:014}")) {
        response.headers_mut().insert("x-request-id", id.clone());
        response.headers_mut().insert("request-id", id);
    }
    response
}

/// A method the endpoint does not take: 405 with an error body in the API's shape.
async fn method_not_allowed(
    method: axum::http::Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response<axum::body::Body> {
    let provider = provider_of(&uri, &headers);
    let allowed = if uri.path().contains("/models") {
        "GET"
    } else {
        "POST"
    };
    let mut r = refused(
        provider,
        StatusCode::METHOD_NOT_ALLOWED,
        &format!(
            "{method} is not allowed on {}: it takes {allowed}",
            uri.path().escape_default()
        ),
    );
    if let Ok(v) = HeaderValue::from_str(allowed) {
        r.headers_mut().insert("allow", v);
    }
    r
}

/// The provider a request is for (see [`Provider::of_request`]).
fn provider_of(uri: &Uri, headers: &HeaderMap) -> Provider {
    Provider::of_request(uri.path(), |h| headers.contains_key(h))
}

/// The keys a request carries (`authorization`'s token, `x-api-key`, `api-key`), as sent and bare.
/// The request headers that carry a key, in the providers' APIs.
pub(super) const KEY_HEADERS: &[&str] =
    &["authorization", "x-api-key", "api-key", "x-goog-api-key"];

pub(super) fn keys(headers: &HeaderMap) -> Vec<String> {
    let mut keys = Vec::new();
    for name in KEY_HEADERS {
        for value in headers.get_all(*name) {
            let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
            if let Some(bare) = text.strip_prefix("Bearer ") {
                keys.push(bare.to_owned());
            }
            keys.push(text);
        }
    }
    keys
}

pub(super) fn hints(headers: &HeaderMap) -> RequestHints {
    RequestHints {
        retry_count: headers
            .get("x-stainless-retry-count")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok()),
        ..RequestHints::default()
    }
}

async fn handle(
    s: &Shared,
    api: Api,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Response<axum::body::Body> {
    handle_hinted(s, api, headers, body, hints(headers)).await
}

/// A stream answered as the one JSON array Gemini's `streamGenerateContent` gives without
/// `alt=sse`: the events' data, as the array's elements (a cut stream stays cut).
pub(super) fn as_json_array(answer: &mut HttpAnswer) {
    let body = std::mem::replace(&mut answer.body, AnswerBody::Json(serde_json::Value::Null));
    answer.body = match body {
        AnswerBody::Events {
            events,
            latency_ms,
            cut,
        } => AnswerBody::Array {
            items: events
                .iter()
                .filter_map(|e| serde_json::from_str(&e.data).ok())
                .collect(),
            latency_ms,
            cut,
        },
        other => other,
    };
}

async fn handle_hinted(
    s: &Shared,
    api: Api,
    headers: &HeaderMap,
    body: axum::body::Body,
    hints: RequestHints,
) -> Response<axum::body::Body> {
    // A stream asked for as one JSON array (Gemini's `streamGenerateContent` without
    // `alt=sse`): the events' data, as the array's elements.
    let array = hints.stream == Some(false);
    match read(s, api.provider(), headers, body).await {
        Ok(bytes) => {
            let mut session = s.session.lock().unwrap_or_else(PoisonError::into_inner);
            session.learn_keys(keys(headers));
            let mut served = session.handle_with(api, &bytes, hints);
            drop(session);
            if array {
                as_json_array(&mut served);
            }
            render(served, s.pace)
        }
        Err(r) => r,
    }
}

/// `POST …/models/{model}:{method}` (the Gemini API): `generateContent` and
/// `streamGenerateContent` answered with the path's model and stream form, `countTokens`
/// counted.
async fn gemini(
    AxumState(s): AxumState<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response<axum::body::Body> {
    match Api::route_of(uri.path(), uri.query()) {
        Some(routed) => {
            let mut h = hints(&headers);
            h.model = routed.model;
            h.stream = routed.stream;
            handle_hinted(&s, routed.api, &headers, body, h).await
        }
        None if uri.path().ends_with(":countTokens") => {
            gemini_count_tokens(&s, &headers, body).await
        }
        None => not_found(AxumState(s), axum::http::Method::POST, uri, headers).await,
    }
}

/// `POST …/models/{model}:countTokens`: the contents' tokens, counted as the script counts
/// them (about four bytes a token).
async fn gemini_count_tokens(
    s: &Shared,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Response<axum::body::Body> {
    let bytes = match read(s, Provider::Gemini, headers, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    // `contents`, or a whole request under `generateContentRequest`.
    counted(Provider::Gemini, &bytes, "totalTokens", |v| {
        v.get("generateContentRequest")
            .or_else(|| v.get("generate_content_request"))
            .cloned()
            .unwrap_or(v)
    })
}

/// A token-counting endpoint's answer: the request read as `provider`'s (after `prepare`),
/// its input tokens counted as the script counts them, under `key`.
fn counted(
    provider: Provider,
    bytes: &[u8],
    key: &str,
    prepare: impl FnOnce(serde_json::Value) -> serde_json::Value,
) -> Response<axum::body::Body> {
    let read = serde_json::from_slice::<serde_json::Value>(bytes)
        .map_err(|e| format!("the request body is not JSON: {e}"))
        .and_then(|v| {
            provider
                .parse_request(&prepare(v))
                .map_err(|e| e.to_string())
        });
    let served = match read {
        Ok(r) => HttpAnswer {
            status: 200,
            headers: Vec::new(),
            body: AnswerBody::Json(serde_json::json!({
                key: crate::mock::estimate_input_tokens(&r.messages, &r.tools)
            })),
        },
        Err(e) => refusal(provider, 400, &format!("harness serve: {e}")),
    };
    render(served, 0.0)
}

/// `POST /v1/messages/count_tokens`: the request's input tokens, counted as the script counts
/// them (about four bytes a token).
async fn count_tokens(
    AxumState(s): AxumState<Shared>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response<axum::body::Body> {
    let bytes = match read(&s, Provider::Anthropic, &headers, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    // The endpoint takes a Messages request without `max_tokens`.
    counted(Provider::Anthropic, &bytes, "input_tokens", |mut v| {
        if let Some(o) = v.as_object_mut() {
            o.entry("max_tokens").or_insert(serde_json::json!(1));
        }
        v
    })
}

/// An error answer in the shape of `provider`'s API, from `harness serve`.
fn refused(provider: Provider, status: StatusCode, message: &str) -> Response<axum::body::Body> {
    refused_by("harness serve", provider, status, message)
}

/// An error answer in the shape of `provider`'s API, from the command `who`.
fn refused_by(
    who: &str,
    provider: Provider,
    status: StatusCode,
    message: &str,
) -> Response<axum::body::Body> {
    render(
        refusal(provider, status.as_u16(), &format!("{who}: {message}")),
        0.0,
    )
}

/// The body, at most [`MAX_REQUEST_BYTES`] (a larger declared length is refused before any
/// byte is read, a longer body once it passes the bound), within the read timeout (408), and
/// within what the session may still read (413).
async fn read(
    s: &State,
    provider: Provider,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Result<Bytes, Response<axum::body::Body>> {
    let bytes = read_body("harness serve", provider, headers, body, s.read_timeout)
        .await
        .map_err(|(r, _)| r)?;
    let total = s
        .read_bytes
        .fetch_add(bytes.len() as u64, Ordering::SeqCst)
        .saturating_add(bytes.len() as u64);
    if total > s.max_read_bytes {
        return Err(refused(
            provider,
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!(
                "this session has read {total} bytes of requests, past its limit of {} bytes; start a new session",
                s.max_read_bytes
            ),
        ));
    }
    Ok(bytes)
}

/// The body of one request, bounded in size and time; a refusal is the answer `who` (the
/// command) sends, and why.
pub(super) async fn read_body(
    who: &str,
    provider: Provider,
    headers: &HeaderMap,
    body: axum::body::Body,
    timeout: Duration,
) -> Result<Bytes, (Response<axum::body::Body>, String)> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let refuse = |status: StatusCode, why: String| {
        let answer = refused_by(who, provider, status, &why);
        (answer, format!("{who}: {why}"))
    };
    let too_large = || {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body exceeds {MAX_REQUEST_BYTES} bytes"),
        )
    };
    if declared.is_some_and(|n| n > MAX_REQUEST_BYTES as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(timeout, axum::body::to_bytes(body, MAX_REQUEST_BYTES)).await {
        Ok(read) => read.map_err(|_| too_large()),
        Err(_) => Err(refuse(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} ms",
                timeout.as_millis()
            ),
        )),
    }
}

fn model_name(s: &State) -> String {
    s.session
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .case()
        .scenario
        .model
        .name
        .clone()
}

/// The one model there is (some clients list models before they call one).
async fn models(
    AxumState(s): AxumState<Shared>,
    uri: Uri,
    headers: HeaderMap,
) -> Response<axum::body::Body> {
    let name = model_name(&s);
    let body = provider_of(&uri, &headers).model_list(&name, super::EPOCH_S);
    render(
        HttpAnswer {
            status: 200,
            headers: Vec::new(),
            body: AnswerBody::Json(body),
        },
        0.0,
    )
}

/// `GET /v1/models/{id}`: the scenario's model under whatever name the agent asks for (the
/// script answers every model name the same).
async fn model(
    AxumState(_s): AxumState<Shared>,
    Path(id): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response<axum::body::Body> {
    render(
        HttpAnswer {
            status: 200,
            headers: Vec::new(),
            body: AnswerBody::Json(provider_of(&uri, &headers).model_object(&id, super::EPOCH_S)),
        },
        0.0,
    )
}

async fn not_found(
    AxumState(s): AxumState<Shared>,
    method: axum::http::Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response<axum::body::Body> {
    let provider = provider_of(&uri, &headers);
    s.session
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .note_unknown(&format!("{method} {}", uri.path().escape_default()));
    refused(
        provider,
        StatusCode::NOT_FOUND,
        &format!(
            "there is no {}: harness serves {}",
            uri.path().escape_default(),
            crate::provider::served_routes()
        ),
    )
}

/// A served answer as an HTTP response; an event stream goes out event by event, paced when
/// `pace` is above 0, and a cut one ends by dropping the connection.
pub(super) fn render(served: HttpAnswer, pace: f64) -> Response<axum::body::Body> {
    let (content_type, body) = match served.body {
        AnswerBody::Json(v) => ("application/json", axum::body::Body::from(v.to_string())),
        AnswerBody::Events {
            events,
            latency_ms,
            cut,
        } => (
            "text/event-stream",
            streamed(
                events
                    .iter()
                    .map(crate::provider::SseEvent::render)
                    .collect(),
                latency_ms,
                cut,
                pace,
            ),
        ),
        AnswerBody::Array {
            items,
            latency_ms,
            cut,
        } => (
            "application/json",
            streamed(array_frames(&items, cut), latency_ms, cut, pace),
        ),
    };
    let mut r = Response::builder()
        .status(served.status)
        .header("content-type", content_type);
    if content_type == "text/event-stream" {
        r = r.header("cache-control", "no-cache");
    }
    for (k, v) in served.headers {
        r = r.header(k, v);
    }
    r.body(body).unwrap_or_else(|e| {
        let mut r = Response::new(axum::body::Body::from(e.to_string()));
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}

/// A JSON array's frames: `[` with the first element, `,` before each next, `]` once whole.
/// What is sent before a cut is an array that never closes.
fn array_frames(items: &[serde_json::Value], cut: bool) -> Vec<String> {
    let mut frames: Vec<String> = items
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{}{v}", if i == 0 { "[" } else { "\n,\r\n" }))
        .collect();
    if frames.is_empty() {
        frames.push("[".to_owned());
    }
    if !cut {
        frames.push("\n]".to_owned());
    }
    frames
}

/// A body sent frame by frame, spread over `latency_ms` when `pace` is above 0; a `cut` one
/// ends by dropping the connection after its frames.
#[expect(
    clippy::disallowed_methods,
    reason = "a paced stream spreads its frames over the answer's latency (an edge: serve)"
)]
fn streamed(frames: Vec<String>, latency_ms: u64, cut: bool, pace: f64) -> axum::body::Body {
    let gap = if pace > 0.0 && !frames.is_empty() {
        Duration::from_secs_f64(latency_ms as f64 / 1000.0 * pace / frames.len() as f64)
    } else {
        Duration::ZERO
    };
    let frames = frames
        .into_iter()
        .map(|f| Ok::<_, io::Error>(Bytes::from(f)))
        .chain(cut.then(|| Err(io::Error::other("the script cuts the stream here"))));
    let stream =
        futures_util::stream::unfold((frames, true), move |(mut frames, first)| async move {
            let next = frames.next()?;
            if !first && !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            if next.is_err() {
                // Let the frames before the cut go out first: the connection drops at the
                // error, and what is not yet flushed would be lost with it.
                tokio::task::yield_now().await;
            }
            Some((next, (frames, false)))
        });
    axum::body::Body::from_stream(stream)
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "a test sets up and reads its files, clocks and threads itself"
)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    fn session() -> Session {
        let text = include_str!("../../scenarios/serve/reflex-black-box.toml");
        let mut cases = crate::scenario::load(
            text,
            crate::scenario::SourceFormat::Toml,
            "serve/reflex-black-box",
        )
        .expect("the bundled scenario loads");
        Session::new(cases.remove(0))
    }

    /// POST `body` to `path` on `addr`; the status line of the answer.
    fn post(addr: SocketAddr, body: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        write!(
            s,
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("send");
        let mut answer = String::new();
        s.read_to_string(&mut answer).expect("read the answer");
        answer.lines().next().unwrap_or_default().to_owned()
    }

    /// Gemini's JSON-array stream: whole, it is the elements as one array; cut, it never
    /// closes (a client reading it sees the connection drop mid-array, as with Google's).
    #[test]
    fn a_json_array_stream_closes_only_when_whole() {
        let items = vec![serde_json::json!({"a": 1}), serde_json::json!({"b": [2]})];
        let whole: serde_json::Value =
            serde_json::from_str(&array_frames(&items, false).concat()).expect("an array");
        assert_eq!(whole, serde_json::Value::Array(items.clone()));
        let cut = array_frames(&items, true).concat();
        assert!(
            serde_json::from_str::<serde_json::Value>(&cut).is_err(),
            "{cut}"
        );
        assert!(
            cut.starts_with("[{\"a\":1}") && cut.ends_with("{\"b\":[2]}"),
            "{cut}"
        );
        assert_eq!(array_frames(&[], false).concat(), "[\n]");
        assert_eq!(array_frames(&[], true).concat(), "[");
        let mut answer = HttpAnswer {
            status: 200,
            headers: Vec::new(),
            body: AnswerBody::Events {
                events: vec![crate::provider::SseEvent {
                    event: None,
                    data: "{\"a\":1}".to_owned(),
                }],
                latency_ms: 5,
                cut: true,
            },
        };
        as_json_array(&mut answer);
        assert!(matches!(
            answer.body,
            AnswerBody::Array { ref items, latency_ms: 5, cut: true } if items.len() == 1
        ));
    }

    #[test]
    fn a_session_reads_at_most_its_byte_limit_of_requests() {
        let body = format!(
            "{{\"model\": \"m\", \"messages\": [{{\"role\": \"user\", \"content\": \"{}\"}}]}}",
            "x".repeat(500)
        );
        let server = Server::start_with(
            session(),
            SocketAddr::from(([127, 0, 0, 1], 0)),
            Signals::Ignore,
            Timeouts::default(),
            1000,
        )
        .expect("start");
        let addr = server.addr();
        assert!(post(addr, &body).contains(" 200 "));
        assert!(
            post(addr, &body).contains(" 413 "),
            "the second is past 1000 bytes"
        );
        let session = server.stop().expect("stop");
        assert_eq!(
            session
                .conversations()
                .iter()
                .map(|c| c.requests.len())
                .sum::<usize>(),
            1,
            "the refused request is not kept"
        );
    }
}
