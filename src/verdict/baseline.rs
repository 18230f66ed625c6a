//! Metric baselines (`--baseline FILE`, `harness bless`): a committed TOML file with each
//! case's key metrics and per-metric tolerances. A run whose goldens all match can still get
//! worse — a detector that fires one turn later wastes an iteration without changing any text
//! the golden does not already show differently — and the check catches that: a metric above
//! its baseline plus tolerance is a regression (exit code 3), one below is an improvement,
//! reported and not failed. Pure: callers read and write the file.

use crate::diagnostic::{Cause, Diagnostic, parse_error};
use crate::metrics::Row;
use crate::scenario::{Seg, SourceFormat};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Version of the baseline file.
pub const VERSION: u32 = 1;

/// The baseline file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Baseline {
    /// Format version (1).
    pub version: u32,
    /// How much each metric may grow before it is a regression.
    pub tolerance: Tolerance,
    /// Each case's metrics, by case id.
    pub cases: Cases,
}

/// Each case's metrics by case id, kept compact and sorted by id: a baseline of 40,000 cases
/// holds about 100 bytes a case, where a map of `String`s holds nearly twice that.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cases(Vec<(Box<str>, Metrics)>);

impl Cases {
    /// The metrics of a case.
    pub fn get(&self, id: &str) -> Option<&Metrics> {
        self.0
            .binary_search_by(|(k, _)| k.as_ref().cmp(id))
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// The cases, sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Metrics)> {
        self.0.iter().map(|(k, m)| (k.as_ref(), m))
    }

    /// How many cases.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No cases?
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Forget every case.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Set these cases' metrics (a later one of the same id wins), keeping the others.
    pub fn set_all(&mut self, cases: impl IntoIterator<Item = (String, Metrics)>) {
        let new: BTreeMap<String, Metrics> = cases.into_iter().collect();
        if new.is_empty() {
            return;
        }
        let old = std::mem::take(&mut self.0);
        let mut merged = Vec::with_capacity(old.len() + new.len());
        let mut new = new.into_iter().peekable();
        for (id, m) in old {
            while let Some((n, nm)) = new.next_if(|(n, _)| n.as_str() < id.as_ref()) {
                merged.push((n.into_boxed_str(), nm));
            }
            match new.next_if(|(n, _)| n.as_str() == id.as_ref()) {
                Some((n, nm)) => merged.push((n.into_boxed_str(), nm)),
                None => merged.push((id, m)),
            }
        }
        merged.extend(new.map(|(n, m)| (n.into_boxed_str(), m)));
        self.0 = merged;
    }

    /// Add a case read from a file, where they usually come sorted; `false` (and nothing
    /// added) when the id is there already.
    fn add(&mut self, id: String, m: Metrics) -> bool {
        match self.0.last() {
            Some((last, _)) if last.as_ref() >= id.as_str() => {
                match self.0.binary_search_by(|(k, _)| k.as_ref().cmp(&id)) {
                    Ok(_) => false,
                    Err(at) => {
                        self.0.insert(at, (id.into_boxed_str(), m));
                        true
                    }
                }
            }
            _ => {
                self.0.push((id.into_boxed_str(), m));
                true
            }
        }
    }
}

/// One part of a baseline file: the text before its first table header, or a table header and
/// what follows it up to the next one. Each part is parsed on its own, so reading a file never
/// holds more than one part's document tree (the whole file's tree is about 27 times its size).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Part {
    version: Option<u32>,
    tolerance: Option<Tolerance>,
    #[serde(default)]
    cases: BTreeMap<String, Metrics>,
}

/// Tells, line by line, which lines of a TOML text open a table (`[…]` or `[[…]]`) outside
/// any string, comment, array or inline table: where the parts of a baseline file begin.
#[derive(Debug, Default)]
struct Splitter {
    /// Open brackets and braces of values (and of the header being read).
    depth: usize,
    /// The string being read: its quote, and whether it is a multi-line one.
    string: Option<(u8, bool)>,
}

