//! `harness collect` (issue 46): an OTLP/HTTP receiver writing OTLP JSON lines. Requests as
//! the SDKs' exporters send them — protobuf with a length, JSON chunked (the JavaScript
//! exporters never send a length), gzip — are written one a line and answered with the empty
//! export response; bodies that are no export request are refused (4xx) and said; past the
//! rotation size the file rotates, and `import` reads the rotations together as one run. This
//! runs docs/production-traces.md's `harness collect --out …` block.

use crate::support::{Project, listening_address};
use std::io::{BufReader, Read, Write};
use std::process::{Command, Stdio};

/// One HTTP/1.1 POST, the body sent with a length or chunked; the status code and body.
fn post(
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    chunked: bool,
) -> (u16, Vec<u8>) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the receiver");
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .expect("a read timeout");
    let mut req = format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    let mut bytes = if chunked {
        req.push_str("Transfer-Encoding: chunked\r\n\r\n");
        let mut b = req.into_bytes();
        for part in body.chunks(1000) {
            b.extend(format!("{:x}\r\n", part.len()).bytes());
            b.extend_from_slice(part);
            b.extend(b"\r\n");
        }
        b.extend(b"0\r\n\r\n");
        b
    } else {
        req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        req.into_bytes()
    };
    if !chunked {
        bytes.extend_from_slice(body);
    }
    s.write_all(&bytes).expect("send");
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.as_bytes().to_vec())
        .unwrap_or_default();
    (code, body)
}

/// The requests of a length-prefixed protobuf file.
fn frames(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut rest = bytes;
    let mut out = Vec::new();
    while rest.len() >= 4 {
        let n = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        out.push(rest[4..4 + n].to_vec());
        rest = &rest[4 + n..];
    }
    out
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).expect("gzip");
    e.finish().expect("gzip")
}

#[test]
fn collect_writes_what_exporters_send_and_import_reads_it_as_one_run() {
    let p = Project::new();
    p.copy_from_repo("fixtures/otlp-files/reference.jsonl", "reference.jsonl");
    p.copy_from_repo("fixtures/otlp-files/collector-proto.pb", "proto.pb");
    let mut child = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args([
            "collect",
            "--out",
            "got/traces.jsonl",
            "--addr",
            "127.0.0.1:0",
            "--rotate-mb",
            "1",
            "--until-eof",
        ])
        .current_dir(p.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start harness collect");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let addr = listening_address(&mut stdout);
    let protos = frames(&std::fs::read(p.join("proto.pb")).expect("the frames"));
    let lines: Vec<String> = p
        .read("reference.jsonl")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(protos.len(), lines.len());
    let proto = [("Content-Type", "application/x-protobuf")];
    let json = [("Content-Type", "application/json")];
    let gzipped = [
        ("Content-Type", "application/x-protobuf"),
        ("Content-Encoding", "gzip"),
    ];
    // The run sent 24 times over, every way an exporter sends it: past 1 MiB, so the file
    // rotates in the middle of a run (re-sent spans count once).
    let mut sent = 0;
    for round in 0..24 {
        for (i, (pb, line)) in protos.iter().zip(&lines).enumerate() {
            let (code, body) = match (round + i) % 3 {
                0 => post(&addr, "/v1/traces", &proto, pb, false),
                1 => post(&addr, "/v1/traces", &json, line.as_bytes(), true),
                _ => post(&addr, "/v1/traces", &gzipped, &gzip(pb), true),
            };
            assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
            sent += 1;
        }
    }
    let (code, body) = post(&addr, "/v1/traces", &json, line_json().as_bytes(), false);
    assert_eq!(
        (code, body),
        (200, b"{}".to_vec()),
        "JSON is answered in JSON"
    );
    sent += 1;
    // Not export requests: refused, said, written nowhere.
    let (code, _) = post(
        &addr,
        "/v1/traces",
        &[("Content-Type", "text/plain")],
        b"hi",
        false,
    );
    assert_eq!(code, 415);
    let (code, _) = post(&addr, "/v1/traces", &proto, &[0x0a, 0x7f, 0x01], false);
    assert_eq!(code, 400);
    let (code, _) = post(&addr, "/v1/metrics", &proto, b"", false);
    assert_eq!(code, 200, "metrics are answered");
    drop(child.stdin.take());
    let status = child.wait().expect("collect ends");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("stdout");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    assert_eq!(
        status.code(),
        Some(1),
        "refused requests fail the run\n{rest}\n{stderr}"
    );
    assert!(
        rest.contains(&format!(
            "{sent} request(s) written to got/traces.jsonl (1 earlier file(s) rotated beside it)"
        )),
        "{rest}"
    );
    assert!(
        rest.contains("1 metrics request(s) answered and not kept"),
        "{rest}"
    );
    assert!(
        stderr.contains("2 request(s) refused") && stderr.contains("text/plain"),
        "{stderr}"
    );
    let written: usize = p
        .files("got", ".jsonl")
        .iter()
        .map(|f| p.read(f).lines().count())
        .sum();
    assert_eq!(written, sent);
    assert!(p.join("got/traces-0001.jsonl").is_file());
    // The rotations read together: the one run, as the receiver's reference file gives it.
    p.harness(&["import", "reference.jsonl", "--out", "want"])
        .expect_code(0);
    p.harness(&["import", "got", "--out", "back"])
        .expect_code(0)
        .expect_stdout("2 run(s) written");
    let body = |dir: &str, stem: &str| {
        let files = p.files(dir, ".jsonl");
        let f = files
            .into_iter()
            .find(|f| f.contains(stem) && p.read(f.as_str()).contains("tool_call_end"))
            .expect("the run with calls");
        p.read(f.as_str())
            .split_once('\n')
            .expect("a header")
            .1
            .to_owned()
    };
    assert_eq!(body("back", "traces"), body("want", "reference"));
}

/// A request of one span of another trace (a second, tiny run).
fn line_json() -> String {
    r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102","spanId":"03","name":"chat m","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.output.messages","value":{"stringValue":"[{\"role\":\"assistant\",\"parts\":[{\"type\":\"text\",\"content\":\"hi\"}]}]"}}]}]}]}]}"#.to_owned()
}

#[test]
fn collect_refuses_a_remote_address_and_a_folder() {
    let p = Project::new();
    let run = p.harness(&["collect", "--out", "t.jsonl", "--addr", "0.0.0.0:0"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--allow-remote"), "{run}");
    p.write("dir/x", "");
    let run = p.harness(&["collect", "--out", "dir", "--addr", "127.0.0.1:0"]);
    run.expect_code(2);
    assert!(run.stderr.contains("is a folder"), "{run}");
}
