//! The README and the book (`docs/`, built with mdBook) held to the binary, so they cannot drift
//! from it: every page is in the book's summary, every internal link names a file and a heading
//! that exist, every `harness` command shown parses, every whole scenario and project file shown
//! loads, and every command block is either run here (` ```sh run `: in an empty folder with a
//! stand-in agent; ` ```sh run=repo `: in a copy of this project) or mirrored by a named test or
//! CI script (` ```sh mirror=PATH `: the file names the page, and holds the block's programs,
//! `harness` subcommands and flags). `.ci/book` builds the book and checks its built links.

use crate::support::{Project, repo};
use std::collections::BTreeSet;
use std::path::Path;

/// A page of the docs: its path from the repository root and its text.
struct Page {
    path: String,
    text: String,
}

/// The README, the book's summary, and every file the summary lists or a listed page includes.
fn pages() -> Vec<Page> {
    let read = |path: &str| Page {
        path: path.to_owned(),
        text: std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}")),
    };
    let summary = read("docs/SUMMARY.md");
    let mut listed: Vec<String> = links(&summary.text)
        .into_iter()
        .map(|(_, target)| format!("docs/{target}"))
        .collect();
    let mut pages = vec![read("README.md")];
    let mut i = 0;
    while i < listed.len() {
        let page = read(&listed[i]);
        for line in page.text.lines() {
            if let Some(included) = line
                .trim()
                .strip_prefix("{{#include ")
                .and_then(|rest| rest.strip_suffix("}}"))
            {
                listed.push(format!("docs/{included}"));
            }
        }
        pages.push(page);
        i += 1;
    }
    pages.push(summary);
    pages
}

/// A fenced code block: the line its fence opens on, its info string and its lines.
struct Block {
    line: usize,
    info: String,
    body: Vec<String>,
}

/// The page's text outside code blocks (blocks blanked, so line numbers hold) and its blocks.
fn split(text: &str) -> (String, Vec<Block>) {
    let mut prose = String::new();
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        match (&mut open, fence) {
            (None, true) => {
                open = Some(Block {
                    line: n + 1,
                    info: line.trim_start().trim_start_matches('`').trim().to_owned(),
                    body: Vec::new(),
                });
            }
            (Some(_), true) => blocks.extend(open.take()),
            (Some(block), false) => block.body.push(line.to_owned()),
            (None, false) => prose.push_str(line),
        }
        prose.push('\n');
    }
    assert!(open.is_none(), "a code block is not closed");
    (prose, blocks)
}