impl Splitter {
    /// Read the next line (with its line break, if any); does it open a table?
    fn opens_table(&mut self, line: &str) -> bool {
        let b = line.as_bytes();
        let mut opens = false;
        let mut line_start = true;
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if let Some((q, multi)) = self.string {
                if c == b'\\' && q == b'"' {
                    i += 2;
                    continue;
                }
                if c == q && (!multi || b[i..].starts_with(&[q, q, q])) {
                    self.string = None;
                    i += if multi { 3 } else { 1 };
                    // Up to two more quotes end a multi-line string's text.
                    while multi && b.get(i) == Some(&q) {
                        i += 1;
                    }
                } else {
                    i += 1;
                }
                line_start = false;
                continue;
            }
            match c {
                b' ' | b'\t' | b'\r' | b'\n' => {
                    i += 1;
                    continue;
                }
                b'#' => break,
                b'"' | b'\'' => {
                    let multi = b[i..].starts_with(&[c, c, c]);
                    self.string = Some((c, multi));
                    i += if multi { 3 } else { 1 };
                }
                b'[' => {
                    opens |= line_start && self.depth == 0;
                    self.depth += 1;
                    i += 1;
                }
                b'{' => {
                    self.depth += 1;
                    i += 1;
                }
                b']' | b'}' => {
                    self.depth = self.depth.saturating_sub(1);
                    i += 1;
                }
                _ => i += 1,
            }
            line_start = false;
        }
        opens
    }
}

/// A case's metrics as the baseline keeps them. Higher is worse for each.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// Iterations run.
    pub iterations: u32,
    /// Wasted iterations.
    pub wasted_iterations: u32,
    /// Iteration of the first intervention (absent: none; later, or none at all, is worse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_intervention_iteration: Option<u32>,
    /// Input + output tokens.
    pub tokens: u64,
    /// Cost in US dollars, six decimals.
    pub cost_usd: f64,
    /// Virtual milliseconds.
    pub virtual_ms: u64,
}

impl Metrics {
    /// The metrics of a run.
    pub fn of(row: &Row) -> Self {
        Self {
            iterations: row.iterations,
            wasted_iterations: row.wasted_iterations,
            first_intervention_iteration: row.first_intervention_iteration,
            tokens: row.input_tokens + row.output_tokens,
            cost_usd: (row.cost_usd * 1e6).round() / 1e6,
            virtual_ms: row.virtual_ms,
        }
    }
}

impl Metrics {
    /// A metric's figure (higher is worse; no intervention is later than any) and its text.
    fn figure(&self, metric: &str) -> (f64, String) {
        match metric {
            "wasted_iterations" => (
                f64::from(self.wasted_iterations),
                self.wasted_iterations.to_string(),
            ),
            "first_intervention_iteration" => self.first_intervention_iteration.map_or_else(
                || (f64::INFINITY, "never".to_owned()),
                |n| (f64::from(n), n.to_string()),
            ),
            "iterations" => (f64::from(self.iterations), self.iterations.to_string()),
            "tokens" => (self.tokens as f64, self.tokens.to_string()),
            "cost_usd" => (self.cost_usd, format!("${:.6}", self.cost_usd)),
            _ => (self.virtual_ms as f64, self.virtual_ms.to_string()),
        }
    }
}

/// Allowed growth per metric: an absolute amount (`tokens = 50`) or a share of the baseline
/// (`tokens = "5%"`). Absent: no growth allowed (cost: rounding only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iterations: Option<Allowance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wasted_iterations: Option<Allowance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first_intervention_iteration: Option<Allowance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens: Option<Allowance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cost_usd: Option<Allowance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    virtual_ms: Option<Allowance>,
}

/// An allowed growth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Allowance {
    /// A whole number in the metric's unit.
    Count(u64),
    /// An amount in the metric's unit.
    Absolute(f64),
    /// `"5%"` of the baseline figure.
    Percent(String),
}

impl Tolerance {
    /// Each metric's allowance, by name.
    fn entries(&self) -> [(&'static str, Option<&Allowance>); 6] {
        [
            ("iterations", self.iterations.as_ref()),
            ("wasted_iterations", self.wasted_iterations.as_ref()),
            (
                "first_intervention_iteration",
                self.first_intervention_iteration.as_ref(),
            ),
            ("tokens", self.tokens.as_ref()),
            ("cost_usd", self.cost_usd.as_ref()),
            ("virtual_ms", self.virtual_ms.as_ref()),
        ]
    }
}

impl Allowance {
    fn amount(&self, old: f64) -> Result<f64, String> {
        match self {
            Self::Count(n) => Ok(*n as f64),
            Self::Absolute(a) if a.is_finite() && *a >= 0.0 => Ok(*a),
            Self::Percent(p) => p
                .strip_suffix('%')
                .and_then(|n| n.trim().parse::<f64>().ok())
                .filter(|n| n.is_finite() && *n >= 0.0)
                .map(|n| old * n / 100.0)
                .ok_or_else(|| {
                    format!("tolerance `{p}`: write a number or a percentage like \"5%\"")
                }),
            Self::Absolute(a) if a.is_finite() => {
                Err(format!("tolerance {a}: must not be negative"))
            }
            Self::Absolute(a) => Err(format!(
                "tolerance {a}: must be a finite number (an unbounded tolerance would let every regression through)"
            )),
        }
    }

