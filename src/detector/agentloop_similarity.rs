//! `agentloop-similarity`: the book's `LoopDetector` (runtimes.md AgentLoop, chapter 63; the engine's
//! `policy/similarity.rs`, whose detector this reuses unchanged): `repeats` similar calls of one
//! tool, where two argument objects are similar when at least `similarity` of their keys hold
//! equal values.
//!
//! **Why.** Exact-match detectors miss near-duplicates — a changing nonce or timestamp in
//! otherwise identical arguments (§8 family 10); a fuzzy match catches them.
//!
//! **Semantics.** The streak lives on the last record of the same tool, so calls to other tools
//! in between do not break it; results are not looked at. At `repeats` the book stops and asks
//! the user (verdict stop; the notice one call earlier is not counted as firing).
//!
//! **Lifecycle.** One detector for the whole run (`reset=run`): the book's loop keeps its
//! detector across the conversation and clears it only after it fires.
//!
//! **Example.** `fetch({"url":"u","ts":1})`, `fetch({"url":"u","ts":2})`,
//! `fetch({"url":"u","ts":3})` with `similarity=0.5` fires at the third.
//!
//! **Known false positives.** Batch work over distinct targets whose arguments share most keys
//! (family 11: the same tool on 20 files with 4 of 5 keys equal); sporadic repeats of one tool
//! across a long session, since other tools do not break the streak (family 12).

use super::{Detector, Fire, Kind, Param, Params, Reset, Verdict, View};
use crate::policy::similarity::{Detection, SimilarityDetector};

/// The kind.
pub const KIND: Kind = Kind {
    id: "agentloop-similarity",
    summary: "similar calls of one tool (share of equal keys), the book's LoopDetector",
    params: &[
        Param {
            name: "repeats",
            default: "3",
            sweep: &["2", "3", "4", "5", "6"],
            help: "similar calls of one tool that fire it",
        },
        Param {
            name: "similarity",
            default: "0.8",
            sweep: &[],
            help: "share of argument keys that must be equal",
        },
    ],
    build,
    reset: Reset::run,
};

fn build(p: &Params) -> Result<Box<dyn Detector>, String> {
    let similarity = p.number("similarity")?;
    if !(0.0..=1.0).contains(&similarity) {
        return Err("`similarity` is a share between 0 and 1".to_owned());
    }
    Ok(Box::new(AgentloopSimilarity {
        repeats: p.count("repeats")?,
        similarity,
    }))
}

/// The detector.
#[derive(Debug, Clone)]
pub struct AgentloopSimilarity {
    repeats: u32,
    similarity: f64,
}

impl Detector for AgentloopSimilarity {
    fn first_fire(&self, view: &View) -> Option<Fire> {
        let mut det = SimilarityDetector::new(self.repeats, self.similarity);
        for (i, c) in view.calls.iter().enumerate() {
            let turn = u32::try_from(c.batch + 1).unwrap_or(u32::MAX);
            if let Detection::Loop { .. } = det.check(turn, &c.name, &c.args) {
                return Some(Fire::new(i, Verdict::Stop));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::testing::V;
    use serde_json::json;

    #[test]
    fn near_duplicates_fire() {
        let v = V::default()
            .call(
                "fetch",
                json!({"url": "u", "a": 1, "b": 2, "c": 3, "ts": 1}),
                false,
                "",
            )
            .call(
                "fetch",
                json!({"url": "u", "a": 1, "b": 2, "c": 3, "ts": 2}),
                false,
                "",
            )
            .call(
                "fetch",
                json!({"url": "u", "a": 1, "b": 2, "c": 3, "ts": 3}),
                false,
                "",
            )
            .0;
        let d = AgentloopSimilarity {
            repeats: 3,
            similarity: 0.8,
        };
        assert_eq!(d.first_fire(&v), Some(Fire::new(2, Verdict::Stop)));
    }

    #[test]
    fn other_tools_in_between_do_not_break_the_streak() {
        let v = V::default()
            .call("ls", json!({}), false, "")
            .call("cat", json!({"f": 1}), false, "")
            .call("ls", json!({}), false, "")
            .0;
        let d = AgentloopSimilarity {
            repeats: 2,
            similarity: 0.8,
        };
        assert_eq!(d.first_fire(&v), Some(Fire::new(2, Verdict::Stop)));
    }

    #[test]
    fn distinct_targets_do_not_fire() {
        let mut b = V::default();
        for f in ["a.rs", "b.rs", "c.rs", "d.rs"] {
            b = b.call("read", json!({"path": f}), false, "");
        }
        let d = AgentloopSimilarity {
            repeats: 2,
            similarity: 0.8,
        };
        assert_eq!(d.first_fire(&b.0), None);
    }
}