/// The `[text](target)` links of prose, inline code left out: (line, target).
fn links(prose: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in prose.lines().enumerate() {
        // Inline code is not a link: drop every other backtick-delimited span.
        let plain: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            found.push((n + 1, after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    found
}

/// The ids mdBook gives a page's headings (GitHub's are the same for these pages): the text,
/// markup dropped, lowercased, spaces to `-`, other punctuation dropped; repeats get `-1`, `-2`.
fn heading_ids(text: &str) -> BTreeSet<String> {
    let (prose, _) = split(text);
    let mut ids = BTreeSet::new();
    for line in prose.lines() {
        let Some(heading) = line
            .strip_prefix('#')
            .map(|h| h.trim_start_matches('#'))
            .and_then(|h| h.strip_prefix(' '))
        else {
            continue;
        };
        let mut plain = String::new();
        let mut rest = heading;
        // A link's text stays, its target goes.
        while let Some(open) = rest.find("](") {
            plain.push_str(&rest[..open]);
            rest = rest[open..]
                .find(')')
                .map_or("", |close| &rest[open + close + 1..]);
        }
        plain.push_str(rest);
        let id: String = plain
            .trim()
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c.to_lowercase().next().unwrap_or(c))
                } else if c.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let mut unique = id.clone();
        let mut n = 1;
        while ids.contains(&unique) {
            unique = format!("{id}-{n}");
            n += 1;
        }
        ids.insert(unique);
    }
    ids
}

#[test]
fn every_page_is_in_the_book_and_every_internal_link_resolves() {
    let pages = pages();
    let in_book: BTreeSet<&str> = pages.iter().map(|p| p.path.as_str()).collect();
    for entry in std::fs::read_dir(repo().join("docs")).expect("docs/") {
        let name = entry
            .expect("an entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.ends_with(".md") {
            assert!(
                in_book.contains(format!("docs/{name}").as_str()),
                "docs/{name} is not in docs/SUMMARY.md (nor included by a page in it)"
            );
        }
    }
    let mut checked = 0;
    for page in &pages {
        let (prose, _) = split(&page.text);
        let dir = Path::new(&page.path).parent().expect("a folder");
        for (line, target) in links(&prose) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let at = format!("{}:{line}: {target}", page.path);
            let (file, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                page.path.clone()
            } else {
                dir.join(file).to_string_lossy().into_owned()
            };
            assert!(!path.contains(".."), "{at}: a link out of the book");
            let text = std::fs::read_to_string(repo().join(&path));
            assert!(
                repo().join(&path).exists(),
                "{at}: no such file (docs/ is the book: link its pages relative to it)"
            );
            if !fragment.is_empty() {
                let text = text.unwrap_or_else(|e| panic!("{at}: {e}"));
                let ids = heading_ids(&text);
                assert!(
                    ids.contains(fragment),
                    "{at}: {path} has no heading with that id; it has {ids:?}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} internal links checked");
}

/// One command of a block: its text (continuations joined, comment dropped) and its line.
struct Command {
    line: usize,
    text: String,
}

/// The commands of a shell block. When some lines start with a `$ ` prompt, only those are
/// commands (the rest is their output).
fn commands(block: &Block) -> Vec<Command> {
    let prompted = block.body.iter().any(|l| l.starts_with("$ "));
    let mut out = Vec::new();
    let mut pending: Option<Command> = None;
    for (i, raw) in block.body.iter().enumerate() {
        let line = block.line + 1 + i;
        let text = if let Some(cmd) = &mut pending {
            cmd.text.push(' ');
            raw.trim().to_owned()
        } else if prompted {
            match raw.strip_prefix("$ ") {
                Some(c) => c.to_owned(),
                None => continue,
            }
        } else {
            raw.clone()
        };
        let text = strip_comment(&text);
        let (text, continues) = match text.trim_end().strip_suffix('\\') {
            Some(t) => (t.trim_end().to_owned(), true),
            None => (text.trim_end().to_owned(), false),
        };
        let cmd = pending.get_or_insert(Command {
            line,
            text: String::new(),
        });
        cmd.text.push_str(&text);
        if !continues {
            let done = pending.take().expect("a command");
            if !done.text.trim().is_empty() {
                out.push(done);
            }
        }
    }
    out.extend(pending);
    out
}

/// `line` without a shell comment (`#` at a word's start, outside quotes).
fn strip_comment(line: &str) -> String {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return line[..i].to_owned(),
            _ => {}
        }
        previous = c;
    }
    line.to_owned()
}

/// Shell words, quotes removed; `|`, `&&` and `;` end a pipeline stage (returned apart).
fn stages(command: &str) -> Vec<Vec<String>> {
    let mut stages = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut quote = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => word.push(c),
            (None, c) if c.is_whitespace() || c == '|' || c == ';' || c == '&' => {
                if in_word {
                    stages
                        .last_mut()
                        .expect("a stage")
                        .push(std::mem::take(&mut word));
                    in_word = false;
                }
                if c != ' ' && c != '\t' {
                    if c == '&' {
                        chars.next_if_eq(&'&');
                    }
                    stages.push(Vec::new());
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        stages.last_mut().expect("a stage").push(word);
    }
    stages.retain(|s| !s.is_empty());
    stages
}

/// A stage's program and its arguments, leading `NAME=value` assignments skipped.
fn program(stage: &[String]) -> (&str, &[String]) {
    let start = stage
        .iter()
        .position(|w| !w.contains('=') || w.starts_with('-'))
        .unwrap_or(stage.len());
    match stage.get(start) {
        Some(p) => (p, &stage[start + 1..]),
        None => ("", &[]),
    }
}

/// What a reader is told to run, in the words the pages use: where it stands and the command.
fn shown_commands() -> Vec<(String, Block, Vec<Command>)> {
    let mut all = Vec::new();
    for page in pages() {
        let (_, blocks) = split(&page.text);
        for block in blocks {
            let lang = block.info.split_whitespace().next().unwrap_or("");
            let cmds = match lang {
                "sh" | "bash" | "shell" | "console" | "powershell" => commands(&block),
                // An output block's prompted lines are commands too: they must parse.
                "text" if block.body.iter().any(|l| l.starts_with("$ harness ")) => {
                    commands(&block)
                }
                _ => continue,
            };
            all.push((page.path.clone(), block, cmds));
        }
    }
    all
}

#[test]
fn every_harness_command_shown_parses() {
    let mut parsed = 0;
    for (page, _, cmds) in shown_commands() {
        for cmd in cmds {
            for stage in stages(&cmd.text) {
                let (prog, args) = program(&stage);
                if prog != "harness" {
                    continue;
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                if let Err(e) = harness::cli::parses(&args) {
                    panic!("{page}:{}: `{}` does not parse:\n{e}", cmd.line, cmd.text);
                }
                parsed += 1;
            }
        }
    }
    assert!(parsed >= 30, "only {parsed} harness commands in the docs");
}

/// How a command block is held to the binary: run here, or mirrored by a named file.
enum Held {
    Run { repo: bool },
    Mirror(String),
}

fn held(page: &str, block: &Block) -> Held {
    let tags: Vec<&str> = block.info.split_whitespace().skip(1).collect();
    let at = format!("{page}:{}", block.line);
    match tags.as_slice() {
        ["run"] => Held::Run { repo: false },
        ["run=repo"] => Held::Run { repo: true },
        [tag] if tag.starts_with("mirror=") => Held::Mirror(tag["mirror=".len()..].to_owned()),
        _ => panic!(
            "{at}: a command block says how it is tested: ```sh run (here, in an empty folder with a stand-in agent), ```sh run=repo (in a copy of this project) or ```sh mirror=PATH (a test or CI script that runs it); it says {:?}",
            block.info
        ),
    }
}

/// Every mirrored block names a test or CI script that names the page back and holds each
/// command's program, and for `harness` its subcommand and long flags.
#[test]
fn every_mirrored_command_block_names_a_file_that_runs_it() {
    let mut mirrored = 0;
    for (page, block, cmds) in shown_commands() {
        if block.info.starts_with("text") {
            continue;
        }
        let Held::Mirror(path) = held(&page, &block) else {
            continue;
        };
        let at = format!("{page}:{}", block.line);
        let text = std::fs::read_to_string(repo().join(&path))
            .unwrap_or_else(|e| panic!("{at}: mirror={path}: {e}"));
        assert!(
            path.starts_with("tests/")
                || path.starts_with(".ci/")
                || (path.starts_with("src/") && text.contains("#[test]")),
            "{at}: mirror={path}: a mirror is a test (tests/, or a source file's unit tests) or a CI script (.ci/)"
        );
        assert!(
            text.contains(&page),
            "{at}: {path} does not name {page} back: say in it which block of the page it runs"
        );
        for cmd in &cmds {
            for stage in stages(&cmd.text) {
                let (prog, args) = program(&stage);
                let name = Path::new(prog)
                    .file_name()
                    .map_or(prog.into(), |n| n.to_string_lossy());
                if matches!(prog, "cd" | "export" | "") {
                    continue;
                }
                assert!(
                    text.contains(name.as_ref()),
                    "{page}:{}: {path} does not run `{name}` (`{}`)",
                    cmd.line,
                    cmd.text
                );
                if prog != "harness" {
                    continue;
                }
                let sub = args.first().map_or("", String::as_str);
                let flags = args
                    .iter()
                    .filter(|a| a.starts_with("--") && a.len() > 2)
                    .map(|a| a.split('=').next().unwrap_or(a));
                for needle in std::iter::once(sub).chain(flags) {
                    assert!(
                        text.contains(needle),
                        "{page}:{}: {path} does not use `{needle}` of `{}`",
                        cmd.line,
                        cmd.text
                    );
                }
            }
        }
        mirrored += 1;
    }
    assert!(mirrored >= 8, "only {mirrored} mirrored blocks");
}

/// A folder for a block to run in: empty but for the stand-in agents, or a copy of this
/// project.
fn scratch(with_repo: bool) -> Project {
    let p = Project::new();
    if with_repo {
        for part in [
            "scenarios",
            "snapshots",
            "baselines",
            "harness.toml",
            "fixtures",
            "examples",
        ] {
            p.copy_from_repo(part, part);
        }
    }
    p.write("my_agent.py", crate::support::STAND_IN_AGENT);
    p
}

/// Every ` ```sh run ` block runs, line by line in one shell that stops at the first failure,
/// with this `harness` first on PATH, and exits 0 having said something.
#[test]
fn every_run_command_block_runs() {
    let harness_dir = Path::new(env!("CARGO_BIN_EXE_harness"))
        .parent()
        .expect("the binary's folder")
        .to_owned();
    let path = std::env::join_paths(std::iter::once(harness_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let mut ran = 0;
    for (page, block, cmds) in shown_commands() {
        if block.info.starts_with("text") {
            continue;
        }
        let Held::Run { repo: with_repo } = held(&page, &block) else {
            continue;
        };
        let p = scratch(with_repo);
        let script = cmds
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let out = std::process::Command::new("sh")
            .args(["-ec", &script])
            .current_dir(p.path())
            .env("PATH", &path)
            .env_remove("CI")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env("NO_COLOR", "1")
            .output()
            .expect("sh");
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{page}:{}: the block failed ({}):\n{script}\n---\n{said}",
            block.line,
            out.status
        );
        assert!(
            !said.trim().is_empty(),
            "{page}:{}: the block said nothing",
            block.line
        );
        ran += 1;
    }
    assert!(ran >= 2, "only {ran} blocks run");
}

/// Every whole scenario a page shows (a TOML block with `format = 1` and a `[model]`) loads
/// and runs; every whole project file (`format = 1` and `scenarios =`) is taken by `list`.
#[test]
fn every_whole_scenario_and_project_file_shown_loads() {
    let mut loaded = 0;
    for page in pages() {
        let (_, blocks) = split(&page.text);
        for block in blocks.iter().filter(|b| b.info == "toml") {
            let text = block.body.join("\n") + "\n";
            let whole = text.lines().any(|l| l.starts_with("format = 1"));
            let at = format!("{}:{}", page.path, block.line);
            if whole && text.contains("\n[model]") {
                let p = Project::new();
                p.write("scenarios/shown.toml", &text);
                // It loads, and holds its expectations: only its golden is missing.
                let run = p.harness(&["run", "scenarios/shown.toml", "--no-baseline"]);
                assert!(
                    run.code == Some(1) && run.stdout.contains(" 0 expectation failures"),
                    "{at}: the scenario shown does not load, or fails its expectations\n{run}"
                );
                loaded += 1;
            } else if whole && text.contains("\nscenarios = ") {
                let p = Project::with_example();
                p.write("harness.toml", &text);
                let list = p.harness(&["list"]);
                assert_eq!(
                    list.code,
                    Some(0),
                    "{at}: the project file shown is refused\n{list}"
                );
                loaded += 1;
            }
        }
    }
    assert!(
        loaded >= 3,
        "only {loaded} whole scenarios and project files shown"
    );
}

/// The suite's size is read from `scenarios/suite`, never kept by hand: wherever a page (or
/// the scorecard's preface, or the project `init` writes) names how many cases, failure modes
/// or legitimate runs the bundled suite has, the figure is the suite's own.
#[test]
fn every_suite_size_in_the_docs_is_the_suite_s() {
    let size = crate::support::suite_size();
    let rules: [(&str, &[usize]); 7] = [
        (r"\b(\d+) ways a model misbehaves", &[size.failures]),
        (r"\b(\d+) kinds of legitimate work", &[size.legitimate]),
        (
            r"\((\d+) cases of (?:the bundled suite|scenarios/suite)\)",
            &[size.cases],
        ),
        (r"through the (\d+) cases", &[size.cases]),
        (r"on the same (\d+) cases", &[size.cases]),
        (r"after \d+ of (\d+) cases", &[size.cases]),
        (
            r"\((\d+) failure modes, (\d+) pieces of legitimate work",
            &[size.failures, size.legitimate],
        ),
    ];
    // A scorecard row: score, failure modes, legitimate runs, each out of the cases the loop
    // was judged on (a case not exercised is out of none), so at most the suite's.
    let row = regex_lite::Regex::new(r"^\| [\w.-]+ \| \d+/(\d+) \| \d+/(\d+) \| \d+/(\d+) \|")
        .expect("a pattern");
    let mut full_rows = 0;
    let mut texts: Vec<(String, String)> = pages().into_iter().map(|p| (p.path, p.text)).collect();
    for preface in [
        "tests/conformance/scorecard-preface.md",
        "tests/conformance/coding-agents/scorecard-preface.md",
    ] {
        let text = std::fs::read_to_string(repo().join(preface)).expect(preface);
        texts.push((preface.to_owned(), text));
    }
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (path, text) in &texts {
        for (n, line) in text.lines().enumerate() {
            for (pattern, want) in &rules {
                let re = regex_lite::Regex::new(pattern).expect("a pattern");
                for caps in re.captures_iter(line) {
                    checked += 1;
                    let got: Vec<usize> = caps
                        .iter()
                        .skip(1)
                        .map(|m| m.expect("a group").as_str().parse().expect("a number"))
                        .collect();
                    if got != *want {
                        wrong.push(format!(
                            "{path}:{}: {got:?} where the suite has {want:?}",
                            n + 1
                        ));
                    }
                }
            }
            if let Some(caps) = row.captures(line) {
                let [cases, failures, legitimate] =
                    [1, 2, 3].map(|i| caps[i].parse::<usize>().expect("a number"));
                checked += 1;
                full_rows += usize::from(
                    [cases, failures, legitimate] == [size.cases, size.failures, size.legitimate],
                );
                if cases != failures + legitimate
                    || failures > size.failures
                    || legitimate > size.legitimate
                {
                    wrong.push(format!(
                        "{path}:{}: {line}: not out of the suite's cases",
                        n + 1
                    ));
                }
            }
            // Nowhere else a bare "N failure modes" (say "the failure-mode suite").
            let bare =
                regex_lite::Regex::new(r"\b(\d+) failure modes\b(?:[^,]|$)").expect("pattern");
            if bare.is_match(line) && !line.contains(" of ") {
                wrong.push(format!("{path}:{}: a hand-kept count: {line}", n + 1));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The pages do name it (the README's card, the suite page, the scorecard's rows).
    assert!(checked >= 10, "only {checked} mentions checked");
    assert!(
        full_rows >= 4,
        "only {full_rows} scorecard rows of the whole suite"
    );
}

/// The command list is clap's (`harness --help`): each command has its row in the book's
/// command table, and `.ci/compare-binaries` reads the same list.
#[test]
fn every_command_has_its_row_in_the_command_table() {
    let p = Project::new();
    let help = p.harness(&["--help"]);
    help.expect_code(0);
    let commands: Vec<&str> = help
        .stdout
        .split("Commands:\n")
        .nth(1)
        .expect("a command list")
        .lines()
        .take_while(|l| l.starts_with(' '))
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() > 20, "{help}");
    let table = std::fs::read_to_string(repo().join("docs/commands.md")).expect("commands.md");
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| `harness "))
        .collect();
    let missing: Vec<&&str> = commands
        .iter()
        .filter(|c| {
            !rows.iter().any(|r| {
                r.starts_with(&format!("| `harness {c} "))
                    || r.starts_with(&format!("| `harness {c}`"))
                    || r.contains(&format!(", `{c}`"))
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "no row in docs/commands.md: {missing:?}"
    );
    // The import row names every format of the registry.
    let import = rows
        .iter()
        .find(|r| r.starts_with("| `harness import "))
        .expect("an import row");
    for format in harness::import::Format::all().map(harness::import::Format::as_str) {
        assert!(
            import.contains(&format!("`{format}`")),
            "docs/commands.md's import row does not name `{format}`"
        );
    }
    // And the first commands a newcomer needs come first.
    assert_eq!(commands[..3], ["init", "exec", "suite"], "{help}");
}

/// The book's provider table (`docs/providers.md`) holds every provider and API of the
/// registry: each API's route, each provider's base-URL and key variables, whether the proxy
/// records it, and the import format that reads its conversations.
#[test]
fn every_provider_of_the_registry_has_its_rows_in_the_provider_table() {
    use harness::provider::{Api, Provider};
    let text = std::fs::read_to_string(repo().join("docs/providers.md")).expect("providers.md");
    let rows_of = |p: Provider| -> Vec<&str> {
        text.lines()
            .filter(|l| l.starts_with(&format!("| `{}` |", p.as_str())))
            .collect()
    };
    for &p in Provider::ALL {
        let rows = rows_of(p);
        assert!(
            !rows.is_empty(),
            "docs/providers.md has no row for `{}`",
            p.as_str()
        );
        let first = rows[0];
        for (var, _) in p.base_url_vars() {
            assert!(
                first.contains(&format!("`{var}`")),
                "{var} is not in {first}"
            );
        }
        for var in p.key_groups().iter().copied().flatten() {
            assert!(
                first.contains(&format!("`{var}`")),
                "{var} is not in {first}"
            );
        }
        let recorded = if p.proxied() { "| yes |" } else { "| no |" };
        assert!(first.contains(recorded), "{first}: proxy column");
        assert!(
            harness::import::Format::parse(p.as_str()).is_some()
                && first.ends_with(&format!("| `{}` |", p.as_str())),
            "{first}: import column"
        );
    }
    for &api in Api::ALL {
        let route = api.route();
        assert!(
            rows_of(api.provider())
                .iter()
                .any(|r| r.contains(&format!("`POST {route}`"))),
            "docs/providers.md names no route {route} for {}",
            api.provider().as_str()
        );
    }
}
