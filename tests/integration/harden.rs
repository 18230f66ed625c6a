//! Attacks on the edges (issue 15, second hardening round): what a checkout, a path or a peer
//! can put where harness reads and writes — links and special files in place of goldens,
//! scenarios and outputs, ids that collide, names that forge lines, secrets split across stream
//! events, inputs that would need gigabytes, clients that stall. Each test failed before its fix.

use crate::support::{
    EXAMPLE, EXAMPLE_ID, Project, Run, harness_command, listening_address, repo, wait_at_most,
};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A canary standing for a secret on the runner.
const CANARY: &str = "MY_SECRET_TOKEN=canary-8d1f0e";

/// The example project with its goldens accepted.
fn with_goldens() -> Project {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    p.harness(&["run"]).expect_code(0);
    p
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link)
        .unwrap_or_else(|e| panic!("link {} → {}: {e}", link.display(), target.display()));
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Wait for `child`, failing the test if it has not ended after a minute (a hang guard).
fn ended_within_a_minute(child: &mut std::process::Child) -> std::process::ExitStatus {
    wait_at_most(child, Duration::from_secs(60))
}

/// `harness ARGS` in `p`, killed (and the test failed) if it has not ended after a minute — a
/// guard against a hang, not a measurement.
fn harness_bounded(p: &Project, args: &[&str]) -> Run {
    let mut child = harness_command(p.path(), args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn harness");
    // Output is small: the pipes do not fill while it runs.
    ended_within_a_minute(&mut child);
    let out = child.wait_with_output().expect("output");
    Run::from_output(format!("{args:?}"), &out)
}

/// The umask harness inherits, as `sh` reports it.
fn umask() -> u32 {
    let out = std::process::Command::new("sh")
        .args(["-c", "umask"])
        .output()
        .expect("run sh");
    u32::from_str_radix(String::from_utf8_lossy(&out.stdout).trim(), 8).expect("an octal umask")
}

// --- 15 #1: goldens and pending goldens are regular files inside their folder -------------

#[cfg(unix)]
#[test]
fn a_symlinked_golden_is_refused_and_what_it_points_at_never_echoed() {
    let p = with_goldens();
    p.write("secret.env", CANARY);
    let golden = p.join(&format!("snapshots/{EXAMPLE_ID}.snap"));
    std::fs::remove_file(&golden).unwrap();
    symlink(&p.join("secret.env"), &golden);
    let summary = p.join("summary.md");
    let run = p.harness_env(
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ],
        &["run", "--json", "r.json", "--junit", "j.xml"],
    );
    run.expect_code(2)
        .expect_stdout(&format!(
            "error: {EXAMPLE}:1:1: the golden snapshots/{EXAMPLE_ID}.snap is a symbolic link"
        ))
        .expect_no_stdout("canary-8d1f0e");
    for out in ["r.json", "j.xml", "summary.md"] {
        assert!(
            !p.read(out).contains("canary-8d1f0e"),
            "{out} holds the secret"
        );
    }
    // The link to a folder outside: the same.
    std::fs::remove_file(&golden).unwrap();
    std::fs::write(&golden, "placeholder").unwrap();
    let snapshots = p.join("snapshots/reflex");
    std::fs::rename(&snapshots, p.join("elsewhere")).unwrap();
    symlink(&p.join("elsewhere"), &snapshots);
    p.harness(&["run"])
        .expect_code(2)
        .expect_stdout("lies below snapshots/reflex, which is a symbolic link");
}

#[test]
fn a_golden_that_is_not_utf8_or_differs_by_a_byte_fails_its_case() {
    let p = with_goldens();
    let rel = format!("snapshots/{EXAMPLE_ID}.snap");
    let golden = p.join(&rel);
    let good = std::fs::read(&golden).unwrap();
    // The same bytes with one made invalid UTF-8: read, refused as text, the case failed.
    let mut bad = good.clone();
    let last = bad.len() - 2;
    bad[last] = 0xff;
    std::fs::write(&golden, &bad).unwrap();
    p.harness(&["run", "--jobs", "1"])
        .expect_code(1)
        .expect_stdout(&format!(
            "cannot read the golden: {rel} is not valid UTF-8; goldens are text written by harness"
        ))
        .expect_stdout("(0 golden mismatches, 1 missing goldens,");
    // One byte changed, still text: a mismatch with its diff.
    let mut changed = good.clone();
    changed[last] = if good[last] == b'x' { b'y' } else { b'x' };
    std::fs::write(&golden, &changed).unwrap();
    p.harness(&["run", "--jobs", "1"])
        .expect_code(1)
        .expect_no_stdout("cannot read the golden")
        .expect_stdout("(1 golden mismatches, 0 missing goldens,");
    // A golden longer or shorter than the text by a byte is a mismatch; the golden passes.
    for other in [
        [good.as_slice(), b"\n"].concat(),
        good[..good.len() - 1].to_vec(),
    ] {
        std::fs::write(&golden, &other).unwrap();
        p.harness(&["run", "--jobs", "1"])
            .expect_code(1)
            .expect_stdout("(1 golden mismatches, 0 missing goldens,");
    }
    std::fs::write(&golden, &good).unwrap();
    p.harness(&["run", "--jobs", "1"]).expect_code(0);

    // Files one after another on one worker, each file's goldens read where the last file's
    // were: a byte off in the second file's golden is its mismatch alone.
    p.copy_from_repo(EXAMPLE, "scenarios/z/second.toml");
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    let second = p.join("snapshots/z/second.snap");
    let text = std::fs::read(&second).unwrap();
    p.harness(&["run", "--jobs", "1"]).expect_code(0);
    std::fs::write(&second, &text[..text.len() - 1]).unwrap();
    p.harness(&["run", "--jobs", "1"])
        .expect_code(1)
        .expect_stdout("3 passed, 1 failed (1 golden mismatches, 0 missing goldens,");
}

