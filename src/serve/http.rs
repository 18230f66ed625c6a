//! The HTTP side of `harness serve`: an axum server on its own thread (a current-thread tokio
//! runtime) routing `POST /v1/chat/completions` (also `/chat/completions`) and
//! `POST /v1/messages` to a shared [`Session`]; `GET /v1/models` lists the scenario's model.
//! Bodies above [`MAX_REQUEST_BYTES`] are answered 413; other paths 404 with a hint. Answers
//! are immediate: latency is virtual.

use super::{Body, MAX_REQUEST_BYTES, Served, Session};
use crate::provider::Provider;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderName};
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode, Uri};
use axum::routing::{get, post};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

type Shared = Arc<Mutex<Session>>;

/// A running server.
pub struct Server {
    addr: SocketAddr,
    session: Shared,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

/// Also end the server on Ctrl-C (and SIGTERM), for `harness serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signals {
    /// Stop only when asked ([`Server::stop`]).
    Ignore,
    /// Stop on Ctrl-C or SIGTERM too.
    Stop,
}

impl Server {
    /// Bind `addr` and serve `session` until stopped.
    pub fn start(session: Session, addr: SocketAddr, signals: Signals) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let session = Arc::new(Mutex::new(session));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&session);
        let thread = std::thread::Builder::new()
            .name("harness-serve".to_owned())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)?;
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
                    };
                    axum::serve(listener, router(state))
                        .with_graceful_shutdown(shutdown)
                        .await
                })
            })?;
        Ok(Self {
            addr,
            session,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Has it stopped on its own (a signal, or a failure)?
    pub fn finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stop serving (open connections finish first) and hand back the session.
    pub fn stop(mut self) -> io::Result<Session> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join()
                .map_err(|_| io::Error::other("the server thread panicked"))??;
        }
        let session = Arc::try_unwrap(self.session)
            .map_err(|_| io::Error::other("the session is still shared"))?;
        Ok(session.into_inner().unwrap_or_else(PoisonError::into_inner))
    }
}

async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            let ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
            let term = std::pin::pin!(term.recv());
            let _ = futures_util::future::select(ctrl_c, term).await;
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

fn router(state: Shared) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(openai))
        .route("/chat/completions", post(openai))
        .route("/v1/messages", post(anthropic))
        .route("/v1/models", get(models))
        .route("/models", get(models))
        .fallback(not_found)
        // The handlers bound their bodies themselves (`read`).
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

async fn openai(
    State(s): State<Shared>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response<axum::body::Body> {
    match read(&headers, body).await {
        Ok(bytes) => answer(&s, Provider::Openai, &bytes),
        Err(r) => r,
    }
}

async fn anthropic(
    State(s): State<Shared>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response<axum::body::Body> {
    match read(&headers, body).await {
        Ok(bytes) => answer(&s, Provider::Anthropic, &bytes),
        Err(r) => r,
    }
}

/// The body, at most [`MAX_REQUEST_BYTES`]: a larger declared length is refused before any
/// byte is read, a longer body once it passes the bound.
async fn read(
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Result<Bytes, Response<axum::body::Body>> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = || {
        let mut r = Response::new(axum::body::Body::from(format!(
            "{{\"error\": {{\"message\": \"harness serve: the request body exceeds {MAX_REQUEST_BYTES} bytes\"}}}}"
        )));
        *r.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        r
    };
    if declared.is_some_and(|n| n > MAX_REQUEST_BYTES as u64) {
        return Err(too_large());
    }
    axum::body::to_bytes(body, MAX_REQUEST_BYTES)
        .await
        .map_err(|_| too_large())
}

/// The one model there is (some clients list models before they call one).
async fn models(State(s): State<Shared>) -> Response<axum::body::Body> {
    let name = s
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .case()
        .scenario
        .model
        .name
        .clone();
    let body = serde_json::json!({"object": "list", "data": [{"id": name, "object": "model", "owned_by": "harness"}]});
    render(Served {
        status: 200,
        headers: Vec::new(),
        body: Body::Json(body),
    })
}

async fn not_found(uri: Uri) -> (StatusCode, [(HeaderName, &'static str); 1], String) {
    (
        StatusCode::NOT_FOUND,
        [(CONTENT_TYPE, "application/json")],
        format!(
            "{{\"error\": {{\"message\": \"harness serve has no {}: it serves POST /v1/chat/completions (OpenAI base URL http://HOST/v1) and POST /v1/messages (Anthropic base URL http://HOST)\"}}}}",
            uri.path().escape_default()
        ),
    )
}

fn answer(s: &Shared, provider: Provider, body: &[u8]) -> Response<axum::body::Body> {
    let served = s
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .handle(provider, body);
    render(served)
}

fn render(served: Served) -> Response<axum::body::Body> {
    let (content_type, body) = match served.body {
        Body::Json(v) => ("application/json", v.to_string()),
        Body::Events(events) => (
            "text/event-stream",
            events.iter().map(|e| e.render()).collect::<String>(),
        ),
    };
    let mut r = Response::builder()
        .status(served.status)
        .header("content-type", content_type);
    for (k, v) in served.headers {
        r = r.header(k, v);
    }
    r.body(axum::body::Body::from(body)).unwrap_or_else(|e| {
        let mut r = Response::new(axum::body::Body::from(e.to_string()));
        *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}