    fn show(&self) -> String {
        match self {
            Self::Count(n) => format!("+{n}"),
            Self::Absolute(a) => format!("+{a}"),
            Self::Percent(p) => format!("+{p}"),
        }
    }
}

/// One metric of one case that moved.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Case id.
    pub case: String,
    /// Metric name.
    pub metric: &'static str,
    /// Baseline figure, as shown.
    pub old: String,
    /// This run's figure, as shown.
    pub new: String,
    /// The tolerance that applied.
    pub allowed: String,
}

/// The outcome of checking a run against a baseline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Metrics above baseline plus tolerance.
    pub regressions: Vec<Change>,
    /// Metrics below the baseline.
    pub improvements: Vec<Change>,
    /// Cases compared.
    pub compared: usize,
    /// Cases the baseline does not know.
    pub new_cases: Vec<String>,
}

/// Parse a baseline file; an error is located in it, with its cause.
pub fn parse(text: &str) -> Result<Baseline, Diagnostic> {
    let mut r = Reader::default();
    for line in text.split_inclusive('\n') {
        r.line(line)?;
    }
    r.finish()
}

/// Reads a baseline file line by line ([`parse`] reads a whole text with it; a caller reading
/// a file can hand it the lines as it reads them). Each part of the file — the text before its
/// first table header, then each header and what follows it up to the next — is parsed on its
/// own as it ends, so reading never holds more than one part and what the parts hold: not the
/// file, not a document tree of it (the whole file's tree is about 27 times its size).
#[derive(Debug, Default)]
pub struct Reader {
    splitter: Splitter,
    /// The part being read, and the lines above it.
    part: String,
    above: usize,
    /// Lines read.
    lines: usize,
    baseline: Baseline,
    version: Option<u32>,
    tolerance: bool,
}

impl Reader {
    /// Read the next line of the file, with its line break (the last line may have none).
    pub fn line(&mut self, line: &str) -> Result<(), Diagnostic> {
        if self.splitter.opens_table(line) && !self.part.is_empty() {
            self.end_part()?;
            self.above = self.lines;
        }
        self.part.push_str(line);
        self.lines += 1;
        Ok(())
    }

    /// The file has been read: the baseline.
    pub fn finish(mut self) -> Result<Baseline, Diagnostic> {
        self.end_part()?;
        match self.version {
            Some(v) => self.baseline.version = v,
            None => return Err(parse_error(1, 1, "missing field `version`", false)),
        }
        Ok(self.baseline)
    }

    /// Parse the part read and take what it holds.
    fn end_part(&mut self) -> Result<(), Diagnostic> {
        let text = std::mem::take(&mut self.part);
        let above = self.above;
        let at = |path: &[&str], message: String, cause: Cause| {
            let path = path.iter().map(|k| Seg::Key((*k).to_owned())).collect();
            let d = crate::scenario::diagnose_at(&text, SourceFormat::Toml, path, message, None);
            below(d, above).cause(cause)
        };
        let part: Part = toml::from_str(&text).map_err(|e| {
            let (line, col) = e
                .span()
                .map_or((1, 1), |s| crate::scenario::line_col(&text, s.start));
            parse_error(line + above, col, e.message(), false)
        })?;
        if let Some(v) = part.version {
            if self.version.is_some() {
                return Err(at(&["version"], duplicate("version"), Cause::DuplicateKey));
            }
            if v != VERSION {
                return Err(at(
                    &["version"],
                    format!(
                        "baseline version {v} is not supported (this harness writes version {VERSION})"
                    ),
                    Cause::Version,
                ));
            }
            self.version = Some(v);
        }
        if let Some(t) = part.tolerance {
            if self.tolerance {
                return Err(at(
                    &["tolerance"],
                    duplicate("tolerance"),
                    Cause::DuplicateKey,
                ));
            }
            for (name, allowance) in t.entries() {
                if let Some(e) = allowance.and_then(|a| a.amount(1.0).err()) {
                    return Err(at(&["tolerance", name], e, Cause::WrongValue));
                }
            }
            self.baseline.tolerance = t;
            self.tolerance = true;
        }
        for (id, m) in part.cases {
            if !(m.cost_usd.is_finite() && m.cost_usd >= 0.0) {
                return Err(at(
                    &["cases", &id, "cost_usd"],
                    format!(
                        "the cost {} of `{id}` is not a number of dollars (nothing compares greater than it, so no regression would show)",
                        m.cost_usd
                    ),
                    Cause::Figure,
                ));
            }
            if !self.baseline.cases.add(id.clone(), m) {
                return Err(at(&["cases", &id], duplicate(&id), Cause::DuplicateKey));
            }
        }
        // The buffer is kept for the next part.
        self.part = text;
        self.part.clear();
        Ok(())
    }
}