#[cfg(unix)]
#[test]
fn a_symlinked_pending_golden_is_neither_shown_nor_accepted() {
    let p = with_goldens();
    p.write("secret.env", CANARY);
    let pending = p.join(&format!("snapshots/{EXAMPLE_ID}.snap.new"));
    symlink(&p.join("secret.env"), &pending);
    let diff = p.harness(&["diff"]);
    diff.expect_code(2)
        .expect_no_stdout("canary-8d1f0e")
        .expect_no_stdout("MY_SECRET");
    assert!(diff.stderr.contains("is a symbolic link"), "{diff}");
    let accept = p.harness(&["accept"]);
    accept.expect_code(2);
    assert!(accept.stderr.contains("is a symbolic link"), "{accept}");
    assert!(
        !p.read(&format!("snapshots/{EXAMPLE_ID}.snap"))
            .contains("canary")
    );
}

#[cfg(unix)]
#[test]
fn a_golden_that_is_a_fifo_is_refused_without_hanging() {
    let p = with_goldens();
    let golden = p.join(&format!("snapshots/{EXAMPLE_ID}@none.snap"));
    std::fs::remove_file(&golden).unwrap();
    mkfifo(&golden);
    harness_bounded(&p, &["run"])
        .expect_code(2)
        .expect_stdout("is a FIFO");
}

// --- 15 #2 and 17: outputs keep their mode, go through links, never replace a device ---------

