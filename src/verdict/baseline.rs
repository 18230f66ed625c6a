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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// Format version (1).
    pub version: u32,
    /// How much each metric may grow before it is a regression.
    #[serde(default)]
    pub tolerance: Tolerance,
    /// Each case's metrics, by case id.
    #[serde(default)]
    pub cases: BTreeMap<String, Metrics>,
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
    let b: Baseline = toml::from_str(text).map_err(|e| {
        let (line, col) = e
            .span()
            .map_or((1, 1), |s| crate::scenario::line_col(text, s.start));
        parse_error(line, col, e.message(), false)
    })?;
    let at = |path: &[&str], message: String, cause: Cause| {
        let path = path.iter().map(|k| Seg::Key((*k).to_owned())).collect();
        crate::scenario::diagnose_at(text, SourceFormat::Toml, path, message, None).cause(cause)
    };
    if b.version != VERSION {
        return Err(at(
            &["version"],
            format!(
                "baseline version {} is not supported (this harness writes version {VERSION})",
                b.version
            ),
            Cause::Version,
        ));
    }
    for (name, allowance) in b.tolerance.entries() {
        if let Some(e) = allowance.and_then(|a| a.amount(1.0).err()) {
            return Err(at(&["tolerance", name], e, Cause::WrongValue));
        }
    }
    for (id, m) in &b.cases {
        if !(m.cost_usd.is_finite() && m.cost_usd >= 0.0) {
            return Err(at(
                &["cases", id, "cost_usd"],
                format!(
                    "the cost {} of `{id}` is not a number of dollars (nothing compares greater than it, so no regression would show)",
                    m.cost_usd
                ),
                Cause::Figure,
            ));
        }
    }
    Ok(b)
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
    for (id, metrics) in &b.cases {
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
    for r in rows {
        b.cases.insert(r.scenario.clone(), Metrics::of(r));
    }
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
        b.cases.insert(hostile.to_owned(), metrics);
        b.cases.insert("plain-id".to_owned(), metrics);
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