/// A key defined twice, as the TOML parser says it.
fn duplicate(key: &str) -> String {
    format!("duplicate key `{key}`")
}

/// `d`, found in a part of a file that starts `above` lines down, placed in the whole file.
fn below(d: Diagnostic, above: usize) -> Diagnostic {
    let (line, col) = (d.line() + above, d.col());
    Diagnostic::at(line, col, d.message).maybe_hint(d.hint)
}

/// The baseline file's text: a header, tolerances, then the cases sorted by id, each under a
/// key no shell reads as a command ([`inert_key`]).
pub fn render(b: &Baseline) -> String {
    let mut out = String::from(
        "# harness metric baseline: each case's metrics as `harness run --baseline` compares them.\n\
         # `harness bless` rewrites the cases and keeps [tolerance] (allowed growth per metric:\n\
         # a number in the metric's unit, or a percentage string such as \"5%\").\n",
    );
    let _ = write!(
        out,
        "version = {}\n\n[tolerance]\n{}",
        b.version,
        toml::to_string(&b.tolerance).unwrap_or_default()
    );
    for (id, metrics) in b.cases.iter() {
        let _ = write!(
            out,
            "\n[cases.{}]\n{}",
            inert_key(id),
            toml::to_string(metrics).unwrap_or_default()
        );
    }
    out
}

/// A case id as a TOML key that no shell sourcing the file could run: bare when it is only
/// ASCII letters, digits, `_` and `-`; otherwise a basic string in which `"`, `\`, `$`, `` ` ``,
/// controls and every non-ASCII character are `\u` escapes (a case id comes from a file name,
/// and `x$(cmd).toml` is one).
fn inert_key(id: &str) -> String {
    if !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return id.to_owned();
    }
    let mut out = String::from("\"");
    for c in id.chars() {
        if c == ' ' || (c.is_ascii_graphic() && !matches!(c, '"' | '\\' | '$' | '`')) {
            out.push(c);
        } else if u32::from(c) <= 0xFFFF {
            let _ = write!(out, "\\u{:04X}", u32::from(c));
        } else {
            let _ = write!(out, "\\U{:08X}", u32::from(c));
        }
    }
    out.push('"');
    out
}

/// Replace the metrics of `rows` in `b` (all of them when `full`: cases not run are dropped).
pub fn bless<'a>(b: &mut Baseline, rows: impl IntoIterator<Item = &'a Row>, full: bool) {
    b.version = VERSION;
    if full {
        b.cases.clear();
    }
    b.cases.set_all(
        rows.into_iter()
            .map(|r| (r.scenario.clone(), Metrics::of(r))),
    );
}