#[cfg(unix)]
#[test]
fn outputs_keep_their_mode_and_new_ones_follow_the_umask() {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &Project, rel: &str| {
        std::fs::metadata(p.join(rel)).unwrap().permissions().mode() & 0o777
    };
    let p = with_goldens();
    p.write("baselines/scenarios.toml", "version = 1\n");
    std::fs::set_permissions(
        p.join("baselines/scenarios.toml"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    p.harness(&["bless"]).expect_code(0);
    assert_eq!(mode(&p, "baselines/scenarios.toml"), 0o644);
    assert!(p.read("baselines/scenarios.toml").contains("[cases"));

    let umask = umask();
    p.harness(&[
        "run",
        "--json",
        "r.json",
        "--metrics",
        "m.csv",
        "--traces",
        "t",
    ])
    .expect_code(0);
    for rel in ["r.json", "m.csv", &format!("t/{EXAMPLE_ID}.jsonl")] {
        assert_eq!(mode(&p, rel), 0o666 & !umask, "{rel}");
    }
    let golden = format!("snapshots/{EXAMPLE_ID}.snap");
    std::fs::set_permissions(p.join(&golden), std::fs::Permissions::from_mode(0o640)).unwrap();
    p.write(&format!("{golden}.new"), p.read(&golden) + "changed\n");
    p.harness(&["accept"]).expect_code(0);
    assert_eq!(mode(&p, &golden), 0o640);
}

#[cfg(unix)]
#[test]
fn outputs_write_through_links_and_into_fifos_instead_of_replacing_them() {
    let p = with_goldens();
    p.write("real/r.json", "old");
    symlink(&p.join("real/r.json"), &p.join("r.json"));
    std::fs::create_dir_all(p.join("out")).unwrap();
    let fifo = p.join("out/x");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let run = harness_bounded(&p, &["run", "--json", "r.json", "--metrics", "out/x"]);
    run.expect_code(0);
    {
        use std::os::unix::fs::FileTypeExt as _;
        // Checked before joining the reader, which would wait for ever on a replaced FIFO.
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo(),
            "the FIFO was replaced by a regular file"
        );
    }
    let csv = reader.join().unwrap();
    assert!(csv.starts_with("scenario,"), "{csv}");
    assert!(
        std::fs::symlink_metadata(p.join("r.json"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced"
    );
    assert!(p.read("real/r.json").contains("\"version\": 1"));
    let run = p.harness(&["run", "--metrics", "out"]);
    run.expect_code(2);
    assert!(run.stderr.contains("out is a folder"), "{run}");
}

// --- 15 #9: accept and reject select goldens by case, not by string prefix -------------------

#[test]
fn accepting_one_golden_does_not_accept_those_whose_names_start_alike() {
    let p = Project::with_example();
    p.copy_from_repo(EXAMPLE, "scenarios/reflex/exec-empty-args-cross.toml");
    p.harness(&["run"]).expect_code(1);
    let run = p.harness(&["accept", &format!("snapshots/{EXAMPLE_ID}.snap")]);
    run.expect_code(0)
        .expect_stdout("1 pending golden(s) accepted");
    assert!(p.exists(&format!("snapshots/{EXAMPLE_ID}.snap")));
    assert!(p.exists("snapshots/reflex/exec-empty-args-cross.snap.new"));
    assert!(p.exists(&format!("snapshots/{EXAMPLE_ID}@none.snap.new")));
    p.harness(&["reject", "snapshots/reflex/exec-empty-args-cross.snap.new"])
        .expect_code(0)
        .expect_stdout("1 pending golden(s) rejected");
    assert!(p.exists(&format!("snapshots/{EXAMPLE_ID}@none.snap.new")));
}

// --- 15 #10: scenario ids are unique and normalised ---------------------------------------

#[test]
fn scenario_files_whose_ids_collide_are_refused() {
    let p = Project::with_example();
    let toml = std::fs::read_to_string(repo().join(EXAMPLE)).unwrap();
    p.write("scenarios/dup.toml", &toml);
    let value: serde_json::Value = toml::from_str(&toml).unwrap();
    p.write("scenarios/dup.json", value.to_string());
    p.write("scenarios/reflex/exec-empty-args@none.toml", &toml);
    let run = p.harness(&["run"]);
    run.expect_code(2)
        .expect_stdout("error: scenarios/dup.json:1:1: scenario id `dup` is also the id of scenarios/dup.toml")
        .expect_stdout("error: scenarios/dup.toml:1:1: scenario id `dup` is also the id of scenarios/dup.json")
        .expect_stdout("error: scenarios/reflex/exec-empty-args@none.toml:1:1: a scenario file name cannot contain `@`");
}

#[test]
fn ids_are_normalised_and_absolute_paths_resolved_against_the_root() {
    let p = with_goldens();
    let abs = p.join(EXAMPLE);
    let run = p.harness(&["run", abs.to_str().unwrap()]);
    run.expect_code(0);
    let run = p.harness(&["run", "scenarios/reflex/../reflex/exec-empty-args.toml"]);
    run.expect_code(0);
    let list = p.harness(&["list", abs.to_str().unwrap()]);
    list.expect_code(0);
    assert!(list.stdout.starts_with(&format!("{EXAMPLE_ID} ")), "{list}");
}

// --- 15 #11: a run that takes nothing is not a pass ----------------------------------------

#[cfg(unix)]
#[test]
fn links_special_files_and_undecodable_names_are_reported_not_skipped() {
    use std::os::unix::ffi::OsStrExt as _;
    let p = with_goldens();
    p.write(
        "other/linked.toml",
        std::fs::read(repo().join(EXAMPLE)).unwrap(),
    );
    symlink(
        &p.join("other/linked.toml"),
        &p.join("scenarios/linked.toml"),
    );
    symlink(&p.join("other"), &p.join("scenarios/linked-folder"));
    let bad = std::ffi::OsStr::from_bytes(b"scenarios/bad-\xff.toml");
    std::fs::write(p.path().join(bad), b"format = 1\n").unwrap();
    let run = p.harness(&["run"]);
    run.expect_code(2)
        .expect_stdout("error: scenarios/linked.toml:1:1: is a symbolic link")
        .expect_stdout("error: scenarios/linked-folder:1:1: is a symbolic link")
        .expect_stdout("is not valid UTF-8");

    let q = Project::with_example();
    harness_bounded(&q, &["run", "/dev/zero"])
        .expect_code(2)
        .expect_stdout("error: /dev/zero:1:1: is a device");
    mkfifo(&q.join("scenarios/fifo.toml"));
    harness_bounded(&q, &["run", "scenarios/fifo.toml"])
        .expect_code(2)
        .expect_stdout("is a FIFO");
}

#[cfg(unix)]
#[test]
fn a_symlinked_baseline_is_refused_unread() {
    let p = with_goldens();
    // TOML that names a metric with a string: its parse error would quote the value.
    p.write(
        "secret.toml",
        format!("version = 1\n[cases.x]\niterations = \"{CANARY}\"\n"),
    );
    std::fs::create_dir_all(p.join("baselines")).unwrap();
    symlink(&p.join("secret.toml"), &p.join("baselines/scenarios.toml"));
    let run = p.harness(&["run", "--baseline", "baselines/scenarios.toml"]);
    run.expect_code(2).expect_no_stdout("canary-8d1f0e");
    assert!(
        !run.stderr.contains("canary-8d1f0e") && run.stderr.contains("is a symbolic link"),
        "{run}"
    );
}

// --- 15 #4: bytes are bounded, not only counts -----------------------------------------------

/// `harness ARGS` in `p` under a 1 GiB address-space limit (`ulimit -v`): a run that would need
/// gigabytes dies of it instead of taking the machine down.
#[cfg(unix)]
fn harness_in_1_gib(p: &Project, args: &[&str]) -> Run {
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_harness"))
        .args(args)
        .current_dir(p.path())
        .env_remove("CI")
        .env("NO_COLOR", "1")
        .output()
        .expect("run harness under ulimit");
    Run::from_output(format!("{args:?} under ulimit -v 1 GiB"), &out)
}

#[cfg(unix)]
#[test]
fn a_scenario_inside_every_count_limit_is_stopped_by_the_byte_limits_before_memory_goes() {
    let p = Project::new();
    let output = "x".repeat(1024 * 1024);
    p.write(
        "scenarios/big.toml",
        format!(
            "format = 1\nfamily = \"fixtures\"\nuser = \"Go.\"\n\n[config]\nmax_iterations = 1000\n\n[[tools]]\nname = \"dump\"\ndefault = {{ ok = \"{output}\" }}\n\n[[model.turns]]\ntool_calls = [{{ name = \"dump\" }}, {{ name = \"dump\" }}, {{ name = \"dump\" }}, {{ name = \"dump\" }}, {{ name = \"dump\" }}]\nrepeat = 300\n\n[[model.turns]]\ntext = \"Done.\"\n"
        ),
    );
    let run = harness_in_1_gib(&p, &["run"]);
    run.expect_code(2)
        .expect_stdout("error: scenarios/big.toml:")
        .expect_stdout("bytes (the limit per run)");
    assert!(p.files("snapshots", "").is_empty(), "{run}");
}

#[test]
fn absurd_jobs_and_repeats_are_usage_errors() {
    let p = Project::with_example();
    for args in [
        &["run", "--jobs", "100000"][..],
        &["run", "--repeat", "4294967295"],
        &["bless", "--jobs", "100000"],
        &["sweep", "scenarios", "--jobs", "100000", "--out", "x.csv"],
    ] {
        let run = harness_bounded(&p, args);
        run.expect_code(2);
        assert!(run.stderr.contains("is not in 1..="), "{run}");
    }
    assert!(!p.exists("x.csv"));
}

// --- 15 #3: secrets split across stream events by index ------------------------------------

const KEY: &str = "CANARYKEY0123456789zz";

fn sse(v: &serde_json::Value) -> String {
    format!("data: {v}\n\n")
}

/// The issue's stream: call 0's arguments start the key in event 2; event 3 carries call 1
/// first, then the rest of call 0's arguments, so the pieces sit at different array places.
fn split_key_stream() -> Vec<String> {
    use serde_json::json;
    let chunk = |delta: serde_json::Value| {
        sse(&json!({"id": "c", "choices": [{"index": 0, "delta": delta}]}))
    };
    vec![
        chunk(json!({"role": "assistant", "content": null})),
        chunk(json!({"tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "exec", "arguments": "{\"command\": \"CANARYKEY0"}}
        ]})),
        chunk(json!({"tool_calls": [
            {"index": 1, "id": "call_b", "type": "function", "function": {"name": "exec", "arguments": "{\"command\": \"ls\"}"}},
            {"index": 0, "function": {"arguments": "123456789zz\"}"}}
        ]})),
        sse(
            &json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ),
        "data: [DONE]\n\n".to_owned(),
    ]
}

#[test]
fn a_key_split_across_tool_call_indices_never_reaches_cassette_terminal_trace_or_golden() {
    use crate::record::{Reply, Stub};
    let p = Project::new();
    p.write(
        "scenarios/split.toml",
        "format = 1\nfamily = \"record\"\nprofile = \"none\"\nuser = \"Run it.\"\n\n[[tools]]\nname = \"exec\"\ndefault = { ok = \"done\" }\n\n[model]\nname = \"stub-model\"\n",
    );
    let text = vec![
        sse(
            &serde_json::json!({"id": "d", "choices": [{"index": 0, "delta": {"content": "Done."}}]}),
        ),
        sse(
            &serde_json::json!({"id": "d", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ),
        "data: [DONE]\n\n".to_owned(),
    ];
    let stub = Stub::start(vec![
        Reply::Sse(split_key_stream(), false),
        Reply::Sse(text, false),
    ]);
    let base = format!("{}/v1", stub.base);
    let rec = p.harness_env(
        &[("OPENAI_API_KEY", KEY)],
        &record_of("scenarios/split.toml", &base, &["--traces", "t1"]),
    );
    rec.expect_code(0);
    let cassette = "scenarios/fixtures/cassettes/split.cassette.json";
    let replay = p.harness_env(&[], &["run", cassette, "--traces", "t2"]);
    replay.expect_stdout("no golden yet");
    let id = "fixtures/cassettes/split.cassette";
    for (what, text) in [
        ("cassette", p.read(cassette)),
        ("record output", format!("{}{}", rec.stdout, rec.stderr)),
        (
            "replay output",
            format!("{}{}", replay.stdout, replay.stderr),
        ),
        ("record trace", p.read(&format!("t1/{id}.jsonl"))),
        ("replay trace", p.read(&format!("t2/{id}.jsonl"))),
        (
            "pending golden",
            p.read(&format!("snapshots/{id}.snap.new")),
        ),
    ] {
        assert!(!text.contains(KEY), "{what} holds the key:\n{text}");
        assert!(
            !text.contains("123456789zz"),
            "{what} holds its tail:\n{text}"
        );
    }
}

#[test]
fn lint_finds_a_secret_split_across_a_cassettes_stream_events() {
    let p = Project::new();
    let shape = "sk-proj-0123456789abcdefghijklmn";
    let (a, b) = shape.split_at(12);
    let chunk = |i: usize, args: &str| serde_json::json!({"t_ms": 1, "data": serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": args}}]}}]}).to_string()});
    let cassette = serde_json::json!({
        "version": 1, "scenario": "x.toml", "case": "x", "profile": "none", "provider": "openai",
        "model": "m", "base_url": "http://127.0.0.1:1/v1", "stream": true,
        "exchanges": [{"call": 1, "request": {}, "status": 200, "elapsed_ms": 1,
            "chunks": [chunk(0, &format!("{{\"k\": \"{a}")), chunk(1, "{}"), chunk(0, &format!("{b}\"}}"))]}]
    });
    p.write(
        "fixtures/split.cassette.json",
        serde_json::to_string_pretty(&cassette).unwrap(),
    );
    let run = p.harness_env(&[], &["lint", "fixtures"]);
    run.expect_code(1)
        .expect_stdout("fixtures/split.cassette.json:")
        .expect_stdout("split across stream events")
        .expect_no_stdout(&shape[4..]);
}

// --- 15 #6 #7: names cannot forge golden lines, terminal escapes or workflow commands -------

/// No line of `out` is a GitHub workflow command harness did not write itself.
#[track_caller]
fn no_forged_command(out: &str) {
    for line in out.lines() {
        let t = line.trim_start();
        assert!(
            !t.starts_with("::")
                || t.starts_with("::error file=")
                || t.starts_with("::warning file="),
            "a forged workflow command: {line:?}\n{out}"
        );
        assert!(!line.contains('\u{1b}') && !line.contains('\r'), "{line:?}");
    }
}

#[test]
fn names_and_paths_with_control_characters_are_refused_and_shown_escaped() {
    let p = Project::new();
    p.copy_from_repo(
        "fixtures/invalid/scenario/control-character-in-family.toml",
        "scenarios/family.toml",
    );
    let toml = std::fs::read(repo().join(EXAMPLE)).unwrap();
    #[cfg(unix)]
    {
        let name = "scenarios/x\n::warning title=pwned::owned\r::error::fam\n.toml";
        std::fs::write(p.join(name), &toml).unwrap();
    }
    let run = p.harness_env(&[("GITHUB_ACTIONS", "true")], &["run"]);
    run.expect_code(2).expect_stdout(
        "error: scenarios/family.toml:3:10: the family contains a control character",
    );
    no_forged_command(&run.stdout);
    no_forged_command(&run.stderr);
    #[cfg(unix)]
    run.expect_stdout("scenarios/x\\n::warning title=pwned::owned\\r::error::fam\\n.toml:1:1: the path holds a control character");
}

/// A black-box agent that sends one request whose model and tool names carry a line break
/// and an escape, then stops.
const FORGING_AGENT: &str = r#"
import json, os, urllib.request
body = {
    "model": "m\n        9.999s  outcome response iterations=1",
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"type": "function", "function": {"name": "exec\u001b[2J", "parameters": {"type": "object"}}}],
}
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(), headers={"content-type": "application/json"})
try:
    urllib.request.urlopen(req).read()
except Exception as e:
    print(e)
"#;

#[test]
fn names_an_agent_sends_cannot_forge_golden_lines() {
    let p = Project::new();
    p.copy_from_repo(
        "scenarios/serve/reflex-black-box.toml",
        "scenarios/serve/reflex-black-box.toml",
    );
    p.write("agent.py", FORGING_AGENT);
    let run = harness_bounded(
        &p,
        &[
            "exec",
            "scenarios/serve/reflex-black-box.toml",
            "--",
            "python3",
            "agent.py",
        ],
    );
    run.expect_code(1);
    no_forged_command(&run.stdout);
    let golden = p.read("snapshots/serve/reflex-black-box@exec.snap.new");
    let timed = |l: &str| {
        let t = l.trim_start();
        t.split_once("s  ").is_some_and(|(time, _)| {
            time.split_once('.')
                .is_some_and(|(s, ms)| s.chars().all(|c| c.is_ascii_digit()) && ms.len() == 3)
        })
    };
    assert!(
        golden.lines().skip(1).all(timed) && !golden.contains('\u{1b}'),
        "{golden}"
    );
    // The header, then run start, iteration, request, response, the call whose result never
    // came (skipped) and the outcome.
    assert_eq!(golden.lines().count(), 7, "{golden}");
    assert!(golden.contains("model=m\\n        9.999s"), "{golden}");
}

#[test]
fn a_byte_order_mark_is_read_in_json_as_in_toml() {
    let p = Project::new();
    let toml = std::fs::read_to_string(repo().join(EXAMPLE)).unwrap();
    let value: serde_json::Value = toml::from_str(&toml).unwrap();
    p.write("scenarios/bom-json.json", format!("\u{feff}{value}"));
    p.write("scenarios/bom-toml.toml", format!("\u{feff}{toml}"));
    let run = p.harness(&["run"]);
    run.expect_code(1).expect_stdout("4 missing goldens");
    // So are results files and transcripts (an OTLP export saved by a Windows tool).
    p.harness(&["run", "scenarios/bom-toml.toml", "--json", "r.json"])
        .expect_code(1);
    p.write("bom.json", format!("\u{feff}{}", p.read("r.json")));
    p.harness(&["merge", "bom.json", "--no-baseline"])
        .expect_code(1)
        .expect_stdout("2 missing goldens");
    let otlp = std::fs::read_to_string(repo().join("fixtures/transcripts/otlp/events-only.jsonl"))
        .unwrap();
    // An empty results file is located at its first column, as every error is.
    p.write("empty.json", "");
    let empty = p.harness(&["merge", "empty.json", "--no-baseline"]);
    empty.expect_code(2);
    assert!(empty.stderr.contains("empty.json:1:1:"), "{empty}");
    p.write("traces/bom.jsonl", format!("\u{feff}{otlp}"));
    p.harness(&["import", "traces/bom.jsonl", "--out", "imported"])
        .expect_code(0);
}

// --- 15 #8 #12 #14 and 17: recording -------------------------------------------------------

const RECORDED: &str = "scenarios/record/reflex-live.toml";

/// A project holding the recorded scenario, made a checkout (a `.git` folder marks its root).
fn record_project() -> Project {
    let p = Project::new();
    p.copy_from_repo(RECORDED, RECORDED);
    std::fs::create_dir_all(p.join(".git")).unwrap();
    p
}

/// The stub answers for one run of the recorded scenario: `exec({})` until the nudge, then text.
fn reflex_replies() -> Vec<crate::record::Reply> {
    crate::record::reflex_openai_stream()
}

/// `harness record SCENARIO` with the OpenAI provider at `base`, streamed, and `extra`.
fn record_of<'a>(scenario: &'a str, base: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "record",
        scenario,
        "--provider",
        "openai",
        "--model",
        "stub-model",
        "--base-url",
        base,
        "--stream",
    ];
    v.extend_from_slice(extra);
    v
}

