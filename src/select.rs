//! Which scenarios and cases a run takes: `--filter` (id glob, `family:`, `tag:`, `profile:`)
//! and `--partition count:M/N | hash:M/N` over the sorted scenario ids. Pure: callers hand in
//! ids and cases.

use crate::diagnostic::Diagnostic;
use crate::scenario::Case;
use globset::{Glob, GlobMatcher};
use std::collections::HashMap;
use std::hash::Hasher as _;

/// The kinds a `--filter` may name (`KIND:GLOB`); a filter without one is an id glob.
pub const FILTER_KINDS: &[&str] = &["id", "family", "tag", "profile"];

/// What to run: filters and a shard. The default runs everything.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// The filters as given, for messages.
    filters: Vec<String>,
    ids: Vec<GlobMatcher>,
    families: Vec<GlobMatcher>,
    tags: Vec<GlobMatcher>,
    profiles: Vec<GlobMatcher>,
    partition: Option<Partition>,
}

/// One shard of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// `count` (every N-th of the sorted ids) or `hash` (a stable hash of the id).
    pub by_hash: bool,
    /// This shard, 1-based.
    pub m: u32,
    /// Shards in all.
    pub n: u32,
}

impl Partition {
    /// Parse `count:M/N` or `hash:M/N`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let hint = "write `count:M/N` or `hash:M/N` with 1 <= M <= N, e.g. `count:1/3`";
        let (kind, rest) = text
            .split_once(':')
            .ok_or_else(|| format!("invalid partition `{text}`; {hint}"))?;
        let by_hash = match kind {
            "count" => false,
            "hash" => true,
            _ => return Err(format!("unknown partition kind `{kind}`; {hint}")),
        };
        let (m, n) = rest
            .split_once('/')
            .and_then(|(m, n)| Some((m.parse::<u32>().ok()?, n.parse::<u32>().ok()?)))
            .filter(|&(m, n)| m >= 1 && m <= n)
            .ok_or_else(|| format!("invalid partition `{text}`; {hint}"))?;
        Ok(Self { by_hash, m, n })
    }

    /// For each id (in any order), whether this shard takes it. `count` deals the sorted ids
    /// out in turn; `hash` uses FNV-1a, the same on every machine and run.
    pub fn takes(&self, ids: &[String]) -> Vec<bool> {
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by(|&a, &b| ids[a].cmp(&ids[b]));
        let mut out = vec![false; ids.len()];
        for (rank, &i) in order.iter().enumerate() {
            let slot = if self.by_hash {
                let mut h = fnv::FnvHasher::default();
                h.write(ids[i].as_bytes());
                h.finish() % u64::from(self.n)
            } else {
                rank as u64 % u64::from(self.n)
            };
            out[i] = slot == u64::from(self.m - 1);
        }
        out
    }
}

impl Selection {
    /// Build from `--filter` values and an optional `--partition`. Filters of one kind are
    /// alternatives; kinds combine (`--filter family:reflex --filter profile:none` runs the
    /// reflex family's `none` cases).
    pub fn new(filters: &[String], partition: Option<&str>) -> Result<Self, Diagnostic> {
        let mut s = Self {
            partition: partition
                .map(Partition::parse)
                .transpose()
                .map_err(Diagnostic::new)?,
            filters: filters.to_vec(),
            ..Self::default()
        };
        for f in filters {
            let (list, pattern) = match f.split_once(':') {
                Some(("family", p)) => (&mut s.families, p),
                Some(("tag", p)) => (&mut s.tags, p),
                Some(("profile", p)) => (&mut s.profiles, p),
                Some(("id", p)) => (&mut s.ids, p),
                // Ids are paths without colons, so `famly:reflex` is a misspelt kind, never
                // an id glob that would silently match nothing.
                Some((kind, _)) => {
                    let hint = crate::scenario::suggest(kind, FILTER_KINDS, || {
                        format!("filter kinds: {}", FILTER_KINDS.join(", "))
                    });
                    return Err(
                        Diagnostic::new(format!("unknown filter kind `{kind}` in `{f}`"))
                            .hint(format!("{hint} (an id glob has no `:`, e.g. `reflex/*`)")),
                    );
                }
                None => (&mut s.ids, f.as_str()),
            };
            let glob = Glob::new(pattern).map_err(|e| {
                Diagnostic::new(format!(
                    "invalid filter `{f}`: {e}; write an id glob (`reflex/*`), `family:NAME`, \
                     `tag:NAME` or `profile:NAME`"
                ))
            })?;
            list.push(glob.compile_matcher());
        }
        Ok(s)
    }

