//! `harness collect`: an OTLP/HTTP receiver of harness's own, so that an instrumented agent's
//! traces land in a file harness reads without running an OpenTelemetry Collector.
//!
//! `POST /v1/traces` and `POST /v1/logs` take an export request as the OpenTelemetry SDKs'
//! HTTP exporters send it: protobuf (`application/x-protobuf`, the Python SDK's only HTTP
//! encoding) or JSON (`application/json`), plain or compressed (`Content-Encoding: gzip`,
//! `zstd`), with a length or chunked (the JavaScript exporters never send a length). Each
//! request becomes one line of OTLP JSON in the output file — the form the Collector's file
//! exporter writes and `harness import` reads; traces and logs share the file, so the
//! per-message log records of older instrumentations sit beside their spans. The answer is
//! the empty export response (all accepted) in the request's encoding; a body that is not an
//! export request is refused (400, or 415 for a content type or encoding it does not read) and
//! written nowhere. Past a size the file rotates: it is
//! renamed `<stem>-0001<ext>` (then `-0002`, …, the first name free) and a new one begun; `import` and `sweep`
//! read such rotations together, so a run split across them is one run. Metrics
//! (`/v1/metrics`) are answered and counted, not kept.

use super::http::{Running, Signals, Timeouts};
use crate::import::otlp::{files, proto};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode};
use axum::routing::post;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The largest request body taken (compressed), and what it may decompress to.
pub const MAX_BODY_BYTES: usize = 32 << 20;

/// What the receiver has written, and what it refused.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Requests written.
    pub requests: u64,
    /// Spans in them.
    pub spans: u64,
    /// Log records in them.
    pub logs: u64,
    /// Metrics export requests, answered and not kept (harness reads traces and logs).
    pub metrics: u64,
    /// Requests refused (not export requests).
    pub refused: u64,
    /// The first refusals' reasons.
    pub refusals: Vec<String>,
    /// Files rotated away.
    pub rotated: Vec<PathBuf>,
}

/// Where the lines go: the file, its rotation size, what it holds so far.
struct Sink {
    path: PathBuf,
    rotate_bytes: u64,
    size: u64,
    counts: Counts,
}

impl Sink {
    fn write(&mut self, line: &str) -> io::Result<()> {
        let len = line.len() as u64 + 1;
        if self.size > 0 && self.size + len > self.rotate_bytes {
            // The first free name: rotations of an earlier session are kept, not replaced.
            let next = crate::store::rotate(&self.path)?;
            self.counts.rotated.push(next);
            self.size = 0;
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        crate::store::append(&self.path, &bytes)?;
        self.size += len;
        Ok(())
    }
}

type Shared = Arc<Mutex<Sink>>;

/// A running receiver.
pub struct Collector {
    running: Running,
    sink: Shared,
}

impl Collector {
    /// Bind `addr` and write what arrives to `path` (appended to; created when absent),
    /// rotating past `rotate_bytes`.
    pub fn start(
        path: &Path,
        addr: SocketAddr,
        rotate_bytes: u64,
        signals: Signals,
    ) -> io::Result<Self> {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let sink = Arc::new(Mutex::new(Sink {
            path: path.to_owned(),
            rotate_bytes: rotate_bytes.max(1),
            size,
            counts: Counts::default(),
        }));
        let app = Router::new()
            .route("/v1/traces", post(traces).fallback(method_not_allowed))
            .route("/v1/logs", post(logs).fallback(method_not_allowed))
            .route("/v1/metrics", post(metrics).fallback(method_not_allowed))
            .fallback(not_found)
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(Arc::clone(&sink));
        let running = Running::start(
            "harness-collect",
            addr,
            signals,
            Timeouts::default(),
            app,
            Arc::default(),
        )?;
        Ok(Self { running, sink })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.running.addr()
    }

    /// Has it stopped on its own (a signal)?
    pub fn finished(&self) -> bool {
        self.running.finished()
    }