fn record_args<'a>(base: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    record_of(RECORDED, base, extra)
}

#[test]
fn a_cassette_recorded_anywhere_in_the_project_replays_from_its_own_folder() {
    use crate::record::Stub;
    for out in ["rec/reflex.cassette.json", "reflex.cassette.json"] {
        let p = record_project();
        let stub = Stub::start(reflex_replies());
        let base = format!("{}/v1", stub.base);
        p.harness_env(
            &[("OPENAI_API_KEY", "k-0123456789")],
            &record_args(&base, &["--out", out]),
        )
        .expect_code(0);
        let cassette: serde_json::Value = serde_json::from_str(&p.read(out)).unwrap();
        let reference = cassette["scenario"].as_str().unwrap().to_owned();
        assert!(
            !reference.starts_with('/') && !reference.contains("tmp/"),
            "{reference}"
        );
        // From the project root, and from the cassette's own folder.
        p.harness(&["run", out]).expect_stdout("no golden yet");
        let (dir, name) = out.rsplit_once('/').unwrap_or((".", out));
        let run = Project::run_in(&p.join(dir), &["run", name]);
        assert!(run.stdout.contains("no golden yet"), "{out}: {run}");
    }
}

#[test]
fn a_cassette_cannot_name_a_scenario_outside_its_project_even_by_absolute_path() {
    let outer = Project::new();
    outer.write(
        "secret.json",
        format!("{{\"format\": 1, \"family\": \"{CANARY}\"}}"),
    );
    std::fs::create_dir_all(outer.join("proj/.git")).unwrap();
    let text = std::fs::read_to_string(
        repo().join("fixtures/invalid/cassette/path-traversal.cassette.json"),
    )
    .unwrap()
    .replace("../../../../etc/passwd", "../../secret.json");
    outer.write("proj/a/x.cassette.json", text);
    let abs = outer.join("proj/a/x.cassette.json");
    let run = Project::run_in(&outer.join("proj"), &["run", abs.to_str().unwrap()]);
    assert_eq!(run.code, Some(2), "{run}");
    assert!(run.stdout.contains("lies outside the project"), "{run}");
    assert!(!run.stdout.contains("canary-8d1f0e"), "{run}");
}

