//! Reads and writes that decide what to do with whatever is at a path, since a checkout (a pull
//! request, an unlucky CI job) decides what is there.
//!
//! - Files harness keeps in its own folders — goldens, pending goldens, `--traces` files — are
//!   read ([`read_inside`]) and written ([`write_inside`]) only as regular files reached from
//!   their folder without a symbolic link; a link, a FIFO, a device or a folder in their place
//!   is refused with an error that names the path and never shows what is behind it.
//! - Outputs the user names (`--json`, `--junit`, `--metrics`, baselines, cassettes, sweep
//!   files) go through [`Output`]: a regular file is replaced atomically (a temporary file
//!   beside it, renamed over it) and keeps its permissions; a new file gets the usual
//!   `0666 & !umask`; a symbolic link is written through (its target replaced the same way);
//!   a device or FIFO (`/dev/null`, `/dev/stdout`) is written in place, never replaced; a
//!   folder is an error naming it.
//!
//! Temporary files a killed process left (`.harness-*.tmp`, older than a minute) are removed
//! from each folder harness writes into, once per process, that folder only.

use std::collections::HashSet;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read as _, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Name prefix of the temporary files writes go through before the rename; with
/// [`TEMP_SUFFIX`], no other file harness reads or writes looks like one.
pub const TEMP_PREFIX: &str = ".harness-";
/// Name suffix of those temporary files.
pub const TEMP_SUFFIX: &str = ".tmp";
/// Age past which a temporary file is a leftover: only a killed process (SIGKILL, power loss)
/// leaves one, and a live write renames its file within milliseconds.
pub const STALE_TEMP_SECS: u64 = 60;

/// An error of kind [`io::ErrorKind::InvalidInput`] saying why `path` was refused.
fn refused(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// What a file that is not a regular one is, in words.
pub(crate) fn kind_of(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_symlink() {
        return "a symbolic link";
    }
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Why a file of `what` cannot be at `path` below `root`: it is `kind`, or (`via`) the folder
/// it lies in is.
fn not_regular(path: &Path, via: Option<&Path>, kind: &str, what: &str, root: &Path) -> io::Error {
    let what_is = match via {
        None => format!("the {what} {} is {kind}", path.display()),
        Some(dir) => format!(
            "the {what} {} lies below {}, which is {kind}",
            path.display(),
            dir.display()
        ),
    };
    refused(format!(
        "{what_is}; {what}s must be regular files inside {}, reached without links (harness never follows a link or reads a special file there, so a checkout cannot make it show another file)",
        root.display()
    ))
}

/// Check that every folder between `root` (excluded) and `path` (excluded) is a real folder;
/// `Ok(false)` when one does not exist.
fn folders_below(root: &Path, path: &Path, what: &str) -> io::Result<bool> {
    let Some(rel) = super::strip_prefix_lenient(path, root) else {
        return Err(refused(format!(
            "{} is outside {}, where {what}s live",
            path.display(),
            root.display()
        )));
    };
    let mut at = root.to_path_buf();
    let mut parts = rel.components().peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            break;
        }
        match part {
            std::path::Component::Normal(p) => at.push(p),
            _ => {
                return Err(refused(format!(
                    "{} leaves {}, where {what}s live",
                    path.display(),
                    root.display()
                )));
            }
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(m) => return Err(not_regular(path, Some(&at), kind_of(&m), what, root)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Check, without opening it, that a file of `what` at `path` below `root` is a regular file
/// reached without a link, or absent.
pub fn check_inside(root: &Path, path: &Path, what: &str) -> io::Result<()> {
    if !folders_below(root, path, what)? {
        return Ok(());
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_file() => Err(not_regular(path, None, kind_of(&m), what, root)),
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Check that a committed input (a metric baseline) at `path` is a regular file and not a link:
/// a checkout could point a link at any file, and a parse error would quote it.
pub fn check_regular(path: &Path, what: &str) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_file() => Err(refused(format!(
            "the {what} {} is {}; harness reads it only as a regular file (a link could make it quote any file on the machine)",
            path.display(),
            kind_of(&m)
        ))),
        _ => Ok(()),
    }
}

/// Open an input named by the user (links followed) for reading, without blocking on a FIFO;
/// anything but a regular file is refused, named as `what`.
pub fn open_regular(path: &Path, what: &str) -> io::Result<File> {
    open_regular_sized(path, what).map(|(file, _)| file)
}

/// [`open_regular`], with the file's size when it was opened.
pub fn open_regular_sized(path: &Path, what: &str) -> io::Result<(File, u64)> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused(format!(
            "the {what} {} is {}; harness reads regular files",
            path.display(),
            kind_of(&meta)
        )));
    }
    Ok((file, meta.len()))
}

/// Open `path` for reading without following a final symbolic link or blocking on a FIFO.
fn open_no_follow(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    {
        if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
            return Err(io::Error::from_raw_os_error(0));
        }
    }
    options.open(path)
}

