//! Black-box agents: `harness exec` runs the reference agent (`fixtures/agents/reflex_agent.py`,
//! Python standard library only) against the served reflex scenario in both wire formats,
//! whole and streamed, with and without a loop detector; `harness serve` is driven by hand.
//! Nothing but 127.0.0.1 is contacted.

use crate::support::{Project, listening_address, repo};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

const SCENARIO: &str = "scenarios/serve/reflex-black-box.toml";
const ID: &str = "serve/reflex-black-box";

fn project() -> Project {
    let p = Project::new();
    p.copy_from_repo(SCENARIO, SCENARIO);
    p
}

fn agent() -> String {
    repo()
        .join("fixtures/agents/reflex_agent.py")
        .to_string_lossy()
        .into_owned()
}

/// The CSV row of `case` as column → value.
fn metrics(p: &Project, file: &str, case: &str) -> std::collections::BTreeMap<String, String> {
    let text = p.read(file);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let row = lines
        .find(|l| l.starts_with(&format!("{case},")))
        .unwrap_or_else(|| panic!("no row for {case} in\n{text}"));
    header
        .iter()
        .map(|h| h.to_string())
        .zip(row.split(',').map(str::to_owned))
        .collect()
}

#[test]
fn exec_reports_the_bare_agent_at_the_cap_and_the_detector_recovering() {
    let p = project();
    let agent = agent();
    for api in ["openai", "anthropic"] {
        for stream in [false, true] {
            let tag = format!("{api}{}", if stream { "-stream" } else { "" });
            for (detector, expect) in [("none", "none"), ("nudge", "moltis"), ("strip", "moltis")] {
                let label = format!("{detector}-{tag}");
                let csv = format!("{label}.csv");
                let mut args = vec![
                    "exec",
                    SCENARIO,
                    "--label",
                    &label,
                    "--expect",
                    expect,
                    "--metrics",
                    &csv,
                    "--",
                    "python3",
                    &agent,
                    "--api",
                    api,
                    "--detector",
                    detector,
                ];
                if stream {
                    args.push("--stream");
                }
                // First run: expectations hold, the golden is new.
                let run = p.harness(&args);
                run.expect_code(1);
                assert!(
                    run.summary()
                        .contains("1 missing goldens, 0 expectation failures"),
                    "{run}"
                );
                let case = format!("{ID}@{label}");
                let m = metrics(&p, &csv, &case);
                let golden = p.read(&format!("snapshots/{case}.snap.new"));
                if detector == "none" {
                    assert_eq!(m["outcome"], "max_iterations", "{label}");
                    assert_eq!(m["iterations"], "25", "{label}");
                    assert_eq!(m["tool_failures"], "25", "{label}");
                    assert_eq!(m["first_intervention_iteration"], "", "{label}");
                    assert!(
                        golden.contains("outcome max_iterations iterations=25"),
                        "{golden}"
                    );
                } else {
                    assert_eq!(m["outcome"], "response", "{label}");
                    assert_eq!(m["iterations"], "4", "{label}");
                    assert_eq!(m["first_intervention_iteration"], "3", "{label}");
                    let (intervention, request) = if detector == "nudge" {
                        (
                            "intervention policy=agent stage=1 action=nudge",
                            "tools=[exec]",
                        )
                    } else {
                        (
                            "intervention policy=agent stage=2 action=strip_tools",
                            "tools=[] stripped",
                        )
                    };
                    assert!(golden.contains(intervention), "{golden}");
                    assert!(
                        golden
                            .lines()
                            .any(|l| l.contains("model_request call=4") && l.ends_with(request)),
                        "{golden}"
                    );
                    assert!(golden.contains("outcome response iterations=4 text=\"Sorry"));
                }
                if stream {
                    assert!(golden.contains("finish=tool_use chunks="), "{golden}");
                } else {
                    assert!(!golden.contains("chunks="), "{golden}");
                }
                // Reviewed, the same agent passes: the inferred trace is deterministic.
                p.harness(&["accept"]).expect_code(0);
                p.harness(&args).expect_code(0);
            }
        }
    }
    // The wrong expectations fail the case: the bare agent does not recover.
    let run = p.harness(&[
        "exec",
        SCENARIO,
        "--label",
        "none-openai",
        "--expect",
        "moltis",
        "--",
        "python3",
        &agent,
    ]);
    run.expect_code(1);
    assert!(run.stdout.contains("outcome"), "{run}");
    // `harness run` replays the scenario and leaves the exec goldens alone.
    p.harness(&["accept"]).expect_code(0);
    p.harness(&["run", "scenarios/serve"])
        .expect_code(1)
        .expect_stdout("0 orphaned goldens");
}