#[test]
fn record_refuses_to_overwrite_what_is_not_a_cassette() {
    let p = record_project();
    let before = p.read(RECORDED);
    let run = p.harness_env(
        &[("OPENAI_API_KEY", "k-0123456789")],
        &record_args(
            "http://127.0.0.1:9/v1",
            &["--record-mode", "all", "--out", RECORDED],
        ),
    );
    run.expect_code(2);
    assert!(run.stderr.contains("--out must name a cassette"), "{run}");
    assert_eq!(p.read(RECORDED), before);
}

#[test]
fn record_says_plainly_when_nothing_listens_or_the_base_url_is_malformed() {
    let p = record_project();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{closed}/v1");
    let run = p.harness_env(
        &[("OPENAI_API_KEY", "k-0123456789")],
        &record_args(&base, &[]),
    );
    run.expect_code(2);
    assert!(
        run.stderr.contains("cannot reach the provider")
            && !run.stderr.contains("refused the request"),
        "{run}"
    );
    for (base, says) in [
        ("127.0.0.1:8000/v1", "has no scheme"),
        ("ftp://127.0.0.1/v1", "is not http or https"),
        (
            "http://user:hunter2-pass@127.0.0.1:9/v1",
            "holds credentials",
        ),
    ] {
        let run = p.harness_env(
            &[("OPENAI_API_KEY", "k-0123456789")],
            &record_args(base, &[]),
        );
        run.expect_code(2);
        assert!(
            run.stderr.contains(says) && !run.stderr.contains("builder error"),
            "{run}"
        );
        assert!(!run.stderr.contains("hunter2"), "{run}");
    }
}

