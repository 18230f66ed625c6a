//! [`PathList`]: many paths kept small. Scenario paths in sorted order share most of their
//! bytes with the path before them (`…/scenarios/g079/s039998.toml`,
//! `…/scenarios/g079/s039999.toml`), so each is kept as the length of that shared prefix and
//! the rest: about a dozen bytes a path where a `PathBuf` costs a hundred with its allocation.
//! A run keeps the list of every file it takes for its whole length; this keeps that list from
//! being most of what a large run holds.

use std::path::{Path, PathBuf};

/// Paths (valid UTF-8, as [`super::discover`] only takes such) in the order pushed, read back
/// in that order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathList {
    /// Each path: the shared prefix's length and the rest's, as LEB128 numbers, then the rest.
    data: Vec<u8>,
    /// The last path pushed.
    last: String,
    len: usize,
}

impl PathList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `path`, which must be valid UTF-8; `false` (and nothing added) when it is not.
    pub fn push(&mut self, path: &Path) -> bool {
        let Some(text) = path.to_str() else {
            return false;
        };
        let mut shared = text
            .bytes()
            .zip(self.last.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        while !text.is_char_boundary(shared) {
            shared -= 1;
        }
        let rest = &text[shared..];
        push_number(&mut self.data, shared);
        push_number(&mut self.data, rest.len());
        self.data.extend_from_slice(rest.as_bytes());
        self.last.truncate(shared);
        self.last.push_str(rest);
        self.len += 1;
        true
    }

    /// The last path pushed.
    pub fn last(&self) -> Option<&Path> {
        (self.len > 0).then(|| Path::new(self.last.as_str()))
    }

    /// How many paths.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No paths?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The paths, in the order pushed.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            data: &self.data,
            at: 0,
            path: String::new(),
        }
    }

    /// Bytes the list holds (its buffers' capacities).
    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.data.capacity() + self.last.capacity()
    }
}

/// A path that is not UTF-8 is left out ([`super::discover`] never gives one).
impl<P: AsRef<Path>> FromIterator<P> for PathList {
    fn from_iter<I: IntoIterator<Item = P>>(iter: I) -> Self {
        let mut list = Self::new();
        for p in iter {
            list.push(p.as_ref());
        }
        list
    }
}

impl<'a> IntoIterator for &'a PathList {
    type Item = PathBuf;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The paths of a [`PathList`], each a new `PathBuf`.
pub struct Iter<'a> {
    data: &'a [u8],
    at: usize,
    path: String,
}

impl Iterator for Iter<'_> {
    type Item = PathBuf;

    fn next(&mut self) -> Option<PathBuf> {
        if self.at >= self.data.len() {
            return None;
        }
        let shared = read_number(self.data, &mut self.at);
        let len = read_number(self.data, &mut self.at);
        let rest = self.data.get(self.at..self.at + len)?;
        self.at += len;
        self.path.truncate(shared);
        // Written from a `&str` cut at a char boundary by `push`.
        self.path.push_str(std::str::from_utf8(rest).ok()?);
        Some(PathBuf::from(&self.path))
    }
}

fn push_number(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let low = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

fn read_number(data: &[u8], at: &mut usize) -> usize {
    let mut n = 0usize;
    let mut shift = 0;
    while let Some(&b) = data.get(*at) {
        *at += 1;
        n |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_come_back_as_pushed_and_take_little_room() {
        let paths: Vec<PathBuf> = (0..2000)
            .map(|i| {
                PathBuf::from(format!(
                    "/tmp/corpus/scenarios/g{:03}/s{i:06}.toml",
                    i / 500
                ))
            })
            .chain(["b/é.toml", "b/éa.toml", "b/è.toml", "a", "", "a/ü/x.json"].map(PathBuf::from))
            .collect();
        let list: PathList = paths.iter().collect();
        assert_eq!(list.len(), paths.len());
        assert_eq!(list.iter().collect::<Vec<_>>(), paths);
        assert_eq!(list.last(), Some(Path::new("a/ü/x.json")));
        // A prefix is never cut inside a character: `é` and `è` share their first byte.
        let accents: PathList = ["é", "è"].iter().collect();
        assert_eq!(
            accents.iter().collect::<Vec<_>>(),
            ["é", "è"].map(PathBuf::from)
        );
        // Sorted scenario paths: a dozen bytes each, not the 40 of the path.
        assert!(list.heap_bytes() < 2000 * 16, "{} bytes", list.heap_bytes());
        assert!(PathList::new().is_empty() && PathList::new().iter().next().is_none());
    }

    #[test]
    fn long_paths_need_several_length_bytes() {
        let long = PathBuf::from("x".repeat(70_000));
        let list: PathList = [long.clone(), long.join("y")].iter().collect();
        assert_eq!(
            list.iter().collect::<Vec<_>>(),
            vec![long.clone(), long.join("y")]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_path_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt as _;
        let mut list = PathList::new();
        assert!(!list.push(Path::new(std::ffi::OsStr::from_bytes(b"a\xffb"))));
        assert!(list.is_empty());
    }
}
