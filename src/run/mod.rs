//! Orchestration: discover → load → replay in parallel → compare with goldens → judge → hand
//! each file's results, in sorted order, to the reporters. Work goes in chunks so memory stays
//! flat however large the corpus; results are identical for any `--jobs`.

pub mod interrupt;
pub mod pool;
pub mod process;

use crate::engine::{self, ScriptGap};
use crate::metrics;
use crate::mock::MockModel;
use crate::provider::matching::Matching;
use crate::results::{CaseResult, FileResult, Reporter};
use crate::scenario::{self, Case, Diagnostic, Seg, SourceFormat};
use crate::select::Selection;
use crate::snapshot::{self, Comparison};
use crate::store::{self, Layout, PathList, Room};
use crate::trace::{self, TimedEvent};
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

/// Files run ahead of the oldest one not yet reported ([`pool::for_each_ordered`]): what a
/// run holds at once is bounded by this, not by the number of files.
pub const WINDOW: usize = 512;

/// What `harness run` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Files and folders to run.
    pub paths: Vec<PathBuf>,
    /// Where scenarios and goldens live.
    pub layout: Layout,
    /// Worker threads.
    pub jobs: usize,
    /// Write pending goldens for mismatches (off when `CI` is set).
    pub write_pending: bool,
    /// Also write each run's trace as JSON lines into this folder.
    pub traces: Option<PathBuf>,
    /// Also run every scenario under these profiles (ad hoc, not gated) when it does not
    /// declare them.
    pub also_profiles: Vec<String>,
    /// Which scenarios (`--partition`) and cases (`--filter`) run.
    pub selection: Selection,
    /// Runs of each case (`--repeat`); the first failing run is the one reported.
    pub repeat: u32,
    /// Write pending goldens here (mirroring ids) instead of beside the goldens, even on CI.
    pub pending_dir: Option<PathBuf>,
    /// Keep each case's trace and tags in its result ([`crate::results::Detail`]), for the
    /// outputs that show them (`--json`, `--html`); off, a run holds no traces.
    pub keep_traces: bool,
    /// What counts when a cassette's replayed request is compared with the recording.
    pub matching: Matching,
    /// Compare each gated case with its golden; `false` where goldens are no verdict (`harness
    /// suite`, whose cards judge): none is read or written, every case is ungated.
    pub goldens: bool,
}

impl Options {
    /// What judging one served session needs (`exec`, `serve --judge`, `harness::testing`):
    /// goldens under `layout`, pending ones written beside them, one job, no traces kept.
    pub fn judging(layout: Layout, matching: Matching) -> Self {
        Self {
            paths: Vec::new(),
            layout,
            jobs: 1,
            write_pending: true,
            traces: None,
            also_profiles: Vec::new(),
            selection: Selection::default(),
            repeat: 1,
            pending_dir: None,
            keep_traces: false,
            matching,
            goldens: true,
        }
    }
}

/// The files a run takes: discovered under its paths, sorted, this shard's share.
pub struct Plan {
    /// Scenario and cassette files this shard runs, sorted.
    pub files: PathList,
    /// Paths that could not be read, as results (reported by the first shard only).
    pub unreadable: Vec<FileResult>,
    /// With `--partition`, every discovered scenario id and whether this shard runs it (without,
    /// this shard runs them all and owns every golden).
    owner: Option<HashMap<String, bool>>,
    /// Files refused because their ids collide with another's, and why.
    conflicts: HashMap<PathBuf, String>,
}

impl Plan {
    /// The refusal of a file whose id collides with another file's, if it does.
    pub fn refused(&self, path: &Path) -> Option<FileResult> {
        self.conflicts.get(path).map(|why| refused_file(path, why))
    }
}

