//! The plain TOML that scenario files are written in, read in one pass and deserialised from a
//! light tree.
//!
//! The general TOML parser builds a spanned document of the whole file, every key and value with
//! its place, before anything is deserialised: that document was most of what reading a scenario
//! cost. This reader takes the subset scenario files use:
//! - tables and arrays of tables under headers, dotted only in the headers;
//! - bare and quoted keys;
//! - strings of all four kinds, with the escapes TOML 1.0 defines;
//! - decimal integers that fit an `i64`, finite floats, booleans;
//! - arrays, and inline tables on one line;
//! - comments, and line ends of `\n` or `\r\n`.
//!
//! At anything else it gives up (`None`): dotted keys, dates and times, other number forms,
//! TOML 1.1's additions, carriage returns inside strings, nesting or header paths past
//! [`MAX_DEPTH`], tables of more than [`MAX_ENTRIES`] entries, and every error, in the text or in
//! deserialising. The caller then reads the text with the general parser, which takes the rest
//! and words every error. So this reader never decides alone what a file means: where it
//! answers, the answer is the general parser's. It follows that parser's rules for defining
//! tables, and its deserialiser's visitor calls for each kind of value (a string the general
//! parser keeps borrowed may come owned here, which no owned type tells apart), with a table's
//! keys in sorted order. Tests hold the two to the same results on every bundled file
//! and on thousands of variations of them, and so does the fuzz target `scenario_plain`.

use serde::de::{self, DeserializeSeed, IntoDeserializer as _, Visitor};
use std::borrow::Cow;

/// Arrays and inline tables nested deeper than this, and table headers of more keys, are left
/// to the general parser (which has limits of its own, higher).
const MAX_DEPTH: usize = 32;

/// Tables of more entries are left to the general parser: a key is looked up by a scan of its
/// table, which stays cheap only while tables are small (a scenario's have a few dozen at
/// most).
const MAX_ENTRIES: usize = 256;

/// `text` deserialised as `T`, with the place (a byte offset) of each entry of its top-level
/// `compare` table; `None` when the text leaves the subset or does not deserialise.
pub(super) fn read<T: de::DeserializeOwned>(text: &str) -> Option<(T, Vec<(String, usize)>)> {
    let root = Reader {
        text,
        at: 0,
        depth: 0,
    }
    .document()?;
    let compare = match root.get("compare") {
        Some(Node {
            kind: Kind::Table(table),
            ..
        }) => table
            .entries
            .iter()
            .map(|(name, node)| (name.to_string(), node.at))
            .collect(),
        _ => Vec::new(),
    };
    let value = T::deserialize(Value(Node {
        at: 0,
        kind: Kind::Table(root),
    }))
    .ok()?;
    Some((value, compare))
}

/// A value and where it starts: a header's `[`, an implicitly created table's key, else the
/// value's first byte (the general parser's span starts).
struct Node<'a> {
    at: usize,
    kind: Kind<'a>,
}

enum Kind<'a> {
    Str(Cow<'a, str>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Array {
        items: Vec<Node<'a>>,
        /// Made by `[[…]]` headers (only those take more).
        tables: bool,
    },
    Table(Table<'a>),
}

/// A table's entries, in no order that matters (they are sorted when deserialised).
#[derive(Default)]
struct Table<'a> {
    entries: Vec<(Cow<'a, str>, Node<'a>)>,
    /// Created by a header's path, not yet defined by a header of its own.
    implicit: bool,
    /// Written `{ … }`: closed to headers.
    inline: bool,
}

impl<'a> Table<'a> {
    fn position(&self, key: &str) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k == key)
    }

    fn get(&self, key: &str) -> Option<&Node<'a>> {
        self.position(key).map(|i| &self.entries[i].1)
    }

    /// Adds an entry (its key not yet in the table): its index, or `None` past
    /// [`MAX_ENTRIES`].
    fn add(&mut self, key: Cow<'a, str>, node: Node<'a>) -> Option<usize> {
        if self.entries.len() >= MAX_ENTRIES {
            return None;
        }
        self.entries.push((key, node));
        Some(self.entries.len() - 1)
    }
}

/// A table header: the keys before the last, the last, where its `[` is, and whether it is
/// `[[…]]`.
struct Header<'a> {
    path: Vec<(Cow<'a, str>, usize)>,
    key: Cow<'a, str>,
    at: usize,
    array: bool,
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
}

/// A byte no TOML string or comment may hold as it is (tab aside; a line end is the caller's).
fn is_control(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn is_bare(b: u8) -> bool {
    BARE[usize::from(b)]
}

/// The bytes of a bare key (`A-Za-z0-9_-`), looked up: a key is read a byte at a time, and a
/// scenario has tens of thousands.
static BARE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
        b += 1;
    }
    table
};