#[test]
fn record_refuses_an_answer_larger_than_a_cassette_can_replay() {
    use crate::record::{Reply, Stub};
    let p = record_project();
    let huge = "x".repeat(9 * 1024 * 1024);
    let stub = Stub::start(vec![Reply::Json(
        200,
        vec![],
        serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": huge}, "finish_reason": "stop"}]}),
    )]);
    let base = format!("{}/v1", stub.base);
    let mut args = record_args(&base, &[]);
    args.retain(|a| *a != "--stream");
    let run = p.harness_env(&[("OPENAI_API_KEY", "k-0123456789")], &args);
    run.expect_code(2);
    assert!(
        run.stderr.contains("over the limit of 8388608 bytes"),
        "{run}"
    );
    assert!(!p.exists("scenarios/record/fixtures/cassettes/reflex-live.cassette.json"));
}

// --- 15 #5 #13, Low: serve and exec under stalled and greedy clients ------------------------

const SERVED: &str = "scenarios/serve/reflex-black-box.toml";

fn serve_project() -> Project {
    let p = Project::new();
    p.copy_from_repo(SERVED, SERVED);
    p
}

/// `harness serve ARGS` in `p`, and the address it listens on.
fn start_serve(p: &Project, args: &[&str]) -> (std::process::Child, String) {
    let mut all = vec!["serve", SERVED];
    all.extend_from_slice(args);
    let mut child = harness_command(p.path(), &all)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start harness serve");
    let addr = listening_address(&mut std::io::BufReader::new(
        child.stdout.as_mut().expect("stdout"),
    ));
    (child, addr)
}

/// The status line of `GET /v1/models`, on a connection of its own.
fn status_of_models(addr: &str) -> String {
    use std::io::{BufRead as _, Write as _};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.write_all(b"GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .expect("send a request");
    let mut line = String::new();
    std::io::BufReader::new(s)
        .read_line(&mut line)
        .expect("read the status line");
    line
}

/// A connection that sent half a request (headers, part of the body) and stalls.
fn half_request(addr: &str) -> std::net::TcpStream {
    use std::io::Write as _;
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"mod")
        .expect("send half a request");
    s
}

#[cfg(unix)]
#[test]
fn serve_stops_on_sigterm_while_a_client_stalls_mid_request() {
    let p = serve_project();
    let (mut server, addr) = start_serve(&p, &[]);
    let _stalled = half_request(&addr);
    // A whole request on a second connection is answered only once the server has accepted
    // the first (connections are accepted in order): then the stalled one is in flight.
    assert!(status_of_models(&addr).starts_with("HTTP/1.1 200"));
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let status = ended_within_a_minute(&mut server);
    assert_eq!(status.code(), Some(0));
}

#[test]
fn serve_closes_a_connection_that_stalls_past_the_read_timeout() {
    use std::io::Read as _;
    let p = serve_project();
    let (mut server, addr) = start_serve(&p, &["--read-timeout-ms", "300"]);
    let mut stalled = half_request(&addr);
    stalled
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut buf = [0u8; 256];
    // The server gives up on the request: it closes (0 bytes) or answers 408, never waits on.
    match stalled.read(&mut buf) {
        Ok(n) => {
            let text = String::from_utf8_lossy(&buf[..n]);
            assert!(n == 0 || text.contains(" 408 "), "{text}");
        }
        Err(e) => assert_ne!(
            e.kind(),
            std::io::ErrorKind::WouldBlock,
            "the server kept waiting"
        ),
    }
    let _ = server.kill();
    let _ = server.wait();
}

