//! `harness scorecard`'s reading of a results file: no card is taken as written. Each card is
//! read against its suite case — the scenario file the results name, or the bundled suite's
//! case of that name when the file is not there — and against its own saved trace:
//!
//! - its title, kind, answer, premise and portable tools are the case's;
//! - its verdict is the one its trace gives ([`card::recheck`]), and so are its metrics
//!   (tokens, cost, wasted iterations: what the scorecard sums);
//! - a loop's name is the label its case ids carry;
//! - every suite case has a card of every loop, and every case of a suite scenario without a
//!   card is another conversation a card names (a side request, an earlier attempt).
//!
//! What disagrees is refused at the case's place in the file: a results file can be edited,
//! and a scorecard made from an edited one would be a wrong verdict told with confidence.

use crate::diagnostic::{Cause, Diagnostic};
use crate::report::Collected;
use crate::results::CaseResult;
use crate::results::card::{self, Verdict};
use crate::scenario::{Prices, Seg, SourceFormat, SuiteDef, SuiteKind};
use crate::store;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A suite case as its scenario defines it.
struct Defined {
    suite: SuiteDef,
    portable: u32,
    prices: Prices,
    family: String,
}

/// Read the suite case of the scenario file `path` (as a results file names it): the file
/// when it is there, else the bundled suite's case of its stem. `None` inside: the scenario
/// holds no suite case.
fn defined(path: &Path, bundled: &[(&str, &str)]) -> Result<Option<Defined>, String> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (text, format, from) = if path.is_file() {
        let text = store::read_input_text(path, "scenario", crate::limits::MAX_SCENARIO_BYTES)
            .map_err(|e| format!("its scenario {} cannot be read: {e}", path.display()))?;
        let format = if path.extension().is_some_and(|e| e == "json") {
            SourceFormat::Json
        } else {
            SourceFormat::Toml
        };
        (text, format, path.display().to_string())
    } else {
        match bundled.iter().find(|(s, _)| *s == stem) {
            Some((_, text)) => (
                (*text).to_owned(),
                SourceFormat::Toml,
                format!("the bundled suite's `{stem}`"),
            ),
            None => {
                return Err(format!(
                    "its scenario {} is not there (and the bundled suite has no `{stem}`), so its card cannot be read against its case",
                    path.display()
                ));
            }
        }
    };
    let cases = crate::scenario::load(&text, format, &stem).map_err(|problems| {
        format!(
            "its scenario ({from}) does not load: {}",
            problems
                .first()
                .map_or("it is not a scenario", |d| d.message.as_str())
        )
    })?;
    let Some(case) = cases.first() else {
        return Ok(None);
    };
    Ok(case.scenario.suite.clone().map(|suite| Defined {
        suite,
        portable: case.scenario.portable_tools(),
        prices: case.prices(),
        family: case.scenario.family.clone(),
    }))
}