impl<'a> Reader<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    fn peek_at(&self, n: usize) -> Option<u8> {
        self.bytes().get(self.at + n).copied()
    }

    fn triple(&self, quote: u8) -> bool {
        self.peek_at(1) == Some(quote) && self.peek_at(2) == Some(quote)
    }

    /// How many bytes from `from` on `keep` holds for.
    fn run(&self, from: usize, keep: impl Fn(u8) -> bool) -> usize {
        let bytes = self.bytes();
        let mut end = from;
        while end < bytes.len() && keep(bytes[end]) {
            end += 1;
        }
        end - from
    }

    /// Past the bytes `keep` holds for; how many there were.
    fn skip(&mut self, keep: impl Fn(u8) -> bool) -> usize {
        let n = self.run(self.at, keep);
        self.at += n;
        n
    }

    fn spaces(&mut self) {
        self.skip(is_blank);
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek() == Some(b)).then(|| self.at += 1)
    }

    /// From `#` up to its first control byte, not taken: the line end, or a byte no comment may
    /// hold, which every caller then refuses as no line end.
    fn comment(&mut self) {
        self.at += 1;
        self.skip(|b| !is_control(b));
    }

    fn newline(&mut self) -> Option<()> {
        match self.peek() {
            Some(b'\n') => self.at += 1,
            Some(b'\r') if self.peek_at(1) == Some(b'\n') => self.at += 2,
            _ => return None,
        }
        Some(())
    }

    /// Blanks, a comment, and the line's end (or the text's).
    fn line_end(&mut self) -> Option<()> {
        self.spaces();
        if self.peek() == Some(b'#') {
            self.comment();
        }
        if self.peek().is_none() {
            return Some(());
        }
        self.newline()
    }

    /// Blanks, comments and line ends, as between an array's items.
    fn gaps(&mut self) -> Option<()> {
        loop {
            self.spaces();
            match self.peek() {
                Some(b'#') => self.comment(),
                Some(b'\n' | b'\r') => self.newline()?,
                _ => return Some(()),
            }
        }
    }

    fn document(mut self) -> Option<Table<'a>> {
        let mut root = Table::default();
        let mut current = Table::default();
        let mut header: Option<Header<'a>> = None;
        loop {
            self.spaces();
            match self.peek() {
                None => break,
                Some(b'#' | b'\n' | b'\r') => self.line_end()?,
                Some(b'[') => {
                    finish(&mut root, std::mem::take(&mut current), header.take())?;
                    let next = self.header()?;
                    self.line_end()?;
                    current = start(&mut root, &next)?;
                    header = Some(next);
                }
                Some(_) => {
                    self.key_value(&mut current)?;
                    self.line_end()?;
                }
            }
        }
        finish(&mut root, current, header)?;
        Some(root)
    }

    /// `key = value` into `table`, whose key it must not have.
    fn key_value(&mut self, table: &mut Table<'a>) -> Option<()> {
        let (key, _) = self.key()?;
        self.spaces();
        // A `.` here would be a dotted key: outside the subset.
        self.eat(b'=')?;
        self.spaces();
        let value = self.value()?;
        if table.position(&key).is_some() {
            return None;
        }
        table.add(key, value)?;
        Some(())
    }

    fn header(&mut self) -> Option<Header<'a>> {
        let at = self.at;
        self.at += 1;
        let array = self.eat(b'[').is_some();
        let mut keys = Vec::new();
        loop {
            if keys.len() == MAX_DEPTH {
                return None;
            }
            self.spaces();
            keys.push(self.key()?);
            self.spaces();
            match self.peek()? {
                b'.' => self.at += 1,
                b']' => break,
                _ => return None,
            }
        }
        self.at += 1;
        if array {
            self.eat(b']')?;
        }
        let (key, _) = keys.pop()?;
        Some(Header {
            path: keys,
            key,
            at,
            array,
        })
    }

    fn key(&mut self) -> Option<(Cow<'a, str>, usize)> {
        let at = self.at;
        let key = match self.peek()? {
            b'"' if !self.triple(b'"') => self.basic::<false>()?,
            b'\'' if !self.triple(b'\'') => self.literal::<false>()?,
            b if is_bare(b) => {
                self.skip(is_bare);
                Cow::Borrowed(&self.text[at..self.at])
            }
            _ => return None,
        };
        Some((key, at))
    }

    fn value(&mut self) -> Option<Node<'a>> {
        let at = self.at;
        let kind = match self.peek()? {
            b'"' if self.triple(b'"') => Kind::Str(self.basic::<true>()?),
            b'"' => Kind::Str(self.basic::<false>()?),
            b'\'' if self.triple(b'\'') => Kind::Str(self.literal::<true>()?),
            b'\'' => Kind::Str(self.literal::<false>()?),
            b't' => {
                self.word("true")?;
                Kind::Bool(true)
            }
            b'f' => {
                self.word("false")?;
                Kind::Bool(false)
            }
            b'[' | b'{' if self.depth >= MAX_DEPTH => return None,
            b'[' => {
                self.depth += 1;
                let items = self.array()?;
                self.depth -= 1;
                Kind::Array {
                    items,
                    tables: false,
                }
            }
            b'{' => {
                self.depth += 1;
                let table = self.inline()?;
                self.depth -= 1;
                Kind::Table(table)
            }
            b'0'..=b'9' | b'+' | b'-' => self.number()?,
            _ => return None,
        };
        Some(Node { at, kind })
    }

    fn word(&mut self, word: &str) -> Option<()> {
        self.bytes()[self.at..]
            .starts_with(word.as_bytes())
            .then(|| self.at += word.len())
    }

    fn digits(&mut self) -> Option<()> {
        (self.skip(|b| b.is_ascii_digit()) > 0).then_some(())
    }

    /// A decimal integer or a float, without `_`; whatever follows is the caller's to judge
    /// (a date's `-` or a time's `:` ends the value where no value may end).
    fn number(&mut self) -> Option<Kind<'a>> {
        let start = self.at;
        if matches!(self.peek(), Some(b'+' | b'-')) {
            self.at += 1;
        }
        match self.peek()? {
            // A zero is the whole integer part: in `01` or `0x1F` what follows it ends the
            // value where no value may end, and the caller gives up.
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits()?,
            _ => return None,
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits()?;
            float = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.digits()?;
            float = true;
        }
        let text = &self.text[start..self.at];
        if float {
            let f: f64 = text.parse().ok()?;
            f.is_finite().then_some(Kind::Float(f))
        } else {
            text.parse().ok().map(Kind::Int)
        }
    }

    /// The character after a `\`, appended to `out`.
    fn escape(&mut self, out: &mut String) -> Option<()> {
        let b = self.peek()?;
        self.at += 1;
        let c = match b {
            b'b' => '\u{8}',
            b't' => '\t',
            b'n' => '\n',
            b'f' => '\u{c}',
            b'r' => '\r',
            b'"' => '"',
            b'\\' => '\\',
            b'u' => self.hex(4)?,
            b'U' => self.hex(8)?,
            _ => return None,
        };
        out.push(c);
        Some(())
    }

    fn hex(&mut self, n: usize) -> Option<char> {
        let digits = self.bytes().get(self.at..self.at + n)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let code = u32::from_str_radix(&self.text[self.at..self.at + n], 16).ok()?;
        self.at += n;
        char::from_u32(code)
    }

    /// `"…"`, or (`MULTI`) `"""…"""`: borrowed from the text unless it has an escape. A
    /// multi-line string drops the line end right after its opening quotes, and takes a `\` that
    /// ends a line with the blanks and line ends after it.
    fn basic<const MULTI: bool>(&mut self) -> Option<Cow<'a, str>> {
        let quotes = self.open(MULTI)?;
        let start = self.at;
        let mut owned: Option<String> = None;
        let mut piece = start;
        loop {
            self.past_content::<MULTI>(memchr::memchr2(b'"', b'\\', &self.bytes()[self.at..]));
            match self.peek()? {
                // Quotes just before a multi-line string's closing ones would be content: the
                // caller, finding one after the value, leaves the text to the general parser.
                b'"' if !MULTI || self.triple(b'"') => {
                    let end = self.at;
                    self.at += quotes;
                    return Some(match owned {
                        None => Cow::Borrowed(&self.text[start..end]),
                        Some(mut s) => {
                            s.push_str(&self.text[piece..end]);
                            Cow::Owned(s)
                        }
                    });
                }
                b'\\' => {
                    let s = owned.get_or_insert_with(String::new);
                    s.push_str(&self.text[piece..self.at]);
                    self.at += 1;
                    if !(MULTI && self.line_continues()) {
                        self.escape(s)?;
                    }
                    piece = self.at;
                }
                b'\n' if MULTI => self.at += 1,
                b if is_control(b) => return None,
                _ => self.at += 1,
            }
        }
    }

    /// Inside a string: past the bytes before the next one that may end it or start an escape,
    /// `next` bytes on (the rest of the text when `None`), as far as they are content. A
    /// control character (a line end too, outside a multi-line string) stops it there, for
    /// the caller to refuse. The bytes are read in blocks, not one at a time: a control
    /// character is looked for in the whole span first, without stopping early, which the
    /// compiler makes a vector loop.
    fn past_content<const MULTI: bool>(&mut self, next: Option<usize>) {
        let stops = |b: u8| is_control(b) && !(MULTI && b == b'\n');
        let span = &self.bytes()[self.at..];
        let span = &span[..next.unwrap_or(span.len())];
        let n = if span.iter().fold(false, |any, &b| any | stops(b)) {
            span.iter().position(|&b| stops(b)).unwrap_or(span.len())
        } else {
            span.len()
        };
        self.at += n;
    }

    /// After a `\` in a multi-line string: whether only blanks follow it on its line, and if so,
    /// past them and the blanks and line ends after.
    fn line_continues(&mut self) -> bool {
        let next = self.at + self.run(self.at, is_blank);
        if self.bytes().get(next) != Some(&b'\n') {
            return false;
        }
        self.at = next;
        self.skip(|b| is_blank(b) || b == b'\n');
        true
    }

    /// `'…'`, or (`MULTI`) `'''…'''` (the line end right after the opening quotes dropped): always
    /// borrowed.
    fn literal<const MULTI: bool>(&mut self) -> Option<Cow<'a, str>> {
        let quotes = self.open(MULTI)?;
        let start = self.at;
        loop {
            self.past_content::<MULTI>(memchr::memchr(b'\'', &self.bytes()[self.at..]));
            match self.peek()? {
                b'\'' if !MULTI || self.triple(b'\'') => {
                    self.at += quotes;
                    return Some(Cow::Borrowed(&self.text[start..self.at - quotes]));
                }
                b'\n' if MULTI => self.at += 1,
                b if is_control(b) => return None,
                _ => self.at += 1,
            }
        }
    }

    /// Past a string's opening quotes, and a multi-line string's line end right after them (a
    /// `\r\n` there is left to the general parser, as is any `\r` inside): how many quotes.
    fn open(&mut self, multi: bool) -> Option<usize> {
        let quotes = if multi { 3 } else { 1 };
        self.at += quotes;
        if multi {
            match self.peek() {
                Some(b'\n') => self.at += 1,
                Some(b'\r') => return None,
                _ => {}
            }
        }
        Some(quotes)
    }

    fn array(&mut self) -> Option<Vec<Node<'a>>> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.gaps()?;
            if self.eat(b']').is_some() {
                return Some(items);
            }
            items.push(self.value()?);
            self.gaps()?;
            if self.eat(b',').is_none() {
                self.eat(b']')?;
                return Some(items);
            }
        }
    }

    /// `{ … }` on one line, without a trailing comma.
    fn inline(&mut self) -> Option<Table<'a>> {
        self.at += 1;
        let mut table = Table {
            inline: true,
            ..Table::default()
        };
        self.spaces();
        if self.eat(b'}').is_some() {
            return Some(table);
        }
        loop {
            self.spaces();
            self.key_value(&mut table)?;
            self.spaces();
            if self.eat(b',').is_none() {
                self.eat(b'}')?;
                return Some(table);
            }
        }
    }
}