    /// What narrows the selection, for a message: `--filter tag:x --partition count:1/3`, or
    /// empty when everything is selected.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .filters
            .iter()
            .map(|f| format!("--filter {f}"))
            .collect();
        if let Some(p) = self.partition {
            let kind = if p.by_hash { "hash" } else { "count" };
            parts.push(format!("--partition {kind}:{}/{}", p.m, p.n));
        }
        parts.join(" ")
    }

    /// The partition, if any.
    pub fn partition(&self) -> Option<Partition> {
        self.partition
    }

    /// Is this the first (or only) shard? It reports what belongs to no scenario file:
    /// unreadable paths and goldens of scenarios that are gone.
    pub fn first_shard(&self) -> bool {
        self.partition.is_none_or(|p| p.m == 1)
    }

    /// Does `--partition` split the run into shards?
    pub fn partitioned(&self) -> bool {
        self.partition.is_some()
    }

    /// For each scenario id, whether this shard runs it.
    pub fn shard(&self, ids: &[String]) -> Vec<bool> {
        match &self.partition {
            Some(p) => p.takes(ids),
            None => vec![true; ids.len()],
        }
    }

    /// Does the case pass the filters? `scenario_id` is its file's id (the glob matches it
    /// or the case id).
    pub fn keeps(&self, case: &Case, scenario_id: &str) -> bool {
        fn any<'a>(list: &[GlobMatcher], mut values: impl Iterator<Item = &'a str>) -> bool {
            list.is_empty() || values.any(|v| list.iter().any(|g| g.is_match(v)))
        }
        any(&self.ids, [case.id.as_str(), scenario_id].into_iter())
            && any(
                &self.families,
                std::iter::once(case.scenario.family.as_str()),
            )
            && any(&self.tags, case.scenario.tags.iter().map(String::as_str))
            && any(&self.profiles, std::iter::once(case.profile.as_str()))
    }

    /// Does this shard report the golden of `case_id` when it has no case? `owner` maps every
    /// discovered scenario id to whether this shard runs it; a golden whose scenario was not
    /// discovered belongs to the first shard.
    pub fn owns_golden(&self, case_id: &str, owner: &HashMap<String, bool>) -> bool {
        let scenario = if owner.contains_key(case_id) {
            case_id
        } else {
            case_id.rsplit_once('@').map_or(case_id, |(s, _)| s)
        };
        owner
            .get(scenario)
            .copied()
            .unwrap_or_else(|| self.first_shard())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("fam{}/s{i:03}", i % 4)).collect()
    }

    #[test]
    fn shards_cover_every_id_exactly_once() {
        let ids = ids(50);
        for kind in ["count", "hash"] {
            let mut seen = vec![0u32; ids.len()];
            for m in 1..=3 {
                let p = Partition::parse(&format!("{kind}:{m}/3")).unwrap();
                for (i, t) in p.takes(&ids).into_iter().enumerate() {
                    seen[i] += u32::from(t);
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "{kind}: {seen:?}");
        }
        // `count` deals sorted ids in turn: shard sizes differ by at most one.
        let sizes: Vec<usize> = (1..=3)
            .map(|m| {
                Partition::parse(&format!("count:{m}/3"))
                    .unwrap()
                    .takes(&ids)
                    .into_iter()
                    .filter(|t| *t)
                    .count()
            })
            .collect();
        assert_eq!(sizes, [17, 17, 16]);
    }

    #[test]
    fn hash_partition_is_stable_and_independent_of_order() {
        let p = Partition::parse("hash:2/4").unwrap();
        let ids = ids(20);
        let mut reversed = ids.clone();
        reversed.reverse();
        let mut a = p.takes(&ids);
        let mut b = p.takes(&reversed);
        b.reverse();
        assert_eq!(a, b);
        // FNV-1a of a fixed id is a fixed number: the shard does not depend on the process.
        let mut h = fnv::FnvHasher::default();
        h.write(b"reflex/exec-empty-args");
        assert_eq!(h.finish(), 0xabad_1b8b_ea8c_086d, "FNV-1a");
        a.retain(|t| *t);
        assert!(!a.is_empty());
    }

    #[test]
    fn bad_partitions_and_filters_are_explained() {
        for bad in [
            "count",
            "count:0/3",
            "count:4/3",
            "hash:1/0",
            "mod:1/2",
            "count:a/b",
        ] {
            let e = Partition::parse(bad).unwrap_err();
            assert!(e.contains("count:M/N"), "{bad}: {e}");
        }
        let e = Selection::new(&["family:[".to_owned()], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid filter `family:[`"), "{e}");
        // A misspelt kind is an error, not an id glob that matches nothing.
        let e = Selection::new(&["famly:reflex".to_owned()], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown filter kind `famly`"), "{e}");
        assert!(e.contains("did you mean `family`?"), "{e}");
        let e = Selection::new(&["colour:red".to_owned()], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("filter kinds: id, family, tag, profile"), "{e}");
        let s = Selection::new(
            &["tag:x".to_owned(), "reflex/*".to_owned()],
            Some("hash:2/3"),
        );
        assert_eq!(
            s.unwrap().describe(),
            "--filter tag:x --filter reflex/* --partition hash:2/3"
        );
    }
}