#[test]
fn serve_checks_its_traces_folder_before_it_serves() {
    let p = serve_project();
    p.write("taken", "a file, not a folder");
    let mut child = harness_command(p.path(), &["serve", SERVED, "--traces", "taken/traces"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = ended_within_a_minute(&mut child);
    assert_eq!(status.code(), Some(2));
    let mut err = String::new();
    use std::io::Read as _;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("cannot write traces into taken/traces"),
        "{err}"
    );
}

/// An agent that leaves a child holding a half-sent request, then sleeps.
const STALLING_AGENT: &str = r#"
import os, socket, time
base = os.environ["HARNESS_BASE_URL"].split("//")[1]
if os.fork() == 0:
    host, port = base.split(":")
    s = socket.create_connection((host, int(port)))
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{")
    time.sleep(300)
else:
    with open("agent.pid", "w") as f:
        f.write(str(os.getpid()))
    time.sleep(300)
"#;

#[cfg(unix)]
#[test]
fn exec_returns_at_its_timeout_although_the_agent_left_a_stalled_connection() {
    let p = serve_project();
    p.write("agent.py", STALLING_AGENT);
    let run = harness_bounded(
        &p,
        &[
            "exec",
            SERVED,
            "--timeout-ms",
            "1000",
            "--",
            "python3",
            "agent.py",
        ],
    );
    run.expect_code(1)
        .expect_stdout("expected the command to finish within 1000 ms; it was killed");
}

#[cfg(unix)]
#[test]
fn sigint_to_exec_ends_the_agent_too() {
    let p = serve_project();
    p.write("agent.py", STALLING_AGENT);
    let mut child = harness_command(p.path(), &["exec", SERVED, "--", "python3", "agent.py"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The agent writes its pid; wait until the whole number is there (the file may exist
    // before it is written).
    let start = std::time::Instant::now();
    let agent: i32 = loop {
        let pid = std::fs::read_to_string(p.join("agent.pid"))
            .ok()
            .and_then(|t| t.trim().parse().ok());
        match pid {
            Some(pid) => break pid,
            None if start.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            None => panic!("the agent never wrote its pid"),
        }
    };
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = ended_within_a_minute(&mut child);
    assert_eq!(status.code(), Some(130));
    // The agent is gone (a zombie reaped by init counts as gone once reaped).
    let start = std::time::Instant::now();
    while unsafe { libc::kill(agent, 0) } == 0 && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_ne!(
        unsafe { libc::kill(agent, 0) },
        0,
        "the agent {agent} outlived exec"
    );
}

#[test]
fn exec_names_a_prompt_it_cannot_hand_over() {
    let p = serve_project();
    p.write(
        SERVED,
        p.read(SERVED)
            .replacen("system = \"", "system = \"\\u0000", 1),
    );
    let run = p.harness(&["exec", SERVED, "--", "true"]);
    run.expect_code(2);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(
        all.contains("HARNESS_SYSTEM") && all.contains("NUL"),
        "{run}"
    );
    assert!(!all.contains("cannot run `true`"), "{run}");
}

/// An agent that answers the first reply with 20,001 messages of its own appended: the
/// inferred trace would hold two events for each.
const CHATTY_AGENT: &str = r#"
import json, os, urllib.request
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
def post(msgs):
    req = urllib.request.Request(url, data=json.dumps({"model": "m", "messages": msgs}).encode(),
        headers={"content-type": "application/json"})
    return json.loads(urllib.request.urlopen(req).read())
msgs = [{"role": "user", "content": "hi"}]
answer = post(msgs)["choices"][0]["message"]
msgs.append(answer)
for call in answer.get("tool_calls") or []:
    msgs.append({"role": "tool", "tool_call_id": call["id"], "content": "ok"})
msgs += [{"role": "user", "content": "more %d" % i} for i in range(20001)]
try:
    post(msgs)
except Exception as e:
    print(e)
"#;

#[test]
fn an_inferred_trace_is_held_to_the_trace_limit() {
    let p = serve_project();
    p.write("agent.py", CHATTY_AGENT);
    let run = harness_bounded(&p, &["exec", SERVED, "--", "python3", "agent.py"]);
    run.expect_code(2)
        .expect_stdout("the run's trace grew past 20000 events");
    assert!(p.files("snapshots", "").is_empty(), "{run}");
}

// --- 15 #16 and Low: what a run writes when paths, names or folders are odd ---------------

#[cfg(unix)]
#[test]
fn json_results_are_whole_when_a_path_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt as _;
    let p = with_goldens();
    let bad = std::ffi::OsStr::from_bytes(b"scenarios/bad-\xff.toml");
    std::fs::write(p.path().join(bad), b"format = 1\n").unwrap();
    let run = p.harness(&["run", "--json", "r.json"]);
    run.expect_code(2);
    let json: serde_json::Value =
        serde_json::from_str(&p.read("r.json")).expect("the results are JSON");
    assert_eq!(json["summary"]["invalid_files"], 1, "{json}");
    assert!(
        json.to_string().contains("scenarios/bad-\u{fffd}.toml"),
        "{json}"
    );
}

#[test]
fn a_scenario_name_too_long_for_its_goldens_is_refused() {
    let p = Project::with_example();
    let name = format!("scenarios/{}.toml", "n".repeat(248));
    p.copy_from_repo(EXAMPLE, &name);
    let run = p.harness(&["run", &name]);
    run.expect_code(2)
        .expect_stdout("too long for the names of its goldens")
        .expect_no_stdout("pending golden(s) written");
}

#[test]
fn unwritable_output_folders_are_refused_before_the_run() {
    let p = with_goldens();
    p.write("taken", "a file, not a folder");
    for flag in ["--traces", "--pending-dir"] {
        let run = p.harness(&["run", flag, "taken/sub"]);
        run.expect_code(2);
        assert!(
            run.stderr
                .contains(&format!("cannot write into {flag} taken/sub")),
            "{run}"
        );
        assert!(!run.stdout.contains("expectations failed"), "{run}");
    }
}

#[test]
fn stale_temporary_files_beside_report_files_are_cleaned() {
    let p = with_goldens();
    let past = std::time::SystemTime::now() - Duration::from_secs(3600);
    // Old leftovers: one beside a report, one deep below the pending folder.
    for rel in ["out/.harness-left.tmp", "elsewhere/deep/.harness-other.tmp"] {
        p.write(rel, "half a file");
        std::fs::File::options()
            .write(true)
            .open(p.join(rel))
            .unwrap()
            .set_modified(past)
            .unwrap();
    }
    p.harness(&["run", "--json", "out/r.json", "--pending-dir", "elsewhere"])
        .expect_code(0);
    assert!(
        !p.exists("out/.harness-left.tmp"),
        "the leftover beside the report stays"
    );
    // Nothing was written below `elsewhere/deep`: harness does not walk folders to clean.
    assert!(p.exists("elsewhere/deep/.harness-other.tmp"));
}

#[cfg(unix)]
#[test]
fn inputs_named_on_the_command_line_that_are_fifos_are_refused_without_hanging() {
    let p = with_goldens();
    mkfifo(&p.join("fifo.toml"));
    for args in [
        &["trace", "fifo.toml"][..],
        &["run", "--baseline", "fifo.toml"],
        &["merge", "fifo.toml"],
    ] {
        let run = harness_bounded(&p, args);
        run.expect_code(2);
        assert!(
            format!("{}{}", run.stdout, run.stderr).contains("is a FIFO"),
            "{run}"
        );
    }
}

/// Issue 31: a bad `--failure` pattern is a usage error at the flag (it was reported at the
/// scenario file's `:1:1` and counted as an invalid file), and the hint says which syntax is
/// supported (`\p{…}` is not).
#[test]
fn a_bad_failure_pattern_is_a_usage_error_at_the_flag() {
    let p = crate::support::Project::new();
    p.copy_from_repo(
        "scenarios/serve/reflex-black-box.toml",
        "scenarios/serve/reflex-black-box.toml",
    );
    for pattern in ["(unclosed", "\\p{L}+"] {
        let run = p.harness(&[
            "exec",
            "scenarios/serve/reflex-black-box.toml",
            "--failure",
            pattern,
            "--",
            "true",
        ]);
        run.expect_code(2);
        assert!(
            run.stderr.contains(&format!(
                "invalid value '{pattern}' for '--failure <REGEX>'"
            )),
            "{run}"
        );
        assert!(run.stderr.contains("`\\p{…}` is not supported"), "{run}");
        assert!(!run.stdout.contains("invalid files"), "{run}");
    }
}

#[test]
fn no_output_replaces_an_input_or_lands_where_it_is_read_back() {
    let p = Project::new();
    p.copy_from_repo("scenarios/reflex", "scenarios/reflex");
    let scenario = "scenarios/reflex/exec-empty-args.toml";
    let before = p.read(scenario);
    let refused = |args: &[&str], want: &str| {
        let run = p.harness(args);
        run.expect_code(2);
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
    };
    // `run --json` onto a scenario it runs, or into the folder it reads scenarios from.
    refused(
        &["run", scenario, "--json", scenario],
        "--json scenarios/reflex/exec-empty-args.toml: is the input file scenarios/reflex/exec-empty-args.toml",
    );
    refused(
        &["run", "scenarios", "--json", "scenarios/results.json"],
        "--json scenarios/results.json: lies in the input folder scenarios, where this command would read it back",
    );
    // Through another name for the same file.
    refused(
        &[
            "run",
            scenario,
            "--metrics",
            "./scenarios/../scenarios/reflex/exec-empty-args.toml",
        ],
        "is the input file",
    );
    assert_eq!(p.read(scenario), before, "the scenario is untouched");
    // A file the command does not read may go there (a CSV beside the scenarios).
    p.harness(&[
        "run",
        "-q",
        "scenarios",
        "--metrics",
        "scenarios/metrics.csv",
    ])
    .expect_code(1);
    // `sweep --partial` onto a transcript, `import --out` into the folder it reads.
    p.write("corpus/a.jsonl", r#"{"role": "user", "content": "hi"}"#);
    refused(
        &["sweep", "corpus", "--partial", "corpus/part.jsonl"],
        "--partial corpus/part.jsonl: lies in the input folder corpus",
    );
    refused(
        &["sweep", "corpus/a.jsonl", "--out", "corpus/a.jsonl"],
        "--out corpus/a.jsonl: is the input file corpus/a.jsonl",
    );
    refused(
        &["import", "corpus", "--out", "corpus/imported"],
        "--out corpus/imported: lies in the input folder corpus",
    );
    // `scorecard` and `report` onto their results file.
    p.write("results.json", "{}");
    refused(
        &["scorecard", "results.json", "--markdown", "results.json"],
        "--markdown results.json: is the input file results.json",
    );
    refused(
        &["report", "results.json", "--html", "results.json"],
        "--html results.json: is the input file results.json",
    );
    // An output in a folder not made yet inside an input folder: read back all the same.
    refused(
        &[
            "run",
            "scenarios",
            "--json",
            "scenarios/new/deeper/results.json",
        ],
        "--json scenarios/new/deeper/results.json: lies in the input folder scenarios",
    );
    refused(
        &["import", "corpus", "--out", "corpus/new/deeper"],
        "--out corpus/new/deeper: lies in the input folder corpus",
    );
    assert!(!p.exists("scenarios/new") && !p.exists("corpus/new"));
    // A preface or a labels file is an input too.
    p.write("preface.md", "# Ours\n");
    refused(
        &[
            "scorecard",
            "results.json",
            "--preface",
            "preface.md",
            "--markdown",
            "preface.md",
        ],
        "--markdown preface.md: is the input file preface.md",
    );
    p.write("labels.jsonl", "{\"run\": \"a\", \"stuck\": false}\n");
    refused(
        &[
            "sweep",
            "corpus",
            "--labels",
            "labels.jsonl",
            "--write-labels",
            "labels.jsonl",
        ],
        "--write-labels labels.jsonl: is the input file labels.jsonl",
    );
    assert_eq!(p.read("preface.md"), "# Ours\n");
    // Under another name: a hard link.
    std::fs::hard_link(p.join("results.json"), p.join("linked.json")).expect("a hard link");
    refused(
        &["scorecard", "results.json", "--markdown", "linked.json"],
        "--markdown linked.json: is the input file results.json",
    );
    // Two outputs on one file: the first would be lost.
    refused(
        &[
            "scorecard",
            "results.json",
            "--markdown",
            "card.out",
            "--html",
            "./card.out",
        ],
        "--html ./card.out is also where --markdown goes",
    );
    // `import` never writes a run over a file it imports (`--out` beside the inputs).
    p.write(
        "in/a.jsonl",
        r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}"#,
    );
    let first = p.harness(&["import", "in/a.jsonl", "--out", "made"]);
    first.expect_code(0);
    let made = p.files("made", ".jsonl");
    assert_eq!(made.len(), 1, "{made:?}");
    let name = made[0].rsplit('/').next().expect("a name").to_owned();
    p.write(&format!("in/{name}"), "not a trace\n");
    let run = p.harness(&["import", "in/a.jsonl", &format!("in/{name}"), "--out", "in"]);
    run.expect_code(2);
    assert!(run.stderr.contains("is the input file"), "{run}");
    assert_eq!(p.read(&format!("in/{name}")), "not a trace\n");
}

#[test]
fn special_files_as_side_inputs_are_refused_not_waited_on() {
    let p = Project::new();
    p.harness(&["suite", "--profile", "none", "--json", "results.json"])
        .expect_code(0);
    p.write("corpus/a.jsonl", r#"{"role": "user", "content": "hi"}"#);
    let fifo = p.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    for args in [
        &["scorecard", "results.json", "--preface", "fifo"][..],
        &["sweep", "corpus", "--labels", "fifo"][..],
        &["scorecard", "results.json", "--preface", "/dev/zero"][..],
        &["sweep", "corpus", "--labels", "/dev/zero"][..],
    ] {
        let run = p.harness(args);
        run.expect_code(2);
        assert!(
            run.stderr.contains("not a regular file") || run.stderr.contains("is a"),
            "{args:?}: {run}"
        );
    }
}