/// Compare a run's rows with the baseline.
pub fn check<'a>(b: &Baseline, rows: impl IntoIterator<Item = &'a Row>) -> Result<Verdict, String> {
    let t = &b.tolerance;
    let mut v = Verdict::default();
    for r in rows {
        let Some(old) = b.cases.get(&r.scenario) else {
            v.new_cases.push(r.scenario.clone());
            continue;
        };
        v.compared += 1;
        let new = Metrics::of(r);
        for (metric, allowance, epsilon) in [
            ("wasted_iterations", &t.wasted_iterations, 0.0),
            (
                "first_intervention_iteration",
                &t.first_intervention_iteration,
                0.0,
            ),
            ("iterations", &t.iterations, 0.0),
            ("tokens", &t.tokens, 0.0),
            ("cost_usd", &t.cost_usd, 5e-7),
            ("virtual_ms", &t.virtual_ms, 0.0),
        ] {
            let (o, os) = old.figure(metric);
            let (n, ns) = new.figure(metric);
            let allowed = match allowance {
                Some(a) if o.is_finite() => a.amount(o)?,
                _ => 0.0,
            };
            let change = || Change {
                case: r.scenario.clone(),
                metric,
                old: os.clone(),
                new: ns.clone(),
                allowed: allowance
                    .as_ref()
                    .map_or_else(|| "+0".to_owned(), Allowance::show),
            };
            if n > o + allowed + epsilon {
                v.regressions.push(change());
            } else if n + epsilon < o {
                v.improvements.push(change());
            }
        }
    }
    Ok(v)
}

impl Verdict {
    /// Add what `later` found (the check of later results) to this verdict.
    pub fn absorb(&mut self, later: Verdict) {
        self.regressions.extend(later.regressions);
        self.improvements.extend(later.improvements);
        self.compared += later.compared;
        self.new_cases.extend(later.new_cases);
    }

    /// The check as the HTML report shows it, against the baseline named `file`.
    pub fn for_html(&self, file: &str) -> crate::report::html::BaselineCheck {
        let moved = |list: &[Change]| {
            list.iter()
                .map(|c| crate::report::html::Moved {
                    case: c.case.clone(),
                    metric: c.metric.to_owned(),
                    old: c.old.clone(),
                    new: c.new.clone(),
                    allowed: c.allowed.clone(),
                })
                .collect()
        };
        crate::report::html::BaselineCheck {
            file: file.to_owned(),
            compared: self.compared,
            new_cases: self.new_cases.len(),
            regressions: moved(&self.regressions),
            improvements: moved(&self.improvements),
        }
    }

    /// The terminal report: each regression and improvement, then a verdict line.
    pub fn render(&self, file: &str) -> String {
        let mut out = String::new();
        for c in &self.regressions {
            let _ = writeln!(
                out,
                "REGRESSION {}: {} {} \u{2192} {} (allowed {})",
                c.case, c.metric, c.old, c.new, c.allowed
            );
        }
        for c in &self.improvements {
            let _ = writeln!(
                out,
                "improved   {}: {} {} \u{2192} {}",
                c.case, c.metric, c.old, c.new
            );
        }
        let cases: std::collections::BTreeSet<&str> =
            self.regressions.iter().map(|c| c.case.as_str()).collect();
        let _ = writeln!(
            out,
            "harness baseline: {}. {} cases compared with {file}: {} regressions in {} cases, {} improvements, {} cases without a baseline{}",
            if self.regressions.is_empty() {
                "ok"
            } else {
                "FAILED"
            },
            self.compared,
            self.regressions.len(),
            cases.len(),
            self.improvements.len(),
            self.new_cases.len(),
            if self.regressions.is_empty()
                && self.improvements.is_empty()
                && self.new_cases.is_empty()
            {
                ""
            } else {
                "; `harness bless` records this run's metrics as the new baseline"
            }
        );
        out
    }