/// The table `path` leads to from `table`, creating implicit tables on the way; through an
/// array of tables, its last. `None` where the path meets a value or an inline table.
fn descend<'t, 'a>(
    mut table: &'t mut Table<'a>,
    path: &[(Cow<'a, str>, usize)],
) -> Option<&'t mut Table<'a>> {
    for (key, at) in path {
        let i = match table.position(key) {
            Some(i) => i,
            None => {
                let implicit = Table {
                    implicit: true,
                    ..Table::default()
                };
                let node = Node {
                    at: *at,
                    kind: Kind::Table(implicit),
                };
                table.add(key.clone(), node)?
            }
        };
        table = match &mut table.entries[i].1.kind {
            Kind::Array {
                items,
                tables: true,
            } => match items.last_mut() {
                Some(Node {
                    kind: Kind::Table(last),
                    ..
                }) => last,
                _ => return None,
            },
            Kind::Table(t) if !t.inline => t,
            _ => return None,
        };
    }
    Some(table)
}

/// The table a header opens: new, or (for `[…]`) one its path created earlier and nothing
/// defined yet.
fn start<'a>(root: &mut Table<'a>, header: &Header<'a>) -> Option<Table<'a>> {
    if header.array {
        return Some(Table::default());
    }
    let parent = descend(root, &header.path)?;
    let Some(i) = parent.position(&header.key) else {
        return Some(Table::default());
    };
    match parent.entries.remove(i).1.kind {
        Kind::Table(mut t) if t.implicit => {
            t.implicit = false;
            Some(t)
        }
        _ => None,
    }
}

/// Puts the table under `header` in place (the root's own keys before the first header).
fn finish<'a>(root: &mut Table<'a>, table: Table<'a>, header: Option<Header<'a>>) -> Option<()> {
    let Some(header) = header else {
        *root = table;
        return Some(());
    };
    let parent = descend(root, &header.path)?;
    let node = Node {
        at: header.at,
        kind: Kind::Table(table),
    };
    match parent.position(&header.key) {
        None if header.array => {
            let array = Node {
                at: header.at,
                kind: Kind::Array {
                    items: vec![node],
                    tables: true,
                },
            };
            parent.add(header.key, array)?;
        }
        None => {
            parent.add(header.key, node)?;
        }
        Some(i) => match &mut parent.entries[i].1.kind {
            Kind::Array {
                items,
                tables: true,
            } if header.array => items.push(node),
            _ => return None,
        },
    }
    Some(())
}

/// Any failure to deserialise: the general parser then reads the text again and says what is
/// wrong.
#[derive(Debug)]
struct Leave;

impl std::fmt::Display for Leave {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("left to the general TOML parser")
    }
}