/// Does case `id` carry the label `loop_` (`<scenario>@<loop>`, `….N` for a conversation
/// after the first)? An id without a label carries any (a run of one profile).
fn carries(id: &str, loop_: &str) -> bool {
    let Some((_, label)) = id.rsplit_once('@') else {
        return true;
    };
    label == loop_
        || label.strip_prefix(loop_).is_some_and(|rest| {
            rest.strip_prefix('.')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// Why this card does not hold against its case and trace, if it does not.
fn check_card(
    c: &CaseResult,
    entry: &card::Entry,
    def: &Defined,
    conversations: &BTreeSet<&str>,
) -> Option<String> {
    let suite = &def.suite;
    if entry.title != suite.title || entry.kind != suite.kind {
        let kind = |k: SuiteKind| match k {
            SuiteKind::Failure => "a failure mode",
            SuiteKind::Legitimate => "legitimate work",
        };
        return Some(format!(
            "its title and kind (`{}`, {}) are not its case's (`{}`, {})",
            entry.title,
            kind(entry.kind),
            suite.title,
            kind(suite.kind)
        ));
    }
    let Some(basis) = &entry.basis else {
        return Some("it keeps no basis to read its verdict from (written by an older harness: run the suite again)".to_owned());
    };
    if basis.answer != suite.answer
        || basis.premise != suite.premise
        || basis.portable != def.portable
    {
        return Some(
            "the answer, premise or portable tools it was read with are not its case's".to_owned(),
        );
    }
    if let Verdict::NotDriven(why) = &entry.verdict {
        if why.starts_with(card::ALL_SIDE) {
            // Read from the conversations (the card's own, and the others it names, which must
            // be there, each a side request); only an agent has them.
            let named: Vec<&str> = entry
                .others
                .iter()
                .filter_map(|o| o.split_once(": a side request: ").map(|(id, _)| id))
                .collect();
            let fits = basis.end != card::End::Engine
                && named.len() == entry.others.len()
                && named.iter().all(|id| conversations.contains(id));
            return (!fits).then(|| {
                "its verdict says every conversation was a side request, and its results do not show them".to_owned()
            });
        }
    }
    let events = c.detail.as_ref().map(|d| d.events.as_slice());
    if let Err(why) = card::recheck(entry, events) {
        return Some(why);
    }
    let events = events.unwrap_or_default();
    let mut again = crate::metrics::row(&c.id, &def.family, &c.row.profile, def.prices, events);
    again.expectations_passed = c.row.expectations_passed;
    if again != c.row {
        return Some(format!(
            "its metrics (tokens {}/{}, cost {}, wasted iterations {}) are not what its trace gives (tokens {}/{}, cost {}, wasted iterations {})",
            c.row.input_tokens,
            c.row.output_tokens,
            c.row.cost_usd,
            c.row.wasted_iterations,
            again.input_tokens,
            again.output_tokens,
            again.cost_usd,
            again.wasted_iterations
        ));
    }
    if !carries(&c.id, &c.row.profile) {
        return Some(format!(
            "its loop `{}` is not the label its id carries",
            c.row.profile
        ));
    }
    None
}

/// Read every card of a results file (`text`, read from `file`, as `collected`) against its
/// suite case and trace, and check that every suite case has a card of every loop unless
/// `incomplete` is allowed. `bundled` is the bundled suite (stem, text).
pub fn check(
    collected: &Collected,
    file: &Path,
    text: &str,
    bundled: &[(&str, &str)],
    incomplete: bool,
) -> Result<(), Diagnostic> {
    let at_case = |id: &str, message: String| located(text, file, id, message);
    let conversations: BTreeSet<&str> = collected.cases().map(|(_, c)| c.id.as_str()).collect();
    let named_others: BTreeSet<&str> = collected
        .cases()
        .filter_map(|(_, c)| c.card.as_ref())
        .flat_map(|e| &e.others)
        .filter_map(|o| o.split_once(": ").map(|(id, _)| id))
        .collect();
    // The suite's cases, by stem, and the loops' cards of each.
    let mut suite_stems: BTreeSet<String> = BTreeSet::new();
    let mut carded: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut folders: BTreeSet<&Path> = BTreeSet::new();
    for f in &collected.files {
        let Ok(cases) = &f.outcome else { continue };
        let Some(first) = cases.first() else { continue };
        let def = match defined(&f.path, bundled) {
            Ok(d) => d,
            Err(why) => return Err(at_case(&first.id, format!("case `{}`: {why}", first.id))),
        };
        folders.extend(f.path.parent());
        let Some(def) = def else {
            if let Some(c) = cases.iter().find(|c| c.card.is_some()) {
                return Err(at_case(
                    &c.id,
                    format!(
                        "case `{}` has a card, and its scenario {} has no `[suite]` table",
                        c.id,
                        f.path.display()
                    ),
                ));
            }
            continue;
        };
        if let Some(stem) = f.path.file_stem() {
            suite_stems.insert(stem.to_string_lossy().into_owned());
        }
        for c in cases {
            let Some(entry) = &c.card else {
                if named_others.contains(c.id.as_str()) {
                    continue;
                }
                return Err(at_case(
                    &c.id,
                    format!(
                        "case `{}` of a suite scenario has no card, and no card names it as another conversation",
                        c.id
                    ),
                ));
            };
            if let Some(why) = check_card(c, entry, &def, &conversations) {
                return Err(at_case(&c.id, format!("case `{}`: {why}", c.id)));
            }
            carded
                .entry(c.row.profile.as_str())
                .or_default()
                .insert(crate::report::card::row_key(&c.id));
        }
    }
    if incomplete {
        return Ok(());
    }
    // Every case of the suite: its folder's, when the results name one that is here, else the
    // bundled suite's.
    let expected: BTreeSet<String> = match folders.iter().next() {
        Some(dir) if folders.len() == 1 && dir.is_dir() => {
            let (files, _) = store::discover(&[dir.to_path_buf()]);
            files
                .iter()
                .filter(|p| defined(p, &[]).is_ok_and(|d| d.is_some()))
                .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
                .collect()
        }
        _ if suite_stems
            .iter()
            .all(|s| bundled.iter().any(|(b, _)| b == s)) =>
        {
            bundled.iter().map(|(s, _)| (*s).to_owned()).collect()
        }
        _ => suite_stems.clone(),
    };
    for (who, stems) in &carded {
        if let Some(missing) = expected.iter().find(|s| !stems.contains(s.as_str())) {
            return Err(Diagnostic::whole_file(format!(
                "the loop `{who}` has no card for the suite case `{missing}`: the file holds {} of the suite's {} cases",
                stems.len(),
                expected.len()
            ))
            .in_file(file)
            .cause(Cause::Inconsistent));
        }
    }
    Ok(())
}

/// `message` at case `id`'s place in the results `text` (its `card`, else its `id`), else at
/// the file.
fn located(text: &str, file: &Path, id: &str, message: String) -> Diagnostic {
    let place = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| {
            let files = v.get("files")?.as_array()?;
            files.iter().enumerate().find_map(|(i, f)| {
                let cases = f.get("cases")?.as_array()?;
                let j = cases
                    .iter()
                    .position(|c| c.get("id").and_then(|x| x.as_str()) == Some(id))?;
                let key = if cases[j].get("card").is_some() {
                    "card"
                } else {
                    "id"
                };
                Some(vec![
                    Seg::Key("files".to_owned()),
                    Seg::Index(i),
                    Seg::Key("cases".to_owned()),
                    Seg::Index(j),
                    Seg::Key(key.to_owned()),
                ])
            })
        });
    let d = match place {
        Some(path) => {
            crate::scenario::diagnose_at(text, SourceFormat::Json, path, message.clone(), None)
        }
        None => Diagnostic::whole_file(message),
    };
    d.in_file(file).cause(Cause::Inconsistent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_id_names_its_loop_and_its_scenario() {
        assert!(carries("suite/x@agent", "agent"));
        assert!(carries("suite/x@agent.2", "agent"));
        assert!(carries("suite/x@v1.5-mini", "v1.5-mini"));
        assert!(carries("suite/x", "ironclaw"));
        assert!(!carries("suite/x@other", "agent"));
        assert!(!carries("suite/x@agent.x", "agent"));
        let row_key = crate::report::card::row_key;
        assert_eq!(row_key("suite/deep/x@agent.2"), "x");
        assert_eq!(row_key("x"), "x");
    }
}