/// Read a file of `what` (`golden`, `pending golden`) at `path` below `root`: a regular file
/// reached without a link, at most `max` bytes; `None` when it does not exist. Anything else
/// is refused (kind [`io::ErrorKind::InvalidInput`], or [`io::ErrorKind::FileTooLarge`]) with
/// a message that names the path and never its contents.
pub fn read_inside(root: &Path, path: &Path, what: &str, max: u64) -> io::Result<Option<String>> {
    read_inside_checked(root, path, what, max).and_then(|read| read)
}

/// [`read_inside`], telling the two ways it can fail apart: the outer error is what
/// [`check_inside`] refuses (a link or special file at `path` or on the way to it, a path
/// outside `root`, a folder that cannot be looked at); the inner one is a file that is where
/// it may be but cannot be read as `what` (too large, not UTF-8, not readable). One check and
/// one read, where `check_inside` then `read_inside` would look at every folder twice.
pub fn read_inside_checked(
    root: &Path,
    path: &Path,
    what: &str,
    max: u64,
) -> io::Result<io::Result<Option<String>>> {
    read_text_checked(root, path, what, max, false)
}

/// [`read_inside_checked`] for a pass that reads many files of a few folders (a run reads
/// every golden): the folders on the way to the last file this thread read are not looked at
/// again for the next file in the same folder. The file itself is checked every time.
pub fn read_inside_checked_often(
    root: &Path,
    path: &Path,
    what: &str,
    max: u64,
) -> io::Result<io::Result<Option<String>>> {
    read_text_checked(root, path, what, max, true)
}

/// [`read_checked`] of a file read whole as text.
fn read_text_checked(
    root: &Path,
    path: &Path,
    what: &str,
    max: u64,
    remember: bool,
) -> io::Result<io::Result<Option<String>>> {
    read_checked(root, path, what, remember, |file, len| {
        read_text(file, len, path, what, max)
    })
}

thread_local! {
    /// The root and the folder below it whose way down this thread last found free of links.
    static CHECKED_FOLDER: std::cell::RefCell<(PathBuf, PathBuf)> =
        std::cell::RefCell::new((PathBuf::new(), PathBuf::new()));
}

/// [`read_inside_checked_often`] into `room`, after what it already holds since its last
/// [`Room::clear`]: the file's bytes are `room.bytes(range)`, not checked as UTF-8 (a pass that
/// compares them with text it made finds equal bytes valid as they are, and checks the others
/// with [`not_utf8`] when it must show them).
pub fn read_inside_checked_often_into(
    root: &Path,
    path: &Path,
    what: &str,
    max: u64,
    room: &mut Room,
) -> io::Result<io::Result<Option<std::ops::Range<usize>>>> {
    read_checked(root, path, what, true, |file, len| {
        room.read(file, len, what, max)
    })
}

/// The error a file of `what` at `path` that is not UTF-8 is read with.
pub fn not_utf8(path: &Path, what: &str) -> io::Error {
    refused(format!(
        "{} is not valid UTF-8; {what}s are text written by harness",
        path.display()
    ))
}