/// Discover the files `options` names and take this shard's share.
pub fn plan(options: &Options) -> Plan {
    let (files, unreadable) = store::discover_list(&options.paths);
    let conflicts: HashMap<PathBuf, String> = store::id_conflicts(&options.layout, &files)
        .into_iter()
        .collect();
    // Shards: each takes its share of the scenario ids; what belongs to no file goes to the first.
    let (files, owner) = if options.selection.partitioned() {
        let scenario_ids: Vec<String> = files.iter().map(|f| options.layout.id_of(&f)).collect();
        let takes = options.selection.shard(&scenario_ids);
        let files: PathList = files
            .iter()
            .zip(&takes)
            .filter_map(|(f, t)| t.then_some(f))
            .collect();
        (files, Some(scenario_ids.into_iter().zip(takes).collect()))
    } else {
        (files, None)
    };
    let unreadable = if options.selection.first_shard() {
        unreadable
    } else {
        Vec::new()
    };
    let unreadable = unreadable
        .into_iter()
        .map(|(path, e)| FileResult {
            path,
            outcome: Err(vec![
                Diagnostic::at(1, 1, store::describe(&e)).hint(store::hint_for(&e, "harness run")),
            ]),
        })
        .collect();
    Plan {
        files,
        unreadable,
        owner,
        conflicts,
    }
}

/// Told how many files a run takes, then of each one done, then that the run is over (before
/// the reporters finish): a progress bar on a terminal. Nothing it does reaches the results.
pub trait Progress: Sync {
    /// The run takes `files` files.
    fn start(&self, files: u64);
    /// One more file is done.
    fn file_done(&self);
    /// The run is over; the reporters print next.
    fn finish(&self);
}

/// Run everything `options` names, reporting each file's results, then orphaned goldens.
pub fn run(options: &Options, reporter: &mut dyn Reporter) -> io::Result<()> {
    run_with(options, reporter, None)
}