impl std::error::Error for Leave {}

impl de::Error for Leave {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Leave
    }
}

/// A name serde's helpers give the general parser to ask for spans or dates.
fn is_private(name: &str) -> bool {
    name.starts_with("$__")
}

/// The methods values and keys answer alike: a newtype struct is visited as what it wraps, and a
/// struct that serde's helpers name to ask for spans or dates is left to the general parser.
macro_rules! newtype_and_struct {
    () => {
        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Leave> {
            visitor.visit_newtype_struct(self)
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            _fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Leave> {
            if is_private(name) {
                return Err(Leave);
            }
            self.deserialize_any(visitor)
        }
    };
}

/// A value as the general parser's deserialiser gives it.
struct Value<'a>(Node<'a>);

impl<'de> de::Deserializer<'de> for Value<'_> {
    type Error = Leave;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Leave> {
        match self.0.kind {
            Kind::Str(Cow::Borrowed(s)) => visitor.visit_str(s),
            Kind::Str(Cow::Owned(s)) => visitor.visit_string(s),
            Kind::Int(i) => visitor.visit_i64(i),
            Kind::Float(f) => visitor.visit_f64(f),
            Kind::Bool(b) => visitor.visit_bool(b),
            Kind::Array { items, .. } => visitor.visit_seq(Items(items.into_iter())),
            Kind::Table(table) => visitor.visit_map(Entries::new(table)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Leave> {
        visitor.visit_some(self)
    }

    newtype_and_struct!();

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Leave> {
        match self.0.kind {
            Kind::Str(s) => visitor.visit_enum(s.into_deserializer()),
            Kind::Table(table) if table.entries.len() == 1 => visitor.visit_enum(Variant(table)),
            _ => Err(Leave),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

struct Items<'a>(std::vec::IntoIter<Node<'a>>);

impl<'de> de::SeqAccess<'de> for Items<'_> {
    type Error = Leave;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Leave> {
        self.0
            .next()
            .map(|node| seed.deserialize(Value(node)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// A table's entries in sorted order, as the general parser keeps them.
struct Entries<'a> {
    entries: std::vec::IntoIter<(Cow<'a, str>, Node<'a>)>,
    value: Option<Node<'a>>,
}

impl<'a> Entries<'a> {
    fn new(mut table: Table<'a>) -> Self {
        table.entries.sort_by(|a, b| a.0.cmp(&b.0));
        Entries {
            entries: table.entries.into_iter(),
            value: None,
        }
    }
}

impl<'de> de::MapAccess<'de> for Entries<'_> {
    type Error = Leave;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Leave> {
        let Some((key, node)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(node);
        seed.deserialize(Key(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Leave> {
        seed.deserialize(Value(self.value.take().ok_or(Leave)?))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// Deserializer methods that leave the value to the general parser.
macro_rules! leave {
    ($($method:ident)*) => {
        $(fn $method<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Leave> {
            Err(Leave)
        })*
    };
}

/// A key as the general parser's deserialiser gives it; keys read as numbers, booleans or
/// characters are left to it.
struct Key<'a>(Cow<'a, str>);

impl<'de> de::Deserializer<'de> for Key<'_> {
    type Error = Leave;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Leave> {
        match self.0 {
            Cow::Borrowed(s) => visitor.visit_str(s),
            Cow::Owned(s) => visitor.visit_string(s),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Leave> {
        visitor.visit_enum(self.0.into_deserializer())
    }

    newtype_and_struct!();

    leave! {
        deserialize_bool deserialize_char deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128
    }

    serde::forward_to_deserialize_any! {
        f32 f64 str string bytes byte_buf option unit unit_struct seq tuple tuple_struct map
        identifier ignored_any
    }
}

/// A one-entry table read as an enum: the key names the variant.
struct Variant<'a>(Table<'a>);

impl<'de, 'a> de::EnumAccess<'de> for Variant<'a> {
    type Error = Leave;
    type Variant = Value<'a>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Value<'a>), Leave> {
        let (key, node) = self.0.entries.into_iter().next().ok_or(Leave)?;
        Ok((seed.deserialize(Key(key))?, Value(node)))
    }
}

impl<'de> de::VariantAccess<'de> for Value<'_> {
    type Error = Leave;

    fn unit_variant(self) -> Result<(), Leave> {
        match self.0.kind {
            Kind::Array { items, .. } if items.is_empty() => Ok(()),
            Kind::Table(table) if table.entries.is_empty() => Ok(()),
            _ => Err(Leave),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Leave> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value, Leave> {
        Err(Leave)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Leave> {
        // The general parser refuses keys the variant does not have, whatever the type says.
        let unknown = match &self.0.kind {
            Kind::Table(table) => table
                .entries
                .iter()
                .any(|(key, _)| !fields.contains(&key.as_ref())),
            _ => false,
        };
        if unknown {
            return Err(Leave);
        }
        de::Deserializer::deserialize_any(self, visitor)
    }
}

/// What this reader made of `text` against the general parser, as TOML values and as a
/// scenario: whether it read each. A panic where it read something else, or read what the
/// general parser refuses (the fuzz target `scenario_plain`, and the tests).
#[cfg(any(test, feature = "fuzzing"))]
pub(super) fn agrees(text: &str) -> (bool, bool) {
    let ours = read::<serde_json::Value>(text);
    let values = match toml::from_str::<serde_json::Value>(text) {
        Ok(theirs) => ours.is_some_and(|(v, _)| {
            assert_eq!(v, theirs, "a different reading of:\n{text}");
            // Keys in the general parser's order, too.
            assert_eq!(v.to_string(), theirs.to_string(), "key order in:\n{text}");
            true
        }),
        Err(_) => {
            assert!(
                ours.is_none(),
                "read what the general parser refuses:\n{text}"
            );
            false
        }
    };
    let ours = read::<super::Scenario>(text);
    let scenario = match super::parse_general(text) {
        Ok((theirs, lines)) => ours.is_some_and(|(scenario, entries)| {
            assert_eq!(
                format!("{scenario:?}"),
                format!("{theirs:?}"),
                "a different scenario from:\n{text}"
            );
            assert_eq!(
                super::locate::entry_lines(text, entries),
                lines,
                "other compare lines in:\n{text}"
            );
            true
        }),
        Err(_) => {
            assert!(
                ours.is_none(),
                "read a scenario the general parser refuses:\n{text}"
            );
            false
        }
    };
    (values, scenario)
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "a test reads the project's files itself"
)]
mod tests {
    use super::{agrees, read};
    use crate::scenario::parse_general;

    /// Every `.toml` file of the project (scenarios, examples, fixtures, docs), by path from the
    /// project's root.
    fn project_files() -> Vec<(std::path::PathBuf, String)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<(std::path::PathBuf, String)> =
            ["scenarios", "examples", "tests", "docs"]
                .iter()
                .flat_map(|dir| walkdir::WalkDir::new(root.join(dir)).sort_by_file_name())
                .filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
                .filter_map(|e| {
                    let text = std::fs::read_to_string(e.path()).ok()?;
                    Some((e.path().strip_prefix(root).ok()?.to_path_buf(), text))
                })
                .collect();
        files.sort();
        files
    }

    /// The general parser's reading of `text` as JSON values (`None`: it refuses the text).
    fn general_value(text: &str) -> Option<serde_json::Value> {
        toml::from_str(text).ok()
    }

    fn agree(text: &str) -> bool {
        agrees(text).0
    }

    #[test]
    fn every_bundled_scenario_reads_as_the_general_parser_reads_it() {
        let files = project_files();
        assert!(files.len() > 150, "only {} files found", files.len());
        let mut scenarios = 0;
        for (path, text) in &files {
            let text = crate::scenario::without_bom(text);
            let general = parse_general(text).is_ok();
            let (_, ours) = agrees(text);
            // The subset covers every scenario the project ships.
            if general && path.starts_with("scenarios") {
                assert!(ours, "{} left the plain subset", path.display());
            }
            scenarios += usize::from(ours);
        }
        assert!(scenarios > 150, "only {scenarios} scenarios read");
    }

    /// Pieces that break, extend or bend TOML where this reader and the general parser could
    /// part ways.
    const PIECES: &[&str] = &[
        "\"",
        "'",
        "\"\"\"",
        "'''",
        "\"\"\"\"",
        "[",
        "]",
        "[[",
        "]]",
        "{",
        "}",
        ",",
        "=",
        ".",
        "#",
        "\n",
        "\r\n",
        "\r",
        "\t",
        " ",
        "\\",
        "\\\n",
        "\\ \n  ",
        "\\u00e9",
        "\\ud800",
        "\\U0001F600",
        "\\U00110000",
        "\\x41",
        "\\e",
        "\\'",
        "1979-05-27",
        "07:32:00",
        "1979-05-27T07:32:00Z",
        "0x1F",
        "0o17",
        "0b11",
        "1_000",
        "+inf",
        "-nan",
        "inf",
        "1e400",
        "-0",
        "+1",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "00",
        "01",
        "1.",
        ".5",
        "1.5e",
        "1e+05",
        "0.0",
        "-0.0",
        "6.02E23",
        "true",
        "false",
        "truex",
        "\u{7f}",
        "\u{85}",
        "\u{1}",
        "\u{0}",
        "\u{feff}",
        "é",
        "a.b = 1",
        "x = 1",
        "x = [1,]",
        "x = {}",
        "x = { a = 1, }",
        "x = { a = 1\n}",
        "x = [\n1,\n# c\n2\n]",
        "[model]",
        "[[tools]]",
        "[compare.x]",
        "[expect]",
        "[a.b]",
        "[a]",
        "[[a]]",
        "[ a . 'b' ]",
        "\"a b\" = 1",
        "'' = 2",
        "\"\" = 3",
        "[x.\"y\"]",
        "key = \"v\" # note",
    ];

    /// A small deterministic generator (xorshift), so failures repeat.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self, below: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % below.max(1) as u64) as usize
        }
    }

    /// `text` changed once: a piece inserted, a span deleted, a line doubled or two lines
    /// swapped.
    fn mutate(text: &str, rng: &mut Rng) -> String {
        let bounds: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        let at = bounds[rng.next(bounds.len())];
        match rng.next(4) {
            0 | 1 => {
                let piece = PIECES[rng.next(PIECES.len())];
                format!("{}{piece}{}", &text[..at], &text[at..])
            }
            2 => {
                let end = bounds[rng.next(bounds.len())].max(at);
                let end = bounds
                    .iter()
                    .copied()
                    .find(|&b| b >= end.min(at + 12))
                    .unwrap_or(end);
                format!("{}{}", &text[..at], &text[end..])
            }
            _ => {
                let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
                let (i, j) = (rng.next(lines.len()), rng.next(lines.len()));
                if rng.next(2) == 0 {
                    let line = lines.get(i).copied().unwrap_or("");
                    lines.insert(j.min(lines.len()), line);
                } else if i < lines.len() && j < lines.len() {
                    lines.swap(i, j);
                }
                lines.concat()
            }
        }
    }

    #[test]
    fn variations_of_the_bundled_files_read_as_the_general_parser_reads_them() {
        let files = project_files();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut both, mut tried, mut scenarios, mut toml) = (0, 0, 0, 0);
        for (_, text) in &files {
            for round in 0..24 {
                let mut varied = mutate(text, &mut rng);
                if round % 3 == 2 {
                    varied = mutate(&varied, &mut rng);
                }
                tried += 1;
                toml += usize::from(general_value(&varied).is_some());
                let (values, scenario) = agrees(&varied);
                both += usize::from(values);
                scenarios += usize::from(scenario);
            }
        }
        // The variations test both sides: many are still TOML, many are not; and most of
        // those still TOML stay inside the subset.
        assert!(
            toml * 5 > tried,
            "only {toml} of {tried} variations were TOML"
        );
        assert!(
            toml * 5 < tried * 4,
            "{toml} of {tried} variations were TOML"
        );
        assert!(
            both * 4 > toml * 3,
            "only {both} of {toml} TOML variations read"
        );
        assert!(
            scenarios * 10 > tried,
            "only {scenarios} of {tried} still scenarios"
        );
    }

    #[test]
    fn tables_are_defined_as_the_general_parser_defines_them() {
        // (text, whether it is TOML): each is also compared with the general parser's reading.
        let cases: &[(&str, bool)] = &[
            ("[a.b]\nx = 1\n[a]\ny = 2\n", true),
            ("[a]\ny = 2\n[a.b]\nx = 1\n", true),
            ("[a]\n[a]\n", false),
            ("[a.b]\n[a.b]\n", false),
            ("[a.b]\nx = 1\n[a]\nb = 2\n", false),
            ("a = 1\n[a]\n", false),
            ("a = {}\n[a.b]\n", false),
            ("a = {}\n[a]\n", false),
            ("[[a]]\nx = 1\n[[a]]\nx = 2\n[a.b]\ny = 3\n", true),
            ("[[a]]\n[a]\n", false),
            ("[a]\n[[a]]\n", false),
            ("a = []\n[[a]]\n", false),
            ("a = [{}]\n[a.b]\n", false),
            ("[a.b.c]\n[a.b]\n[a]\n", true),
            ("[a.b.c]\n[a.b]\n[a.b]\n", false),
            ("[[a.b]]\n[[a.b]]\n[a]\nc = 1\n", true),
            ("[[a]]\n[[a.b]]\n[[a]]\n[[a.b]]\n", true),
            ("x = 1\nx = 2\n", false),
            ("x = 1\n\"x\" = 2\n", false),
            ("'a' = 1\n\"\\u0061\" = 2\n", false),
            ("x = { a = 1, a = 2 }\n", false),
            ("[ a . \"b c\" . 'd' ]\ne = 1\n", true),
            ("z = 1\na = 2\nm = { b = 1, a = 2 }\n", true),
        ];
        for (text, toml) in cases {
            assert_eq!(general_value(text).is_some(), *toml, "{text}");
            assert_eq!(read::<serde_json::Value>(text).is_some(), *toml, "{text}");
            agree(text);
        }
    }

    #[test]
    fn values_read_as_the_general_parser_reads_them() {
        let cases = [
            "s = \"a\\tb\\u00e9\\U0001F600\\\\\\\"\"",
            "s = 'C:\\path'",
            "s = \"\"\"\nline\n  two \\\n   joined\"\"\"",
            "s = \"\"\"a\"\"b\"\"\"",
            "s = '''\nraw \\n ''\n'''",
            "n = [0, -0, +7, 9223372036854775807, -9223372036854775808]",
            "f = [0.5, -0.0, 1e5, 1E-5, 6.02e+23, 3.0e007]",
            "b = [true, false]",
            "a = [ [1, 2], [\"x\", { k = 'v' }], [], ]",
            "t = { a = { b = { c = [1] } }, \"d e\" = 'f' }",
            "x = 1 # comment é\n# another\r\ny = 2\r\n",
            "\u{1}= 1",
        ];
        // Strings and comments longer than the searches' blocks (16 and 32 bytes, 128 unrolled),
        // with what may stop their content at distances either side of each block's end, and
        // cut off unterminated: the general parser's reading, or its refusal.
        let long = &"plain text, \té and 😀, past a block or two of bytes; ".repeat(4);
        assert!(long.len() > 200);
        let mut strings = Vec::new();
        for cut in [
            0,
            1,
            15,
            16,
            17,
            31,
            32,
            33,
            63,
            64,
            65,
            127,
            128,
            129,
            long.len(),
        ] {
            let (head, tail) = long.split_at(super::super::locate::floor_char_boundary(long, cut));
            for stop in [
                "", "\\t", "\\\"", "\u{1}", "\u{7f}", "\n", "\r\n", "\"", "'",
            ] {
                strings.push(format!("s = \"{head}{stop}{tail}\""));
                strings.push(format!("s = '{head}{stop}{tail}'"));
                strings.push(format!("s = \"\"\"\n{head}{stop}{tail}\"\"\""));
                strings.push(format!("s = '''{head}{stop}{tail}'''"));
                strings.push(format!("x = 1 # {head}{stop}{tail}\ny = 2"));
            }
            strings.push(format!("s = \"{head}"));
            strings.push(format!("s = '{head}"));
        }
        let mut read_some = 0;
        for text in cases
            .iter()
            .copied()
            .chain(strings.iter().map(String::as_str))
        {
            let general = general_value(text);
            let ours = read::<serde_json::Value>(text).map(|(v, _)| v);
            match &ours {
                Some(_) => read_some += 1,
                // Left to the general parser: a `\r` in a multi-line string, a quote just
                // before its closing ones.
                None if general.is_some() => {
                    let quote_before_end = text.ends_with("\"\"\"\"") || text.ends_with("''''");
                    assert!(text.contains('\r') || quote_before_end, "{text:?}");
                    continue;
                }
                None => {}
            }
            assert_eq!(ours, general, "{text:?}");
        }
        assert!(read_some > 100, "{read_some}");
        assert!(read::<serde_json::Value>(cases[0]).is_some());
        // TOML the subset leaves to the general parser (some of it TOML 1.1).
        let outside = [
            "x = { a = 1, }",
            "x = { a = 1,\n b = 2 }",
            "s = \"\\e\"",
            "s = \"\"\"a\"\"\"\"",
            "s = '''a''''",
            "s = \"\"\"\r\na\"\"\"",
            "n = 0x1F",
            "n = 1_000",
            "n = 9223372036854775808",
            "f = inf",
            "d = 1979-05-27",
            "a.b = 1",
        ];
        for text in outside {
            assert!(general_value(text).is_some(), "{text}");
            assert!(read::<serde_json::Value>(text).is_none(), "{text}");
        }
        // Not TOML at all.
        for text in [
            "n = 01",
            "n = -00",
            "f = 01.5",
            "f = 1e400",
            "f = 1.",
            "f = -1.",
            "f = 1.e5",
            "f = 1e",
            "f = 1e+",
            "s = \"\\ud800\"",
            "n = 1 # a\u{1}b",
            "a = [1, # a\u{7f}b\n2]",
        ] {
            assert!(general_value(text).is_none(), "{text}");
            assert!(read::<serde_json::Value>(text).is_none(), "{text}");
        }
    }

    #[test]
    fn nesting_past_the_limit_is_left_to_the_general_parser() {
        let read = |text: &str| read::<serde_json::Value>(text).is_some();
        let deep = |n: usize| format!("x = {}{}", "[".repeat(n), "]".repeat(n));
        assert!(read(&deep(super::MAX_DEPTH)));
        assert!(!read(&deep(super::MAX_DEPTH + 1)));
        assert!(!read(&deep(100_000)));
        // Header paths: the general parser refuses one of 81 keys; a path of a million keys
        // would make a tree too deep to drop.
        let header = |n: usize| format!("[{}]\nx = 1\n", vec!["a"; n].join("."));
        assert!(read(&header(super::MAX_DEPTH)));
        assert!(!read(&header(super::MAX_DEPTH + 1)));
        assert!(general_value(&header(81)).is_none());
        assert!(!read(&header(1_000_000)));
    }

    #[test]
    fn wide_tables_are_left_to_the_general_parser() {
        let read = |text: &str| read::<serde_json::Value>(text).is_some();
        let keys = |n: usize| (0..n).map(|i| format!("k{i} = {i}\n")).collect::<String>();
        let headers = |n: usize| (0..n).map(|i| format!("[t.k{i}]\n")).collect::<String>();
        let inline = |n: usize| {
            let entries: Vec<String> = (0..n).map(|i| format!("k{i} = {i}")).collect();
            format!("x = {{ {} }}\n", entries.join(", "))
        };
        for wide in [keys, headers, inline] {
            assert!(read(&wide(super::MAX_ENTRIES)));
            assert!(!read(&wide(super::MAX_ENTRIES + 1)));
            assert!(general_value(&wide(super::MAX_ENTRIES + 1)).is_some());
            agree(&wide(super::MAX_ENTRIES));
        }
        // Arrays of tables have no lookups, and no limit.
        let tables = "[[a]]\nx = 1\n".repeat(super::MAX_ENTRIES * 4);
        assert!(read(&tables));
        agree(&tables);
    }
}