fn read_checked<T>(
    root: &Path,
    path: &Path,
    what: &str,
    remember: bool,
    read: impl FnOnce(File, u64) -> io::Result<T>,
) -> io::Result<io::Result<Option<T>>> {
    let folder = path.parent().unwrap_or(Path::new(""));
    let known = remember
        && !folder.as_os_str().is_empty()
        && CHECKED_FOLDER.with_borrow(|(r, f)| {
            f.as_os_str() == folder.as_os_str() && r.as_os_str() == root.as_os_str()
        });
    if !known {
        if !folders_below(root, path, what)? {
            return Ok(Ok(None));
        }
        if remember {
            CHECKED_FOLDER.with_borrow_mut(|(r, f)| {
                r.as_mut_os_string().clear();
                r.as_mut_os_string().push(root.as_os_str());
                f.as_mut_os_string().clear();
                f.as_mut_os_string().push(folder.as_os_str());
            });
        }
    }
    let file = match open_no_follow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Ok(None)),
        Err(e) => {
            // O_NOFOLLOW on a link fails (ELOOP); say what it is rather than the errno.
            return match std::fs::symlink_metadata(path) {
                Ok(m) if !m.is_file() => Err(not_regular(path, None, kind_of(&m), what, root)),
                Ok(_) => Ok(Err(e)),
                Err(_) => Err(e),
            };
        }
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return Ok(Err(e)),
    };
    if !meta.is_file() {
        return Err(not_regular(path, None, kind_of(&meta), what, root));
    }
    Ok(read(file, meta.len()).map(Some))
}

/// The bytes of a regular file opened for reading, `len` bytes long when opened: at most
/// `max` of them, a larger file (or one that grew past `max` while read) being an error of
/// kind [`io::ErrorKind::FileTooLarge`] that names `what`. A file that kept its size is read
/// with one call.
pub(super) fn read_bounded(file: File, len: u64, what: &str, max: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let end = fill(file, len, what, max, &mut bytes, 0)?;
    bytes.truncate(end);
    Ok(bytes)
}

/// Room that files are read into one after another, zeroed only where it grows: a pass that
/// reads many files (a run reads every golden) zeroes and allocates its room once, not once a
/// file. All of `room` is initialised; what was read since [`Room::clear`] is `room[..used]`.
#[derive(Debug, Default)]
pub struct Room {
    room: Vec<u8>,
    used: usize,
}

impl Room {
    /// Forget what was read; the room stays.
    pub fn clear(&mut self) {
        self.used = 0;
    }

    /// The bytes a read returned the range of. A range stands for its file's bytes until the
    /// next [`Room::clear`]; after it, the room holds other files' bytes there.
    pub fn bytes(&self, at: std::ops::Range<usize>) -> &[u8] {
        &self.room[at]
    }

    /// The bytes the room holds, read or not: what keeping it costs.
    pub fn size(&self) -> usize {
        self.room.capacity()
    }

    /// Read a file as [`read_bounded`] does, after what the room holds; where its bytes are.
    fn read(
        &mut self,
        file: File,
        len: u64,
        what: &str,
        max: u64,
    ) -> io::Result<std::ops::Range<usize>> {
        let start = self.used;
        let end = fill(file, len, what, max, &mut self.room, start)?;
        self.used = end;
        Ok(start..end)
    }
}

