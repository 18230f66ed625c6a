//! Cost of `harness proxy`'s pass-through on loopback, in process through the library: a raw
//! HTTP/1.1 stub provider on 127.0.0.1 answers Chat Completions requests (a whole answer at
//! once, or a stream of events spaced apart), and a keep-alive client sends the same requests
//! to it directly and through the proxy, which records every exchange as it does for an agent.
//!
//! It prints, for whole answers, the latency of a request direct and proxied (median and 99th
//! percentile) and the difference, the latency added per request (target: under 1 ms); the
//! proxy's throughput with one client and with four at once; and, for a stream, when each event
//! arrives after the request was sent, direct and proxied: an event forwarded as it comes
//! arrives within a fraction of a millisecond of its direct time, while a buffered stream
//! would hold the first events back until the last.
//!
//! ```text
//! cargo bench --bench proxy
//! PROXY_BENCH_REQUESTS=5000 cargo bench --bench proxy
//! ```

#![expect(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall time and reads and writes its inputs directly"
)]

use harness::provider::Provider;
use harness::record::scrub::Scrubber;
use harness::serve::http::Signals;
use harness::serve::proxy::{Proxy, Upstreams};
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Events of the streamed answer, and the upstream's pause before each.
const EVENTS: usize = 10;
const GAP: Duration = Duration::from_millis(20);

fn main() {
    let n: usize = std::env::var("PROXY_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let upstream = stub();
    let proxy = Proxy::start(
        Upstreams {
            each: vec![
                (
                    Provider::Openai,
                    format!("http://{upstream}/v1"),
                    Some("sk-bench-upstream-key-0000".to_owned()),
                ),
                (Provider::Anthropic, format!("http://{upstream}"), None),
            ],
            timeout: Duration::from_secs(30),
        },
        Scrubber::new(["sk-bench-upstream-key-0000".to_owned()]),
        "127.0.0.1:0".parse().expect("address"),
        Signals::Ignore,
    )
    .expect("the proxy starts");
    let proxied = proxy.addr();
    let body = request_body(false);

    // Whole answers: warm up both paths, then alternate so drift hits both alike.
    let mut direct_client = Client::connect(upstream);
    let mut proxy_client = Client::connect(proxied);
    for _ in 0..100 {
        direct_client.post(&body);
        proxy_client.post(&body);
    }
    let (mut direct, mut through) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        direct.push(direct_client.post(&body).total);
        through.push(proxy_client.post(&body).total);
    }
    let (d50, d99) = (percentile(&mut direct, 0.5), percentile(&mut direct, 0.99));
    let (p50, p99) = (
        percentile(&mut through, 0.5),
        percentile(&mut through, 0.99),
    );
    println!(
        "whole answers, {n} requests each way ({} bytes in, {} bytes out):",
        body.len(),
        answer_body().len()
    );
    println!(
        "  direct   median {:>7.1} µs   p99 {:>7.1} µs",
        us(d50),
        us(d99)
    );
    println!(
        "  proxied  median {:>7.1} µs   p99 {:>7.1} µs",
        us(p50),
        us(p99)
    );
    println!(
        "  added    median {:>7.1} µs   p99 {:>7.1} µs   (target: under 1,000 µs)",
        us(p50.saturating_sub(d50)),
        us(p99.saturating_sub(d99))
    );

    // Throughput: one client in sequence, then four at once.
    for clients in [1usize, 4] {
        let per = n / clients;
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..clients {
                let body = &body;
                s.spawn(move || {
                    let mut c = Client::connect(proxied);
                    for _ in 0..per {
                        c.post(body);
                    }
                });
            }
        });
        let took = start.elapsed();
        println!(
            "throughput through the proxy, {clients} client(s): {:>6.0} requests/s",
            (per * clients) as f64 / took.as_secs_f64()
        );
    }

    // A stream: when each event arrives, direct and proxied.
    let stream_body = request_body(true);
    let direct_events = Client::connect(upstream).post(&stream_body).events;
    let proxied_events = Client::connect(proxied).post(&stream_body).events;
    assert_eq!(
        direct_events.len(),
        EVENTS + 1,
        "every event and [DONE] arrive"
    );
    assert_eq!(
        proxied_events.len(),
        direct_events.len(),
        "the proxy forwards every event"
    );
    println!(
        "a stream of {EVENTS} events {} ms apart (+ [DONE]): arrival after the request, ms",
        GAP.as_millis()
    );
    let mut worst = Duration::ZERO;
    for (i, (d, p)) in direct_events.iter().zip(&proxied_events).enumerate() {
        worst = worst.max(p.saturating_sub(*d));
        println!(
            "  event {:>2}  direct {:>7.2}  proxied {:>7.2}",
            i + 1,
            ms(*d),
            ms(*p)
        );
    }
    println!(
        "  largest delay an event gained: {:.2} ms (buffering the stream would hold event 1 back {} ms)",
        ms(worst),
        GAP.as_millis() * (EVENTS as u128 - 1)
    );
    let (slots, _) = proxy.stop().expect("the proxy stops");
    assert_eq!(
        slots.len(),
        100 + n + n / 4 * 4 + n + 1,
        "the proxy recorded every request"
    );
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn percentile(v: &mut [Duration], q: f64) -> Duration {
    v.sort();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// A Chat Completions request of an agent a few turns in.
fn request_body(stream: bool) -> String {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent. Use tools to act."}),
        json!({"role": "user", "content": "List the files in the project."}),
    ];
    for i in 0..4 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{i}"), "type": "function", "function": {"name": "exec", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}"), "content": "Error: missing 'command' parameter"}));
    }
    json!({"model": "gpt-4o-mini", "messages": messages, "stream": stream, "tools": [{"type": "function", "function": {"name": "exec", "description": "Run a shell command", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]}).to_string()
}

fn answer_body() -> String {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "exec", "arguments": "{}"}}]}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 5, "total_tokens": 125}})
    .to_string()
}

