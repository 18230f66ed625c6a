//! A temporary project to run the `harness` binary in, and the result of one run.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// The scenario every workflow test starts from (relative to the repository and the project).
pub const EXAMPLE: &str = "scenarios/reflex/exec-empty-args.toml";
/// Its own case id; the scenario also has `[compare.none]`, hence `EXAMPLE_ID@none`.
pub const EXAMPLE_ID: &str = "reflex/exec-empty-args";

/// The address a `harness serve` or `harness proxy` listens on (`127.0.0.1:PORT`), read from
/// the first line of its stdout, `listening on http://ADDR`.
pub fn listening_address(stdout: &mut impl std::io::BufRead) -> String {
    let mut first = String::new();
    stdout.read_line(&mut first).expect("the first line");
    first
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("first line: {first:?}"))
        .to_owned()
}

/// `harness serve SCENARIO --until-eof` in the project, as a stub provider: the child (its
/// stdin open: closing it ends the server) and its base URL, `http://127.0.0.1:PORT`.
pub fn stub_provider(p: &Project, scenario: &str) -> (std::process::Child, String) {
    use std::process::Stdio;
    let mut server = harness_command(p.path(), &["serve", scenario, "--until-eof"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the stub provider");
    let addr = listening_address(&mut std::io::BufReader::new(
        server.stdout.as_mut().expect("stdout"),
    ));
    (server, format!("http://{addr}"))
}

/// One HTTP/1.1 request as a hand-written stub reads it off its connection: the request line and
/// headers as sent (without the blank line that ends them), and the body its `content-length`
/// announces.
pub struct RawRequest {
    pub head: String,
    pub body: Vec<u8>,
}

impl RawRequest {
    /// The request's path.
    pub fn path(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or_default()
    }
}

/// Read one request from `reader`.
pub fn read_request(reader: &mut impl std::io::BufRead) -> RawRequest {
    let mut head = String::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a header line");
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" || line.is_empty() {
            break;
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("the body");
    RawRequest { head, body }
}

/// The repository root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A temporary folder used as the working directory of `harness`.
pub struct Project {
    dir: TempDir,
}

impl Project {
    /// An empty project.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("harness-it-")
            .tempdir()
            .expect("create a temporary project");
        // harness walks up to the nearest project file: one above the temporary folder would
        // be every test's project.
        if let Some(file) = dir.path().parent().and_then(harness::project::find) {
            panic!(
                "{} is above the temporary folder {}: move TMPDIR out of that project",
                file.display(),
                dir.path().display()
            );
        }
        Self { dir }
    }

    /// A project holding the example scenario (without goldens).
    pub fn with_example() -> Self {
        let p = Self::new();
        p.copy_from_repo(EXAMPLE, EXAMPLE);
        p
    }

    /// The project folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Absolute path of a project-relative path.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Write a file, creating its folders.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) {
        let path = self.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent folder"))
            .unwrap_or_else(|e| panic!("create folders for {rel}: {e}"));
        std::fs::write(&path, contents).unwrap_or_else(|e| panic!("write {rel}: {e}"));
    }

    /// Read a project file as text.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Does a project file exist?
    pub fn exists(&self, rel: &str) -> bool {
        self.join(rel).exists()
    }

    /// Remove a project file.
    pub fn remove(&self, rel: &str) {
        std::fs::remove_file(self.join(rel)).unwrap_or_else(|e| panic!("remove {rel}: {e}"));
    }

    /// Copy a file or folder of the repository into the project.
    pub fn copy_from_repo(&self, from: &str, to: &str) {
        copy_tree(&repo().join(from), &self.join(to));
    }

    /// `harness ARGS` run in `dir` (a folder of a project), with `CI` removed.
    pub fn run_in(dir: &Path, args: &[&str]) -> Run {
        let out = harness_command(dir, args)
            .output()
            .expect("spawn the harness binary");
        Run::from_output(format!("{args:?} in {}", dir.display()), &out)
    }

    /// `harness ARGS` in the project, with `CI` removed.
    pub fn harness(&self, args: &[&str]) -> Run {
        self.run_command(self.command(args))
    }

    /// `harness ARGS` in the project's folder `rel` (`.` for the project), with `CI` removed.
    pub fn harness_in(&self, rel: &str, args: &[&str]) -> Run {
        let mut cmd = self.command(args);
        cmd.current_dir(self.join(rel));
        self.run_command(cmd)
    }

    /// `harness ARGS` in the project, with `CI` set to `ci`.
    pub fn harness_ci(&self, ci: &str, args: &[&str]) -> Run {
        let mut cmd = self.command(args);
        cmd.env("CI", ci);
        self.run_command(cmd)
    }

    /// `harness ARGS` in the project with `CI` removed, the provider keys removed, and these
    /// variables set.
    pub fn harness_env(&self, env: &[(&str, &str)], args: &[&str]) -> Run {
        let mut cmd = self.command(args);
        cmd.env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .envs(env.iter().copied());
        self.run_command(cmd)
    }

    fn command(&self, args: &[&str]) -> Command {
        harness_command(self.path(), args)
    }

    fn run_command(&self, mut cmd: Command) -> Run {
        let out = cmd.output().expect("spawn the harness binary");
        Run::from_output(format!("{:?}", cmd.get_args().collect::<Vec<_>>()), &out)
    }

    /// The whole of `run` (`harness ARGS` in this project) as a reviewed snapshot reads it: the
    /// command, the exit code, stdout and stderr, with the project's temporary path as
    /// `[PROJECT]`, the repository's as `[REPO]` and loopback ports as `[PORT]`.
    pub fn whole(&self, args: &[&str], run: &Run) -> String {
        let filter = |text: &str| {
            let text = text
                .replace(&self.path().display().to_string(), "[PROJECT]")
                .replace(&repo().display().to_string(), "[REPO]");
            regex_lite::Regex::new(r"127\.0\.0\.1:[0-9]+")
                .expect("a regex")
                .replace_all(&text, "127.0.0.1:[PORT]")
                .into_owned()
        };
        let code = run
            .code
            .map_or_else(|| "none".to_owned(), |c| c.to_string());
        // Control characters in an argument (a test of hostile input) are spelled out.
        let shown: String = args
            .join(" ")
            .chars()
            .map(|c| {
                if c.is_control() {
                    format!("\\u{{{:x}}}", u32::from(c))
                } else {
                    c.to_string()
                }
            })
            .collect();
        format!(
            "$ harness {}\nexit code: {code}\n----- stdout -----\n{}----- stderr -----\n{}",
            filter(&shown),
            filter(&run.stdout),
            filter(&run.stderr)
        )
    }

    /// Project-relative paths (with `/`) of the files under `rel` whose names end with
    /// `suffix`, sorted.
    pub fn files(&self, rel: &str, suffix: &str) -> Vec<String> {
        self.tree(rel)
            .into_keys()
            .filter(|p| p.ends_with(suffix))
            .collect()
    }

    /// Every file under `rel` (project-relative path → bytes); empty when `rel` is absent.
    pub fn tree(&self, rel: &str) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        collect(self.path(), &self.join(rel), &mut out);
        out
    }
}