/// Read a file as [`read_bounded`] describes into `room` from `start`: `room` is initialised
/// throughout and grows (zeroed) only where it is too short, room not yet allocated coming
/// zeroed from the allocator (fresh pages are zero already); where the bytes read end.
fn fill(
    mut file: File,
    len: u64,
    what: &str,
    max: u64,
    room: &mut Vec<u8>,
    start: usize,
) -> io::Result<usize> {
    let too_large = |len: u64| within(what, len, max);
    too_large(len)?;
    // One read for a file that still has the size it was opened with (reading on to find
    // its end would take a second call, for every golden of a run): it asks for one byte
    // more, so a file that grew since is read on to its end, still within `max`. The room is
    // initialised first (zeroed where it grows): `read_to_end` into unzeroed room would save
    // that, but spends a second call to see the end and reads past 8 KiB in steps (counted
    // with `strace -c`: 2.2 calls a file on the bundled mix, against 1.0).
    let want = usize::try_from(len).unwrap_or(usize::MAX);
    let stop = start.saturating_add(want).saturating_add(1);
    if room.capacity() == 0 {
        *room = vec![0; stop];
    } else if room.len() < stop {
        room.resize(stop, 0);
    }
    let mut got = 0;
    while start + got < stop {
        match file.read(&mut room[start + got..stop]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        if got == want {
            break;
        }
    }
    if got > want {
        room.truncate(start + got);
        let mut rest = (&mut file).take(max.saturating_add(1).saturating_sub(got as u64));
        rest.read_to_end(room)?;
        got = room.len() - start;
    }
    too_large(len.max(got as u64))?;
    Ok(start + got)
}

/// `Ok` when `len` bytes are within `max` for a file of `what`, else the error of kind
/// [`io::ErrorKind::FileTooLarge`] that names both.
pub(super) fn within(what: &str, len: u64, max: u64) -> io::Result<()> {
    match crate::limits::file_too_large(what, len, max) {
        Some(message) => Err(io::Error::new(io::ErrorKind::FileTooLarge, message)),
        None => Ok(()),
    }
}

/// The text of a regular file opened for reading, `len` bytes long when opened, as `what`.
fn read_text(file: File, len: u64, path: &Path, what: &str, max: u64) -> io::Result<String> {
    let bytes = read_bounded(file, len, what, max)?;
    String::from_utf8(bytes).map_err(|_| not_utf8(path, what))
}

/// Write a file of `what` at `path` below `root` atomically: refused when it, or a folder on
/// the way below `root`, is a symbolic link or a special file; a replaced file keeps its
/// permissions.
pub fn write_inside(root: &Path, path: &Path, what: &str, contents: &[u8]) -> io::Result<()> {
    folders_below(root, path, what)?;
    let dir = parent_of(path);
    std::fs::create_dir_all(dir)?;
    // A folder created between the check and here is created by us; check again for links.
    folders_below(root, path, what)?;
    let old = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => Some(m),
        Ok(m) => return Err(not_regular(path, None, kind_of(&m), what, root)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let mut tmp = temp_beside(dir, old.as_ref())?;
    tmp.write_all(contents)?;
    persist(tmp, path)
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A temporary file in `dir` with the permissions of `like` (the file it will replace), or
/// `0666` less the umask for a new file.
fn temp_beside(dir: &Path, like: Option<&Metadata>) -> io::Result<tempfile::NamedTempFile> {
    clean_stale_once(dir);
    let mut b = tempfile::Builder::new();
    b.prefix(TEMP_PREFIX).suffix(TEMP_SUFFIX);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // open(2) applies the umask to this mode, as for any new file.
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = b.tempfile_in(dir)?;
    if let Some(old) = like {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = old.permissions().mode() & 0o7777;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        tmp.as_file().set_permissions(old.permissions())?;
    }
    Ok(tmp)
}

fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> io::Result<()> {
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Where an [`Output`] ends up.
enum Target {
    /// Renamed over this path (a regular file, or a new one).
    Replace(PathBuf, tempfile::NamedTempFile),
    /// Copied into this device or FIFO when committed.
    InPlace(PathBuf, File),
}

/// A file the user named, written whole or not at all: see the module documentation for
/// what happens to links, devices and folders. Write into it, then [`Output::commit`];
/// dropped uncommitted, it leaves the target as it was.
pub struct Output {
    target: Target,
}

impl Output {
    /// Prepare to write `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(named(e)),
        };
        let (path, meta) = match meta {
            Some(m) if m.file_type().is_symlink() => match std::fs::canonicalize(path) {
                Ok(real) => {
                    let m = std::fs::metadata(&real).map_err(named)?;
                    (real, Some(m))
                }
                Err(_) => {
                    return Err(refused(format!(
                        "{} is a symbolic link to a file that does not exist; harness writes through links, so create the target or remove the link",
                        path.display()
                    )));
                }
            },
            m => (path.to_path_buf(), m),
        };
        match meta {
            Some(m) if m.is_dir() => Err(refused(format!(
                "{} is a folder; name a file to write",
                path.display()
            ))),
            Some(m) if !m.is_file() => {
                // A device or FIFO: written in place at commit, never replaced.
                let buffer = tempfile::tempfile().map_err(named)?;
                Ok(Self {
                    target: Target::InPlace(path, buffer),
                })
            }
            m => {
                let dir = parent_of(&path);
                std::fs::create_dir_all(dir).map_err(named)?;
                let tmp = temp_beside(dir, m.as_ref()).map_err(named)?;
                Ok(Self {
                    target: Target::Replace(path, tmp),
                })
            }
        }
    }

    /// Put what was written in place of the target.
    pub fn commit(self) -> io::Result<()> {
        match self.target {
            Target::Replace(path, tmp) => persist(tmp, &path)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            Target::InPlace(path, mut buffer) => {
                use std::io::Seek as _;
                let named =
                    |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
                buffer.flush().map_err(named)?;
                buffer.rewind().map_err(named)?;
                let mut out = OpenOptions::new().write(true).open(&path).map_err(named)?;
                io::copy(&mut buffer, &mut out).map_err(named)?;
                out.flush().map_err(named)
            }
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.target {
            Target::Replace(_, tmp) => tmp.write(buf),
            Target::InPlace(_, buffer) => buffer.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.target {
            Target::Replace(_, tmp) => tmp.flush(),
            Target::InPlace(_, buffer) => buffer.flush(),
        }
    }
}

/// Write a file the user named, whole or not at all (see [`Output`]).
pub fn write_output(path: &Path, contents: &[u8]) -> io::Result<()> {
    let mut out = Output::create(path)?;
    out.write_all(contents)?;
    out.commit()
}

/// The folders already cleaned of leftovers by this process.
static CLEANED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Remove the leftovers of killed writes from `dir` (not below it), the first time this process
/// writes there.
fn clean_stale_once(dir: &Path) {
    {
        let mut cleaned = CLEANED.lock().unwrap_or_else(PoisonError::into_inner);
        if !cleaned
            .get_or_insert_with(HashSet::new)
            .insert(dir.to_path_buf())
        {
            return;
        }
    }
    clean_stale_temps(dir);
}

/// Remove the temporary files a killed process left in `dir` (older than
/// [`STALE_TEMP_SECS`]; not in its subfolders); how many were removed.
pub fn clean_stale_temps(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with(TEMP_PREFIX)
                && name.ends_with(TEMP_SUFFIX)
                && e.metadata().is_ok_and(|m| {
                    m.is_file()
                        && m.modified()
                            .ok()
                            .and_then(|t| t.elapsed().ok())
                            .is_some_and(|age| age.as_secs() >= STALE_TEMP_SECS)
                })
        })
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

#[cfg(all(test, unix))]
#[expect(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    unsafe_code,
    reason = "a test sets up and reads its files, clocks and threads itself"
)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt as _, symlink};

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn links_fifos_and_folders_in_a_goldens_folder_are_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("snapshots");
        std::fs::create_dir_all(root.join("a")).unwrap();
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "MY_SECRET_TOKEN=hunter2").unwrap();
        symlink(&secret, root.join("a/link.snap")).unwrap();
        symlink(dir.path(), root.join("up")).unwrap();
        std::fs::write(dir.path().join("x.snap"), "behind a linked folder").unwrap();
        std::fs::create_dir(root.join("a/dir.snap")).unwrap();
        let fifo = root.join("a/fifo.snap");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        std::fs::write(root.join("a/ok.snap"), "a golden").unwrap();

        let read = |rel: &str| read_inside(&root, &root.join(rel), "golden", 1 << 20);
        assert_eq!(read("a/ok.snap").unwrap().as_deref(), Some("a golden"));
        assert_eq!(read("a/none.snap").unwrap(), None);
        assert_eq!(read("b/none.snap").unwrap(), None);
        for (rel, what) in [
            ("a/link.snap", "is a symbolic link"),
            ("up/x.snap", "is a symbolic link"),
            ("a/dir.snap", "is a folder"),
            ("a/fifo.snap", "is a FIFO"),
        ] {
            let e = read(rel).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{rel}: {e}");
            let m = e.to_string();
            assert!(m.contains(what) && !m.contains("hunter2"), "{rel}: {m}");
        }
        let e = read_inside(&root, &root.join("a/ok.snap"), "golden", 3).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);

        // Writing: never through a link, never over a special file.
        for rel in ["a/link.snap", "up/x.snap", "a/fifo.snap", "a/dir.snap"] {
            let e = write_inside(&root, &root.join(rel), "golden", b"new").unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{rel}: {e}");
        }
        assert_eq!(
            std::fs::read_to_string(&secret).unwrap(),
            "MY_SECRET_TOKEN=hunter2"
        );
        write_inside(&root, &root.join("c/d/new.snap"), "golden", b"new").unwrap();
        assert_eq!(std::fs::read(root.join("c/d/new.snap")).unwrap(), b"new");
    }

    #[test]
    fn a_room_holds_each_file_read_since_it_was_cleared_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let long: Vec<u8> = (0..20_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for (name, bytes) in [
            ("empty", &b""[..]),
            ("short", &b"abc"[..]),
            ("long", &long[..]),
        ] {
            std::fs::write(root.join(name), bytes).unwrap();
        }
        let mut room = Room::default();
        let read = |room: &mut Room, name: &str| {
            read_inside_checked_often_into(root, &root.join(name), "golden", 1 << 20, room)
                .unwrap()
                .unwrap()
        };
        let at: Vec<_> = ["long", "short", "empty", "none", "short"]
            .iter()
            .map(|n| read(&mut room, n))
            .collect();
        assert_eq!(room.bytes(at[0].clone().unwrap()), &long[..]);
        assert_eq!(room.bytes(at[1].clone().unwrap()), b"abc");
        assert_eq!(room.bytes(at[2].clone().unwrap()), b"");
        assert_eq!(at[3], None);
        assert_eq!(room.bytes(at[4].clone().unwrap()), b"abc");
        // After a clear the room is reused: a short file read over a long one is itself only.
        let size = room.size();
        room.clear();
        let short = read(&mut room, "short").unwrap();
        assert_eq!((short.clone(), room.bytes(short)), (0..3, &b"abc"[..]));
        let empty = read(&mut room, "empty").unwrap();
        assert_eq!(room.bytes(empty), b"");
        assert_eq!(
            room.size(),
            size,
            "the room grew though it was large enough"
        );

        // A file longer than it was when opened is read on to its end, within `max`; one
        // shorter gives what it has.
        let open = || File::open(root.join("long")).unwrap();
        room.clear();
        let grew = room.read(open(), 10, "golden", 1 << 20).unwrap();
        assert_eq!(room.bytes(grew.clone()), &long[..]);
        let shrank = room.read(open(), 30_000, "golden", 1 << 20).unwrap();
        assert_eq!(room.bytes(shrank.clone()), &long[..]);
        let e = room.read(open(), 10, "golden", 100).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge, "{e}");
        let e = room.read(open(), 20_000, "golden", 100).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge, "{e}");
        // What a refused read left behind is not handed out: the next read starts after
        // what was read before it, and what was read before it stays as it was.
        let next = room.read(File::open(root.join("short")).unwrap(), 3, "golden", 100);
        let next = next.unwrap();
        assert_eq!(next, 2 * long.len()..2 * long.len() + 3);
        assert_eq!(room.bytes(next), b"abc");
        assert_eq!(room.bytes(grew), &long[..]);
        assert_eq!(room.bytes(shrank), &long[..]);
    }

    #[test]
    fn outputs_keep_the_mode_of_what_they_replace_and_write_through_links_and_devices() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("kept.toml");
        std::fs::write(&kept, "old").unwrap();
        std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_output(&kept, b"new").unwrap();
        assert_eq!(
            (mode(&kept), std::fs::read(&kept).unwrap()),
            (0o644, b"new".to_vec())
        );

        // A link is written through: the link stays, its target gets the bytes.
        let real = dir.path().join("real.json");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.json");
        symlink(&real, &link).unwrap();
        write_output(&link, b"through").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&real).unwrap(), b"through");

        // A device is written in place, never replaced by a regular file.
        write_output(Path::new("/dev/null"), b"discarded").unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());

        let e = write_output(dir.path(), b"x").unwrap_err();
        assert!(e.to_string().contains("is a folder"), "{e}");
        let dangling = dir.path().join("dangling.json");
        symlink(dir.path().join("nowhere/x"), &dangling).unwrap();
        let e = write_output(&dangling, b"x").unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    #[test]
    fn stale_temporary_files_are_cleaned_in_the_folder_only_and_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(".harness-x1.tmp");
        let fresh = dir.path().join(".harness-x2.tmp");
        let deeper = dir.path().join("a/.harness-x3.tmp");
        let golden = dir.path().join("b.snap");
        std::fs::create_dir_all(dir.path().join("a")).unwrap();
        let past =
            std::time::SystemTime::now() - std::time::Duration::from_secs(STALE_TEMP_SECS + 5);
        for p in [&old, &fresh, &deeper, &golden] {
            std::fs::write(p, "x").unwrap();
        }
        for p in [&old, &deeper, &golden] {
            File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(past)
                .unwrap();
        }
        assert_eq!(clean_stale_temps(dir.path()), 1);
        assert!(!old.exists() && fresh.exists() && deeper.exists() && golden.exists());
    }
}