/// [`run`], telling `progress` how it goes.
#[expect(
    clippy::disallowed_methods,
    reason = "the runner owns the worker threads (an edge: run)"
)]
pub fn run_with(
    options: &Options,
    reporter: &mut dyn Reporter,
    progress: Option<&dyn Progress>,
) -> io::Result<()> {
    std::thread::scope(|scope| {
        // The goldens folders are walked beside the rest of the run, for the orphans at its end.
        let goldens = scope.spawn(|| golden_files(options));
        run_planned(options, reporter, progress, || {
            goldens
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    })
}

/// [`run_with`], the goldens under the folders being run given by `goldens` at the end.
fn run_planned(
    options: &Options,
    reporter: &mut dyn Reporter,
    progress: Option<&dyn Progress>,
    goldens: impl FnOnce() -> Goldens,
) -> io::Result<()> {
    let Plan {
        files,
        unreadable,
        owner,
        conflicts,
    } = plan(options);
    if let Some(p) = progress {
        p.start(files.len() as u64);
    }
    for r in &unreadable {
        reporter.unreadable(r)?;
    }
    let pool = pool::build(options.jobs)?;
    let mut ids = CaseIds::default();
    let mut not_run = 0;
    // After Ctrl-C no file starts; those in flight finish.
    pool::for_each_ordered(
        &pool,
        WINDOW,
        &files,
        |f| {
            let r = (!interrupt::requested()).then(|| match conflicts.get(&f) {
                Some(why) => (Some(refused_file(&f, why)), Vec::new()),
                None => run_file(options, &f),
            });
            if let Some(p) = progress {
                p.file_done();
            }
            r
        },
        |result| {
            let Some((r, case_ids)) = result else {
                not_run += 1;
                return Ok(());
            };
            // Cases the filters left out still own their goldens.
            for id in &case_ids {
                ids.insert(id);
            }
            match r {
                Some(r) => reporter.file(&r),
                None => Ok(()),
            }
        },
    )?;
    if let Some(p) = progress {
        p.finish();
    }
    let goldens = goldens();
    if interrupt::requested() {
        // Goldens of files not run would look orphaned: none are reported.
        reporter.interrupted(not_run, interrupt::name())?;
        return reporter.finish();
    }
    let orphans = orphans(options, &goldens, &ids).into_iter().filter(|g| {
        owner
            .as_ref()
            .is_none_or(|owner| options.selection.owns_golden(&golden_id(options, g), owner))
    });
    for orphan in orphans {
        reporter.orphan(&orphan)?;
    }
    reporter.finish()
}

/// The case ids a run has seen, for the orphaned goldens: each kept as a 128-bit hash of the
/// id (two SipHash-1-3 sums of differently framed input), 16 bytes a case however long its id.
/// A golden is taken for a case's only when both sums agree, which for two different ids
/// happens with odds of about 2^-128 a pair: for every golden of a million cases compared with
/// a million ids, about 10^-27.
#[derive(Default)]
struct CaseIds(HashSet<u128>);

impl CaseIds {
    fn key(id: &str) -> u128 {
        use std::hash::{DefaultHasher, Hasher as _};
        let (mut a, mut b) = (DefaultHasher::new(), DefaultHasher::new());
        a.write(id.as_bytes());
        a.write_u8(0xff);
        b.write_u8(0xfe);
        b.write(id.as_bytes());
        (u128::from(a.finish()) << 64) | u128::from(b.finish())
    }

    fn insert(&mut self, id: &str) {
        self.0.insert(Self::key(id));
    }

    fn contains(&self, id: &str) -> bool {
        self.0.contains(&Self::key(id))
    }
}

/// Golden files found under the folders being run: kept compact, and apart those whose names
/// are not UTF-8 (which a [`PathList`] does not hold).
#[derive(Default)]
struct Goldens {
    listed: PathList,
    odd: Vec<PathBuf>,
}

impl Goldens {
    fn iter(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.listed.iter().chain(self.odd.iter().cloned())
    }
}

/// The goldens under the goldens folders that mirror the folders being run.
fn golden_files(options: &Options) -> Goldens {
    let mut goldens = Goldens::default();
    for p in &options.paths {
        if !p.is_dir() {
            continue;
        }
        let Some(mirror) = options.layout.mirror(p) else {
            continue;
        };
        for golden in store::walk_files_with_ext(&mirror, store::GOLDEN_EXT) {
            let ours = golden.strip_prefix(&options.layout.snapshots).is_ok();
            if ours && !goldens.listed.push(&golden) {
                goldens.odd.push(golden);
            }
        }
    }
    goldens
}

/// Of `goldens` ([`golden_files`]), those whose case no longer exists.
fn orphans(options: &Options, goldens: &Goldens, ids: &CaseIds) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = goldens
        .iter()
        .filter(|golden| {
            let id = golden_id(options, golden);
            !ids.contains(&id) && !exec_golden(&id, ids) && !agent_golden(options, &id)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Is this the golden of a `harness exec` run (`<scenario id>@<label>`, the label not a
/// profile) of a scenario that still exists? Such goldens belong to `exec`, not to `run`.
fn exec_golden(id: &str, ids: &CaseIds) -> bool {
    id.rsplit_once('@').is_some_and(|(scenario, label)| {
        let label = label.split('.').next().unwrap_or(label);
        ids.contains(scenario) && !crate::policy::Config::is_profile(label)
    })
}

/// Is this the golden of a `harness exec` replay (`<cassette id>@<label>`) of an agent's
/// cassette that is still there, outside the folders being run (a cassette's id outside the
/// scenarios root is its path as given)?
fn agent_golden(options: &Options, id: &str) -> bool {
    id.rsplit_once('@').is_some_and(|(cassette, label)| {
        let label = label.split('.').next().unwrap_or(label);
        let file = format!("{cassette}.json");
        !crate::policy::Config::is_profile(label)
            && crate::record::is_cassette(Path::new(&file))
            && [options.layout.scenarios.join(&file), PathBuf::from(&file)]
                .iter()
                .any(|p| p.is_file())
    })
}

/// The case id of a golden file.
fn golden_id(options: &Options, golden: &Path) -> String {
    let rel = golden
        .strip_prefix(&options.layout.snapshots)
        .unwrap_or(golden);
    let id = rel.to_string_lossy().replace('\\', "/");
    id.strip_suffix(".snap").unwrap_or(&id).to_owned()
}

/// A file refused before it is read (its id collides with another's), at its first line.
fn refused_file(path: &Path, why: &str) -> FileResult {
    FileResult {
        path: path.to_owned(),
        outcome: Err(vec![Diagnostic::at(1, 1, why.to_owned()).hint(
            "rename one of the files (ids are paths below the scenarios root, without extension)",
        )]),
    }
}

/// The format of a scenario file, by its extension.
pub fn format_of(path: &Path) -> SourceFormat {
    if path.extension().is_some_and(|e| e == "json") {
        SourceFormat::Json
    } else {
        SourceFormat::Toml
    }
}

/// Run one file: its result (none when the filters leave no case) and the ids of all its
/// cases, filtered out or not.
fn run_file(options: &Options, path: &Path) -> (Option<FileResult>, Vec<String>) {
    match run_selected(options, path) {
        Ok((r, ids)) => (
            Some(r).filter(|r| r.outcome.as_ref().is_ok_and(|c| !c.is_empty())),
            ids,
        ),
        Err(r) => (Some(r), Vec::new()),
    }
}

/// A scenario file read and expanded: its text and format (to locate problems found while
/// replaying), the cases the selection keeps, in run order, and the ids of all its cases.
struct Loaded {
    text: String,
    format: SourceFormat,
    cases: Vec<Case>,
    all_ids: Vec<String>,
}

/// The cases of one file (scenario or cassette) a run with `options` takes, in run order, and
/// the ids of all its cases, kept or not; a file that cannot load is its result. `harness
/// list` shows exactly these, so it and `harness run` agree on every path.
pub fn selected_cases(
    options: &Options,
    path: &Path,
) -> Result<(Vec<Case>, Vec<String>), FileResult> {
    if crate::record::is_cassette(path) {
        let id = options.layout.id_of(path);
        let case = match crate::record::cassette_case(&options.layout, path) {
            Ok(case) => case,
            Err(d) if leaves_to_exec(options, path, &d) => return Ok((Vec::new(), vec![id])),
            Err(d) => {
                return Err(FileResult {
                    path: path.to_owned(),
                    outcome: Err(vec![d.for_file(path)]),
                });
            }
        };
        let all_ids = vec![case.id.clone()];
        let cases = if options.selection.keeps(&case, &id) {
            vec![case]
        } else {
            Vec::new()
        };
        return Ok((cases, all_ids));
    }
    load_scenario(options, path).map(|l| (l.cases, l.all_ids))
}

/// Read, validate and expand a scenario file, adding the `--profile` cases and keeping those
/// the selection takes.
fn load_scenario(options: &Options, path: &Path) -> Result<Loaded, FileResult> {
    let bad = |message: String, hint: &str| FileResult {
        path: path.to_owned(),
        outcome: Err(vec![Diagnostic::at(1, 1, message).hint(hint)]),
    };
    let bytes = match store::read_input(path, "scenario", crate::limits::MAX_SCENARIO_BYTES) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => {
            return Err(bad(
                e.to_string(),
                "split it into several scenarios; no scripted run needs this much text",
            ));
        }
        Err(e) => {
            return Err(bad(
                format!("cannot read: {e}"),
                "check the file's permissions",
            ));
        }
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let valid = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
            let (line, col) = crate::scenario::line_col(valid, at);
            return Err(FileResult {
                path: path.to_owned(),
                outcome: Err(vec![
                    Diagnostic::at(line, col, "the file is not valid UTF-8")
                        .hint("save the scenario as UTF-8"),
                ]),
            });
        }
    };
    let format = format_of(path);
    let id = options.layout.id_of(path);
    let mut cases = match scenario::load(&text, format, &id) {
        Ok(c) => c,
        Err(diags) => {
            return Err(FileResult {
                path: path.to_owned(),
                outcome: Err(diags),
            });
        }
    };
    for profile in &options.also_profiles {
        if cases.iter().any(|c| &c.profile == profile) {
            continue;
        }
        if let Some(extra) = cases.first().and_then(|c| scenario::ad_hoc(c, profile)) {
            cases.push(extra);
        }
    }
    let all_ids = cases.iter().map(|c| c.id.clone()).collect();
    cases.retain(|c| options.selection.keeps(c, &id));
    Ok(Loaded {
        text,
        format,
        cases,
        all_ids,
    })
}

thread_local! {
    /// The room a worker reads a file's goldens into, kept from one file to the next.
    static GOLDEN_ROOM: std::cell::RefCell<Room> = std::cell::RefCell::default();
}

/// The most room a worker keeps for its next file: room that a file's goldens grew past it is
/// dropped after that file, so one large file does not hold memory for the rest of the run.
const KEEP_ROOM: usize = 1 << 20;

/// A case's golden as read: its bytes, not yet checked as UTF-8 (`None` when there is none),
/// or why it could not be read.
type GoldenRead<'a> = Result<Option<&'a [u8]>, &'a io::Error>;

/// Run one file's selected cases; a file that cannot run is the error.
fn run_selected(options: &Options, path: &Path) -> Result<(FileResult, Vec<String>), FileResult> {
    if crate::record::is_cassette(path) {
        return cassette_file(options, path);
    }
    let mut room = GOLDEN_ROOM.take();
    room.clear();
    let out = run_scenario(options, path, &mut room);
    if room.size() <= KEEP_ROOM {
        GOLDEN_ROOM.set(room);
    }
    out
}

/// [`run_selected`] for a scenario file, its goldens read into `room`.
fn run_scenario(
    options: &Options,
    path: &Path,
    room: &mut Room,
) -> Result<(FileResult, Vec<String>), FileResult> {
    let Loaded {
        text,
        format,
        cases,
        all_ids,
    } = load_scenario(options, path)?;
    // A golden or pending golden that is a link or a special file is refused before anything
    // runs: never read, never written through, its contents never shown. The others are read
    // here, once, whatever `--repeat` asks.
    let mut goldens = Vec::with_capacity(cases.len());
    for case in &cases {
        if !case.gated || !options.goldens {
            goldens.push(None);
            continue;
        }
        match read_golden(options, &case.id, room) {
            Ok(golden) => goldens.push(Some(golden)),
            Err(e) => return Err(FileResult {
                path: path.to_owned(),
                outcome: Err(vec![
                    Diagnostic::at(case.line, 1, e.to_string()).hint(
                        "put back the regular file harness wrote (`git checkout` it), or delete it and run again",
                    ),
                ]),
            }),
        }
    }
    // Replay every case before writing anything, so a file that turns out incomplete leaves
    // no pending golden or trace behind.
    let mut replays = Vec::with_capacity(cases.len());
    for case in &cases {
        match replay_partial(case) {
            (events, None) => replays.push(events),
            // An ad-hoc profile may take the script where it was never meant to go: that run
            // is reported as incomplete, and the scenario itself is not at fault.
            (events, Some(_)) if !case.gated => replays.push(events),
            (_, Some(gap)) => {
                let (at, hint) = match &gap {
                    ScriptGap::Model(_) => (
                        vec![Seg::Key("model".to_owned())],
                        "add turns, or a rule with `when = {}` that answers every remaining call",
                    ),
                    ScriptGap::Approval { index, .. } => (
                        vec![
                            Seg::Key("approvals".to_owned()),
                            Seg::Index(index.saturating_sub(1)),
                        ],
                        "name the tool the run pauses for, or drop `tool` from the decision",
                    ),
                    ScriptGap::Limit(e) => (vec![Seg::Key("model".to_owned())], e.hint()),
                    ScriptGap::Tool(u) => {
                        let mut at = vec![Seg::Key("tools".to_owned())];
                        at.extend(
                            case.scenario
                                .tools
                                .iter()
                                .position(|t| t.name == u.tool)
                                .map(Seg::Index),
                        );
                        (
                            at,
                            "add an outcome that matches these arguments, or a `default` outcome",
                        )
                    }
                };
                let message = format!("case `{}` (profile {}): {gap}", case.id, case.profile);
                return Err(FileResult {
                    path: path.to_owned(),
                    outcome: Err(vec![scenario::diagnose_at(
                        &text,
                        format,
                        at,
                        message,
                        Some(hint.to_owned()),
                    )]),
                });
            }
        }
    }
    let results = cases
        .iter()
        .zip(replays)
        .zip(&goldens)
        .map(|((case, events), golden)| {
            let golden = golden.as_ref().map(|read| match read {
                Ok(at) => Ok(at.clone().map(|at| room.bytes(at))),
                Err(e) => Err(e),
            });
            let first = judge_read(options, case, &events, golden);
            let mut r = crate::results::repeat::fold(first, options.repeat, || {
                judge_read(options, case, &replay_partial(case).0, golden)
            });
            r.line = case.line;
            r
        })
        .collect();
    Ok((
        FileResult {
            path: path.to_owned(),
            outcome: Ok(results),
        },
        all_ids,
    ))
}

/// Is this an agent's cassette found in a folder the run walks? `exec` replays those; the run
/// leaves them alone (one named on the command line is refused, with the command that
/// replays it).
fn leaves_to_exec(options: &Options, path: &Path, d: &Diagnostic) -> bool {
    d.cause == crate::diagnostic::Cause::AgentCassette && !options.paths.iter().any(|p| p == path)
}

/// Replay a cassette strictly and judge it like a scenario case (when the selection keeps
/// it); a request that drifted from the recording fails the case with its explanation.
fn cassette_file(options: &Options, path: &Path) -> Result<(FileResult, Vec<String>), FileResult> {
    let id = options.layout.id_of(path);
    let r = match crate::record::replay(&options.layout, path, &options.matching) {
        Ok(r) => r,
        // Its id is kept, so the goldens `exec` writes for it are not orphans.
        Err(d) if leaves_to_exec(options, path, &d) => {
            let nothing = FileResult {
                path: path.to_owned(),
                outcome: Ok(Vec::new()),
            };
            return Ok((nothing, vec![id]));
        }
        Err(d) => {
            return Err(FileResult {
                path: path.to_owned(),
                outcome: Err(vec![d.for_file(path)]),
            });
        }
    };
    let all_ids = vec![r.case.id.clone()];
    let mut results = Vec::new();
    if options.selection.keeps(&r.case, &id) {
        // A run stopped by a drifted request leaves no pending golden behind, and when what
        // ran agrees with the golden only the drift is reported.
        let quiet = Options {
            write_pending: options.write_pending && r.failures.is_empty(),
            ..options.clone()
        };
        let mut result = judge(&quiet, &r.case, &r.events);
        if r.drift_within_golden {
            result.golden = Comparison::Match;
        }
        result.row.expectations_passed &= r.failures.is_empty();
        result.expectation_failures.extend(r.failures);
        results.push(result);
    }
    Ok((
        FileResult {
            path: path.to_owned(),
            outcome: Ok(results),
        },
        all_ids,
    ))
}

/// Replay one case and render its golden text.
pub fn replay(case: &Case) -> Result<Vec<TimedEvent>, ScriptGap> {
    match replay_partial(case) {
        (events, None) => Ok(events),
        (_, Some(gap)) => Err(gap),
    }
}

/// Replay one case; on a script gap, the events up to it and the gap.
fn replay_partial(case: &Case) -> (Vec<TimedEvent>, Option<ScriptGap>) {
    engine::run_case(
        case,
        &mut MockModel::new(&case.scenario.model).for_case(&case.id),
    )
}

/// Compare a replayed case with its golden, check its expectations, write pending files.
pub fn judge(options: &Options, case: &Case, events: &[TimedEvent]) -> CaseResult {
    let golden = (case.gated && options.goldens).then(|| options.layout.read_golden(&case.id));
    let golden = golden
        .as_ref()
        .map(|read| read.as_ref().map(|g| g.as_deref().map(str::as_bytes)));
    judge_read(options, case, events, golden)
}

/// [`judge`] with the case's golden already read (`None` for an ungated case).
fn judge_read(
    options: &Options,
    case: &Case,
    events: &[TimedEvent],
    golden: Option<GoldenRead<'_>>,
) -> CaseResult {
    let mut row = metrics::row(
        &case.id,
        &case.scenario.family,
        &case.profile,
        case.prices(),
        events,
    );
    let expectation_failures = crate::expect::check(&case.expect, events, &row);
    row.expectations_passed = expectation_failures.is_empty();

    let mut io_errors = Vec::new();
    // Ad-hoc cases have no golden: nothing to compare, nothing pending to write.
    let (golden, pending_written) = match golden {
        Some(read) => compare_golden(options, case, events, read, &mut io_errors),
        None => (Comparison::Ungated, false),
    };
    if let Some(dir) = &options.traces {
        let path = dir.join(format!("{}.jsonl", case.id));
        if let Err(e) =
            store::write_inside(dir, &path, "trace", trace::render_jsonl(events).as_bytes())
        {
            io_errors.push(format!("cannot write {}: {e}", path.display()));
        }
    }
    let mut r = CaseResult {
        id: case.id.clone(),
        row,
        golden,
        pending_written,
        expectation_failures,
        io_errors,
        line: 1,
        runs: 1,
        passes: 0,
        detail: options.keep_traces.then(|| {
            Box::new(crate::results::Detail {
                tags: case.scenario.tags.clone(),
                system: case.scenario.system.clone(),
                user: case.scenario.user.clone(),
                events: events.to_vec(),
            })
        }),
        card: case.scenario.suite.as_ref().map(|suite| {
            crate::results::card::classify(
                suite,
                case.scenario.portable_tools(),
                events,
                crate::results::card::End::Engine,
            )
        }),
    };
    r.passes = u32::from(r.passed());
    r
}

/// Where a case's pending golden goes, and the folder it must stay inside.
fn pending_path<'a>(options: &'a Options, case_id: &str) -> (PathBuf, &'a Path) {
    match &options.pending_dir {
        Some(dir) => (store::case_file(dir, case_id, store::PENDING_EXT), dir),
        None => (options.layout.pending(case_id), &options.layout.snapshots),
    }
}

/// Read a case's golden into `room`, refusing (the outer error) a golden or pending golden
/// that is a link or a special file (or lies below a linked folder); the inner result is the
/// reading: where its bytes are in `room`.
fn read_golden(
    options: &Options,
    case_id: &str,
    room: &mut Room,
) -> io::Result<io::Result<Option<std::ops::Range<usize>>>> {
    let golden = options.layout.read_golden_into(case_id, room)?;
    if options.write_pending {
        let (pending, root) = pending_path(options, case_id);
        store::guard::check_inside(root, &pending, "pending golden")?;
    }
    Ok(golden)
}

/// Compare the case's golden text with its golden file and write (or clear) its pending
/// golden; whether a pending golden was written.
fn compare_golden(
    options: &Options,
    case: &Case,
    events: &[TimedEvent],
    read: GoldenRead<'_>,
    io_errors: &mut Vec<String>,
) -> (Comparison, bool) {
    // Volatile text the project keeps out of goldens (`[replay] redact`); most projects
    // have none, and the text is kept as rendered.
    let rendered = trace::render_golden(&case.id, events);
    let golden_text = match options.matching.redact(&rendered) {
        std::borrow::Cow::Owned(redacted) => redacted,
        std::borrow::Cow::Borrowed(_) => rendered,
    };
    let mut unreadable = |e: &dyn std::fmt::Display| {
        io_errors.push(format!("cannot read the golden: {e}"));
        snapshot::compare(None, &golden_text)
    };
    // Bytes equal to the text are valid UTF-8 as they are; others are checked to be shown.
    let golden = match read {
        Ok(Some(g)) if g == golden_text.as_bytes() => Comparison::Match,
        Ok(Some(g)) => match std::str::from_utf8(g) {
            Ok(g) => snapshot::compare(Some(g), &golden_text),
            Err(_) => unreadable(&store::guard::not_utf8(
                &options.layout.golden(&case.id),
                "golden",
            )),
        },
        Ok(None) => snapshot::compare(None, &golden_text),
        Err(e) => unreadable(e),
    };
    let mut pending_written = false;
    if options.write_pending {
        let (pending, root) = pending_path(options, &case.id);
        let res = if golden == Comparison::Match {
            store::remove_optional(&pending)
        } else {
            store::write_inside(root, &pending, "pending golden", golden_text.as_bytes())
                .map(|()| pending_written = true)
        };
        if let Err(e) = res {
            io_errors.push(format!("cannot write {}: {e}", pending.display()));
        }
    }
    (golden, pending_written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_ids_are_told_apart_exactly() {
        let mut ids = CaseIds::default();
        for id in ["a/b", "a/b@moltis", "c"] {
            ids.insert(id);
        }
        for id in ["a/b", "a/b@moltis", "c"] {
            assert!(ids.contains(id), "{id}");
        }
        for id in [
            "a",
            "a/b@",
            "a/b@moltis ",
            "b",
            "",
            "c@none",
            "a/b@ironclaw",
        ] {
            assert!(!ids.contains(id), "{id}");
        }
        // `exec` goldens of a scenario that still exists are not orphans; others are.
        assert!(exec_golden("a/b@cassette", &ids));
        assert!(!exec_golden("a/b@ironclaw", &ids));
        assert!(!exec_golden("gone@cassette", &ids));
    }
}