    /// The job-summary section.
    pub fn markdown(&self, file: &str) -> String {
        let mut md = format!(
            "### Metric baseline ({file})\n\n{} cases compared: {} regressions, {} improvements, {} cases without a baseline\n\n",
            self.compared,
            self.regressions.len(),
            self.improvements.len(),
            self.new_cases.len()
        );
        if !self.regressions.is_empty() || !self.improvements.is_empty() {
            md.push_str(
                "| case | metric | baseline | now | verdict |\n| --- | --- | ---: | ---: | --- |\n",
            );
            for (c, what) in self
                .regressions
                .iter()
                .map(|c| (c, "regression"))
                .chain(self.improvements.iter().map(|c| (c, "improved")))
            {
                let _ = writeln!(
                    md,
                    "| `{}` | {} | {} | {} | {what} |",
                    c.case, c.metric, c.old, c.new
                );
            }
            md.push('\n');
        }
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Prices;

    fn row(id: &str, iterations: u32, wasted: u32, first: Option<u32>, tokens: u64) -> Row {
        let mut r = crate::metrics::row(id, "f", "moltis", Prices::default(), &[]);
        r.iterations = iterations;
        r.wasted_iterations = wasted;
        r.first_intervention_iteration = first;
        r.input_tokens = tokens;
        r
    }

    #[test]
    fn a_detector_firing_later_is_a_regression_and_fewer_tokens_an_improvement() {
        let mut b = Baseline::default();
        bless(
            &mut b,
            &[row("a", 4, 2, Some(3), 900), row("b", 5, 0, None, 100)],
            true,
        );
        let text = render(&b);
        assert_eq!(parse(&text).unwrap(), b, "{text}");

        let now = [
            row("a", 5, 3, Some(4), 850),
            row("b", 5, 0, None, 100),
            row("c", 1, 0, None, 1),
        ];
        let v = check(&b, &now).unwrap();
        let names: Vec<(&str, &str, &str, &str)> = v
            .regressions
            .iter()
            .map(|c| (c.case.as_str(), c.metric, c.old.as_str(), c.new.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("a", "wasted_iterations", "2", "3"),
                ("a", "first_intervention_iteration", "3", "4"),
                ("a", "iterations", "4", "5"),
            ]
        );
        assert_eq!(v.improvements.len(), 1);
        assert_eq!(v.improvements[0].metric, "tokens");
        assert_eq!(
            (v.compared, v.new_cases.as_slice()),
            (2, &["c".to_owned()][..])
        );
        assert!(
            v.render("base.toml")
                .contains("REGRESSION a: first_intervention_iteration 3 \u{2192} 4 (allowed +0)")
        );

        // A defence that stops firing at all is later than any iteration.
        let v = check(&b, &[row("a", 4, 2, None, 900)]).unwrap();
        assert_eq!(v.regressions[0].new, "never");
    }

    #[test]
    fn the_committed_baseline_renders_as_it_reads() {
        let text = include_str!("../../baselines/scenarios.toml");
        assert_eq!(render(&parse(text).expect("the committed baseline")), text);
    }

    #[test]
    fn a_case_id_no_shell_can_run_round_trips() {
        let mut b = Baseline {
            version: VERSION,
            ..Baseline::default()
        };
        let hostile = "x$(touch PWNED)`id`\"\\é\u{202e}😀/y";
        let metrics = Metrics {
            iterations: 1,
            wasted_iterations: 0,
            first_intervention_iteration: None,
            tokens: 2,
            cost_usd: 0.0,
            virtual_ms: 3,
        };
        b.cases.set_all([
            (hostile.to_owned(), metrics),
            ("plain-id".to_owned(), metrics),
        ]);
        let text = render(&b);
        let keys: Vec<&str> = text.lines().filter(|l| l.starts_with("[cases.")).collect();
        assert_eq!(keys.len(), 2, "{text}");
        for raw in ["$", "`", "\u{202e}", "é", "😀"] {
            assert!(!keys[1].contains(raw), "{raw:?} written raw: {}", keys[1]);
        }
        assert!(text.contains("[cases.plain-id]"), "{text}");
        assert_eq!(parse(&text).expect("it reads back"), b);
    }

    #[test]
    fn read_part_by_part_it_reads_as_one_document() {
        /// The whole file in one document, as TOML reads it.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Whole {
            version: u32,
            #[serde(default)]
            tolerance: Tolerance,
            #[serde(default)]
            cases: BTreeMap<String, Metrics>,
        }
        let m =
            "iterations = 1\nwasted_iterations = 0\ntokens = 2\ncost_usd = 0.5\nvirtual_ms = 3\n";
        let texts = [
            include_str!("../../baselines/scenarios.toml").to_owned(),
            // Headers inside strings, arrays and comments are not headers; cases out of order,
            // inline, in a `[cases]` table, and under quoted keys with brackets in them.
            format!(
                "# [cases.x]\nversion = 1 # [c]\n[tolerance]\ntokens = \"\"\"5%\"\"\"\n[cases.\"b]\\\"[\"]\n{m}[cases.a]\n{m}[cases]\nc = {{ iterations = 1, wasted_iterations = 0, tokens = 2, cost_usd = 0.0, virtual_ms = 3 }}\n"
            ),
            format!(
                "version = 1\ncases.z = {{ iterations = 1, wasted_iterations = 0, tokens = 2, cost_usd = 0.0, virtual_ms = 3 }}\n\n  [cases.'[y]']\r\n{m}"
            ),
        ];
        for text in &texts {
            let whole: Whole = toml::from_str(text).expect(text);
            let b = parse(text).expect(text);
            assert_eq!(b.version, whole.version);
            assert_eq!(b.tolerance, whole.tolerance);
            let ids: Vec<(&str, &Metrics)> =
                whole.cases.iter().map(|(k, v)| (k.as_str(), v)).collect();
            assert_eq!(b.cases.iter().collect::<Vec<_>>(), ids, "{text}");
            assert!(!b.cases.is_empty() && b.cases.len() == ids.len());
        }
        let mut splitter = Splitter::default();
        let opening: Vec<usize> = texts[1]
            .split_inclusive('\n')
            .enumerate()
            .filter(|(_, l)| splitter.opens_table(l))
            .map(|(i, _)| i + 1)
            .collect();
        assert_eq!(opening, [3, 5, 11, 17], "{}", texts[1]);
        // What one document refuses, the parts refuse, located.
        let located = |text: &str| {
            let e = parse(text).unwrap_err();
            (e.line(), e.col(), e.cause)
        };
        let twice = format!("version = 1\n[cases.a]\n{m}\n[cases.a]\n{m}");
        assert_eq!(located(&twice), (9, 8, Cause::DuplicateKey));
        assert_eq!(
            located("version = 1\n[tolerance]\n[tolerance]\n"),
            (3, 2, Cause::DuplicateKey)
        );
        let (_, _, cause) = located("[tolerance]\n");
        assert_eq!(cause, Cause::MissingKey);
        assert_eq!(
            located(&format!("version = 1\n\n[cases.a]\n{m}x = 1\n")).0,
            9
        );
    }