/// The `harness` command in `dir` as every test runs it: `CI`, the GitHub variables and
/// forced color removed, `NO_COLOR` set.
pub fn harness_command(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harness"));
    cmd.args(args)
        .current_dir(dir)
        .env_remove("CI")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("CLICOLOR_FORCE")
        .env("NO_COLOR", "1");
    cmd
}

/// Wait for `child` to end, failing the test (and killing it) past `limit`: a guard against a
/// hang, not a measurement.
pub fn wait_at_most(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for a child") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the child did not end within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("read a folder entry").path();
        if path.is_dir() {
            collect(root, &path, out);
        } else {
            let rel = path
                .strip_prefix(root)
                .expect("inside the project")
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read(&path).expect("read a file"));
        }
    }
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("create {}: {e}", to.display()));
        for entry in std::fs::read_dir(from).expect("read a folder") {
            let entry = entry.expect("read a folder entry");
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().expect("a parent folder")).expect("create folders");
        std::fs::copy(from, to)
            .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
    }
}

/// Run `harness ARGS` in the project and compare its whole output with the reviewed snapshot
/// `NAME` (see [`Project::whole`]); the run, for further checks.
macro_rules! assert_whole {
    ($name:expr, $project:expr, $args:expr) => {{
        let args: &[&str] = $args;
        let run = $project.harness(args);
        $crate::support::assert_whole!($name, $project, args, run)
    }};
    // A run already made (in a subfolder, with an environment): its whole output.
    ($name:expr, $project:expr, $args:expr, $run:expr) => {{
        let args: &[&str] = $args;
        let run = $run;
        insta::with_settings!({ omit_expression => true, prepend_module_to_snapshot => true }, {
            insta::assert_snapshot!($name, $project.whole(args, &run));
        });
        run
    }};
}
pub(crate) use assert_whole;