/// A command that ends without asking anything fails with that one reason, under an `exec`
/// verdict: no timeout, no ad-hoc profile, no baseline it could never be blessed into.
#[test]
fn exec_of_a_command_that_asks_nothing_gives_one_reason() {
    let p = project();
    p.write(
        "harness.toml",
        "format = 1\nbaseline = \"baselines/scenarios.toml\"\n",
    );
    p.write("baselines/scenarios.toml", "");
    let run = p.harness(&["exec", SCENARIO, "--", "true"]);
    run.expect_code(1)
        .expect_stdout("harness exec: FAILED. 1 cases from 1 files")
        .expect_stdout("expected a model request; the command made none");
    for wrong in [
        "harness run",
        "ad-hoc",
        "--profile",
        "killed",
        "harness baseline",
        "bless",
    ] {
        assert!(!run.stdout.contains(wrong), "`{wrong}` in:\n{run}");
    }
}

#[test]
fn exec_fails_a_silent_or_hung_command_and_refuses_a_missing_one() {
    let p = project();
    let run = p.harness(&[
        "exec",
        SCENARIO,
        "--timeout-ms",
        "300",
        "--",
        "python3",
        "-c",
        "import time; time.sleep(30)",
    ]);
    run.expect_code(1)
        .expect_stdout("expected the command to finish within 300 ms; it was killed")
        .expect_stdout("expected a model request; the command made none");
    let run = p.harness(&["exec", SCENARIO, "--", "no-such-agent-command"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("cannot run `no-such-agent-command`"),
        "{run}"
    );
    let run = p.harness(&["exec", SCENARIO, "--label", "moltis", "--", "true"]);
    run.expect_code(2);
    assert!(run.stderr.contains("is a profile name"), "{run}");
    let run = p.harness(&["serve", SCENARIO, "--addr", "0.0.0.0:0"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--allow-remote"), "{run}");
}

/// Send raw bytes to the server and read its status line.
fn status_of(addr: &str, request: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the server");
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .expect("a read timeout");
    s.write_all(request.as_bytes()).expect("send");
    let mut line = String::new();
    BufReader::new(s)
        .read_line(&mut line)
        .expect("a status line");
    line
}

#[test]
fn serve_answers_an_agent_and_prints_the_inferred_trace() {
    let p = project();
    let mut server = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["serve", SCENARIO, "--until-eof"])
        .current_dir(p.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start harness serve");
    let mut stdout = BufReader::new(server.stdout.take().expect("stdout"));
    let addr = listening_address(&mut stdout);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let out = Command::new("python3")
        .args([&agent(), "--api", "anthropic", "--detector", "nudge"])
        .env("ANTHROPIC_BASE_URL", format!("http://{addr}"))
        .env("ANTHROPIC_API_KEY", "dummy")
        .output()
        .expect("run the agent");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Sorry, I do not know what command you wanted."
    );
    // Bounded bodies, known paths only.
    let big = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        harness::limits::MAX_REQUEST_BODY_BYTES + 1
    );
    assert!(status_of(&addr, &big).contains(" 413 "));
    let get = |path: &str| format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    assert!(status_of(&addr, &get("/v1/models")).contains(" 200 "));
    assert!(status_of(&addr, &get("/v1/embeddings")).contains(" 404 "));
    drop(server.stdin.take());
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("the traces");
    let status = server.wait().expect("harness serve ends");
    assert!(status.success(), "{status:?}\n{rest}");
    assert!(
        rest.contains(&format!("# harness trace v1: {ID}@serve\n")),
        "{rest}"
    );
    assert!(
        rest.contains("intervention policy=agent stage=1 action=nudge"),
        "{rest}"
    );
    assert!(rest.contains("outcome response iterations=4"), "{rest}");
    assert!(
        rest.contains("harness serve: 1 conversation(s), 4 request(s)"),
        "{rest}"
    );
}