    #[test]
    fn cases_set_anew_keep_the_others_in_order() {
        let m = |n: u32| Metrics {
            iterations: n,
            wasted_iterations: 0,
            first_intervention_iteration: None,
            tokens: 0,
            cost_usd: 0.0,
            virtual_ms: 0,
        };
        let mut c = Cases::default();
        c.set_all([("b".to_owned(), m(1)), ("d".to_owned(), m(1))]);
        c.set_all([
            ("e".to_owned(), m(2)),
            ("a".to_owned(), m(2)),
            ("b".to_owned(), m(2)),
            ("c".to_owned(), m(2)),
        ]);
        let got: Vec<(&str, u32)> = c.iter().map(|(k, v)| (k, v.iterations)).collect();
        assert_eq!(got, [("a", 2), ("b", 2), ("c", 2), ("d", 1), ("e", 2)]);
        assert_eq!(c.get("d").map(|m| m.iterations), Some(1));
        assert!(c.get("bb").is_none());
        assert!(c.add("0".to_owned(), m(3)) && !c.add("c".to_owned(), m(3)));
        assert_eq!(c.iter().next().map(|(k, _)| k), Some("0"));
    }

    #[test]
    fn tolerances_absorb_growth_and_bad_ones_are_located() {
        let text = "version = 1\n[tolerance]\ntokens = \"10%\"\niterations = 1\n[cases.a]\niterations = 4\nwasted_iterations = 2\ntokens = 900\ncost_usd = 0.0\nvirtual_ms = 1\n";
        let b = parse(text).unwrap();
        let ok = check(&b, &[row("a", 5, 2, None, 990)]).unwrap();
        assert!(ok.regressions.is_empty(), "{ok:?}");
        let bad = check(&b, &[row("a", 6, 2, None, 991)]).unwrap();
        let metrics: Vec<&str> = bad.regressions.iter().map(|c| c.metric).collect();
        assert_eq!(metrics, ["iterations", "tokens"]);

        let located = |text: &str| {
            let e = parse(text).unwrap_err();
            (e.line(), e.col(), e.message, e.cause)
        };
        let (line, col, message, cause) = located("version = 1\n[tolerance]\nspeed = 3\n");
        assert_eq!((line, col, cause), (3, 1, Cause::UnknownKey), "{message}");
        assert!(message.starts_with("unknown field `speed`"), "{message}");
        let (line, col, message, cause) = located("# a comment\nversion = 2\n");
        assert_eq!((line, col, cause), (2, 1, Cause::Version), "{message}");
        assert!(message.starts_with("baseline version 2 is not supported"));
        let (line, col, message, cause) = located("version = 1\n[tolerance]\ntokens = \"lots\"\n");
        assert_eq!((line, col, cause), (3, 1, Cause::WrongValue), "{message}");
        assert!(message.starts_with("tolerance `lots`: write a number"));
    }
}