/// The result of one `harness` invocation.
pub struct Run {
    args: String,
    /// Exit code.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// The run of `harness ARGS` that gave `out`, checked for a signal, a panic and color.
    pub fn from_output(args: String, out: &std::process::Output) -> Self {
        let run = Run {
            args,
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8"),
            stderr: String::from_utf8(out.stderr.clone()).expect("stderr is UTF-8"),
        };
        assert!(run.code.is_some(), "harness was killed by a signal\n{run}");
        assert!(!run.stderr.contains("panicked"), "harness panicked\n{run}");
        assert!(
            !run.stdout.contains('\u{1b}') && !run.stderr.contains('\u{1b}'),
            "NO_COLOR is set, yet the output has escape codes\n{run}"
        );
        run
    }
    /// Assert the exit code; the panic message shows the whole output.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, Some(code), "unexpected exit code\n{self}");
        self
    }

    /// Assert stdout contains `needle`.
    #[track_caller]
    pub fn expect_stdout(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "stdout lacks {needle:?}\n{self}"
        );
        self
    }

    /// Assert stdout does not contain `needle`.
    #[track_caller]
    pub fn expect_no_stdout(&self, needle: &str) -> &Self {
        assert!(
            !self.stdout.contains(needle),
            "stdout has {needle:?}\n{self}"
        );
        self
    }

    /// The last line starting with `harness run:` or `harness exec:` (the summary).
    #[track_caller]
    pub fn summary(&self) -> &str {
        self.stdout
            .lines()
            .rev()
            .find(|l| l.starts_with("harness run:") || l.starts_with("harness exec:"))
            .unwrap_or_else(|| panic!("no summary line\n{self}"))
    }
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "harness {} exited with {:?}\n--- stdout\n{}--- stderr\n{}---",
            self.args, self.code, self.stdout, self.stderr
        )
    }
}

/// The summary line `harness run` prints for these counts.
pub fn summary(verdict: &str, counts: Counts) -> String {
    let Counts {
        cases,
        files,
        passed,
        mismatched,
        missing,
        expectation_failures,
        invalid,
        orphans,
    } = counts;
    format!(
        "harness run: {verdict}. {cases} cases from {files} files: {passed} passed, {} failed \
         ({mismatched} golden mismatches, {missing} missing goldens, {expectation_failures} \
         expectation failures), {invalid} invalid files, {orphans} orphaned goldens",
        cases - passed
    )
}

/// Counts of a summary line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub cases: u32,
    pub files: u32,
    pub passed: u32,
    pub mismatched: u32,
    pub missing: u32,
    pub expectation_failures: u32,
    pub invalid: u32,
    pub orphans: u32,
}

/// A stand-in for a user's agent (`my_agent.py`, `harness init`'s `agent.py`): the openai
/// wire on the standard library, one tool, its loop; it never crashes on the arguments it is
/// sent. For machines without the openai package, which the conformance suite and `.ci/wheel`
/// run the real example with.
pub const STAND_IN_AGENT: &str = r#"
import json, os, urllib.request
base = os.environ["OPENAI_BASE_URL"]
tools = [{"type": "function", "function": {"name": "get_weather", "description": "The weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
messages = [{"role": "system", "content": os.environ.get("HARNESS_SYSTEM", "")},
            {"role": "user", "content": os.environ.get("HARNESS_USER", "hello")}]
for _ in range(10):
    body = json.dumps({"model": "gpt-4o-mini", "messages": messages, "tools": tools}).encode()
    request = urllib.request.Request(base + "/chat/completions", body, {"content-type": "application/json"})
    message = json.load(urllib.request.urlopen(request))["choices"][0]["message"]
    messages.append(message)
    if not message.get("tool_calls"):
        print(message.get("content"))
        break
    for call in message["tool_calls"]:
        try:
            city = json.loads(call["function"]["arguments"])["city"]
            result = f"Sunny in {city}."
        except Exception as e:
            result = f"Error: {e}"
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
"#;

/// The bundled suite's size, read from `scenarios/suite` (never written out in a test): every
/// case, its failure modes, its legitimate runs.
#[derive(Debug, Clone, Copy)]
pub struct SuiteSize {
    pub cases: usize,
    pub failures: usize,
    pub legitimate: usize,
}

pub fn suite_size() -> SuiteSize {
    let mut size = SuiteSize {
        cases: 0,
        failures: 0,
        legitimate: 0,
    };
    let dir = repo().join("scenarios/suite");
    for entry in std::fs::read_dir(&dir).expect("scenarios/suite") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let doc: toml::Table = std::fs::read_to_string(&path)
            .expect("a suite file")
            .parse()
            .expect("a suite file is TOML");
        size.cases += 1;
        match doc["suite"]["kind"].as_str() {
            Some("failure") => size.failures += 1,
            Some("legitimate") => size.legitimate += 1,
            other => panic!("{}: suite kind {other:?}", path.display()),
        }
    }
    assert_eq!(size.cases, size.failures + size.legitimate);
    size
}