/// The stub provider: every connection on its own thread, keep-alive; a whole answer, or a
/// chunked event stream with [`GAP`] before each event.
fn stub() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the stub");
    let addr = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || serve_connection(conn));
        }
    });
    addr
}

fn serve_connection(conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let mut out = conn.try_clone().expect("clone the stream");
    let mut reader = BufReader::new(conn);
    while let Some((_, body)) = read_message(&mut reader) {
        let stream = body.contains("\"stream\":true");
        if !stream {
            let answer = answer_body();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                answer.len()
            );
            if out.write_all(format!("{head}{answer}").as_bytes()).is_err() {
                return;
            }
            continue;
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        if out.write_all(head.as_bytes()).is_err() {
            return;
        }
        for i in 0..=EVENTS {
            std::thread::sleep(GAP);
            let data = if i == EVENTS {
                "[DONE]".to_owned()
            } else {
                let delta = if i == EVENTS - 1 {
                    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                } else {
                    json!({"choices": [{"index": 0, "delta": {"content": format!("word{i} ")}, "finish_reason": null}]})
                };
                delta.to_string()
            };
            let event = format!("data: {data}\n\n");
            let chunk = format!("{:x}\r\n{event}\r\n", event.len());
            if out.write_all(chunk.as_bytes()).is_err() {
                return;
            }
        }
        if out.write_all(b"0\r\n\r\n").is_err() {
            return;
        }
    }
}

/// One HTTP/1.1 message's head and body (content-length bodies only), or `None` at the end.
fn read_message(r: &mut impl BufRead) -> Option<(String, String)> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let len = header(&head, "content-length").map_or(0, |v| v.parse().unwrap_or(0));
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some((head, String::from_utf8_lossy(&body).into_owned()))
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// A keep-alive HTTP/1.1 client.
struct Client {
    addr: SocketAddr,
    out: TcpStream,
    reader: BufReader<TcpStream>,
}

/// What one request took: in all, and when each event of a stream arrived.
struct Timing {
    total: Duration,
    events: Vec<Duration>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Self {
        let out = TcpStream::connect(addr).expect("connect");
        let _ = out.set_nodelay(true);
        let reader = BufReader::new(out.try_clone().expect("clone the stream"));
        Self { addr, out, reader }
    }

    fn post(&mut self, body: &str) -> Timing {
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\nauthorization: Bearer sk-bench-agent-key-0000\r\ncontent-length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        let start = Instant::now();
        self.out.write_all(request.as_bytes()).expect("send");
        let mut head = String::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).expect("read the head");
            assert!(!line.is_empty(), "the connection closed mid-answer");
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        assert!(head.starts_with("HTTP/1.1 200"), "answered: {head}");
        let mut events = Vec::new();
        if let Some(len) = header(&head, "content-length") {
            let mut body = vec![0; len.parse().expect("a length")];
            self.reader.read_exact(&mut body).expect("read the body");
        } else {
            // Chunked: note when each event's data arrives.
            loop {
                let mut size = String::new();
                self.reader.read_line(&mut size).expect("chunk size");
                let size = usize::from_str_radix(size.trim(), 16).expect("hex size");
                let mut chunk = vec![0; size + 2];
                self.reader.read_exact(&mut chunk).expect("chunk");
                if size == 0 {
                    break;
                }
                let now = start.elapsed();
                let text = String::from_utf8_lossy(&chunk);
                events.extend(text.matches("data: ").map(|_| now));
            }
        }
        Timing {
            total: start.elapsed(),
            events,
        }
    }
}