    /// Stop (open requests get the grace to finish) and say what was written.
    pub fn stop(self) -> io::Result<Counts> {
        self.running.stop()?;
        let sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(sink.counts.clone())
    }
}

async fn traces(
    AxumState(s): AxumState<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> Response<axum::body::Body> {
    receive(&s, proto::Signal::Traces, &headers, &body)
}

async fn logs(
    AxumState(s): AxumState<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> Response<axum::body::Body> {
    receive(&s, proto::Signal::Logs, &headers, &body)
}

/// Metrics are answered (an SDK that exports them gets no error) and counted, not kept.
async fn metrics(AxumState(s): AxumState<Shared>) -> Response<axum::body::Body> {
    s.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .counts
        .metrics += 1;
    let mut r = Response::new(axum::body::Body::empty());
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("application/x-protobuf"),
    );
    r
}

/// The request's encoding, by its content type.
#[derive(Clone, Copy, PartialEq)]
enum Encoding {
    Protobuf,
    Json,
}

fn receive(
    s: &Shared,
    signal: proto::Signal,
    headers: &HeaderMap,
    body: &[u8],
) -> Response<axum::body::Body> {
    let kind = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let encoding = match kind.as_str() {
        "application/x-protobuf" | "application/protobuf" => Encoding::Protobuf,
        "application/json" => Encoding::Json,
        other => {
            return refuse(
                s,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Encoding::Json,
                format!(
                    "content type `{other}`: OTLP/HTTP is `application/x-protobuf` or `application/json`"
                ),
            );
        }
    };
    let coding = headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    let limit = crate::limits::MAX_TRANSCRIPT_BYTES;
    let inflated;
    let body = match coding.as_str() {
        "" | "identity" | "none" => body,
        "gzip" | "zstd" => match files::decompress(body, limit) {
            Ok(b) => {
                inflated = b;
                &inflated[..]
            }
            Err(e) => {
                return refuse(
                    s,
                    StatusCode::BAD_REQUEST,
                    encoding,
                    format!("{coding} body: {e}"),
                );
            }
        },
        other => {
            return refuse(
                s,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                encoding,
                format!("content encoding `{other}`: send it plain, gzip or zstd"),
            );
        }
    };
    let doc = match encoding {
        Encoding::Protobuf => proto::request(body, Some(signal)),
        Encoding::Json => serde_json::from_slice::<serde_json::Value>(body)
            .map_err(|e| format!("not JSON: {e}"))
            .and_then(|doc| {
                let key = match signal {
                    proto::Signal::Traces => "resourceSpans",
                    proto::Signal::Logs => "resourceLogs",
                };
                if doc.get(key).is_some() || doc.as_object().is_some_and(|o| o.is_empty()) {
                    Ok(doc)
                } else {
                    Err(format!("not an export request: no `{key}`"))
                }
            }),
    };
    let doc = match doc {
        Ok(d) => d,
        Err(e) => return refuse(s, StatusCode::BAD_REQUEST, encoding, e),
    };
    let (spans, records) = count(&doc);
    let line = doc.to_string();
    let mut sink = s.lock().unwrap_or_else(PoisonError::into_inner);
    if let Err(e) = sink.write(&line) {
        drop(sink);
        return refuse(
            s,
            StatusCode::SERVICE_UNAVAILABLE,
            encoding,
            format!("cannot write the output file: {e}"),
        );
    }
    sink.counts.requests += 1;
    sink.counts.spans += spans;
    sink.counts.logs += records;
    drop(sink);
    answer(StatusCode::OK, encoding, None)
}

/// Spans and log records in an OTLP JSON request.
fn count(doc: &serde_json::Value) -> (u64, u64) {
    let inner = |outer: &str, middle: &str, leaf: &str| -> u64 {
        doc.get(outer)
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
            .flat_map(|r| {
                r.get(middle)
                    .and_then(|v| v.as_array())
                    .into_iter()
                    .flatten()
            })
            .map(|s| s.get(leaf).and_then(|v| v.as_array()).map_or(0, Vec::len) as u64)
            .sum()
    };
    (
        inner("resourceSpans", "scopeSpans", "spans"),
        inner("resourceLogs", "scopeLogs", "logRecords"),
    )
}

fn refuse(
    s: &Shared,
    status: StatusCode,
    encoding: Encoding,
    why: String,
) -> Response<axum::body::Body> {
    let mut sink = s.lock().unwrap_or_else(PoisonError::into_inner);
    sink.counts.refused += 1;
    if sink.counts.refusals.len() < 5 {
        sink.counts.refusals.push(why.clone());
    }
    drop(sink);
    answer(status, encoding, Some(&why))
}

/// The export response: empty (everything accepted), or a `google.rpc.Status` with the
/// message when refused; protobuf or JSON as the request was.
fn answer(status: StatusCode, encoding: Encoding, why: Option<&str>) -> Response<axum::body::Body> {
    let (kind, body) = match (encoding, why) {
        (Encoding::Json, None) => ("application/json", b"{}".to_vec()),
        (Encoding::Json, Some(why)) => (
            "application/json",
            serde_json::json!({"code": 3, "message": format!("harness collect: {why}")})
                .to_string()
                .into_bytes(),
        ),
        (Encoding::Protobuf, None) => ("application/x-protobuf", Vec::new()),
        (Encoding::Protobuf, Some(why)) => {
            // google.rpc.Status { code = 3 (INVALID_ARGUMENT); message = 2 }
            let message = format!("harness collect: {why}");
            let mut b = vec![0x08, 0x03, 0x12];
            let mut n = message.len();
            while n >= 0x80 {
                b.push((n as u8 & 0x7f) | 0x80);
                n >>= 7;
            }
            b.push(n as u8);
            b.extend_from_slice(message.as_bytes());
            ("application/x-protobuf", b)
        }
    };
    let mut r = Response::new(axum::body::Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static(kind));
    r
}

async fn method_not_allowed() -> Response<axum::body::Body> {
    let mut r = Response::new(axum::body::Body::from(
        "harness collect: OTLP/HTTP takes POST\n",
    ));
    *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    r
}

async fn not_found() -> Response<axum::body::Body> {
    let mut r = Response::new(axum::body::Body::from(
        "harness collect: OTLP/HTTP receives at /v1/traces and /v1/logs (metrics are not read)\n",
    ));
    *r.status_mut() = StatusCode::NOT_FOUND;
    r
}
