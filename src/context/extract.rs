//! The safe extraction of one gzip'd tar into a private directory.
//!
//! Only regular files and directories are written, by this code (never the `tar` crate's
//! `unpack`), with modes 0600 and 0700 whatever the archive says. Symbolic and hard links,
//! devices, FIFOs and sparse files are left out and counted, and so is any name that is
//! absolute or holds `..`. The first path component (GitHub's `owner-repo-sha7/`) is dropped.
//! Nothing is ever followed: no link is created, every directory on a path was created here
//! (or is checked to be a real directory), and files are created with `O_EXCL`, which does not
//! follow a link either.
//!
//! The archive is read in raw mode, so GNU long names and PAX headers are read here with a cap:
//! the `tar` crate would read one of any size into memory.
//!
//! The work is bounded, not only what is written: the bytes read (compressed and decompressed,
//! whatever they are for: a link's data is read to be skipped), the headers read (extension
//! headers too), the depth of a name, the directories made for names whose parents the archive
//! did not list (each counts as an entry), and the time the whole extraction takes. Directories
//! made are kept as a tree, so a name costs its length, not its length times its depth.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use tar::EntryType;

use super::LeftOut;

/// Largest GNU long name or PAX header read (`PATH_MAX` is 4096; room for other records).
const MAX_EXTENSION: u64 = 64 << 10;
/// Most bytes read after the archive's end marker (the gzip trailer, a tar's padding).
const MAX_TRAILER: u64 = 1 << 20;
/// The copy buffer: large enough that a big file is written in few calls.
const COPY_BUFFER: usize = 256 << 10;

/// Most levels of a name below the archive's top folder (`a/b/c` is 3).
pub const MAX_DEPTH: usize = 100;
/// How long an extraction may take, from its start (the download's chunks as they come
/// included) to its end.
pub const MAX_TIME: Duration = Duration::from_secs(180);
/// Bytes read for each entry on top of its file's bytes: its header and padding, and an
/// extension header with a long name before it.
const READ_PER_ENTRY: u64 = 8 << 10;
/// Bytes read on top of all that: the archive's end marker and the gzip trailer.
const READ_SLACK: u64 = 2 << 20;

/// What an extraction may write, read and spend.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Bytes of regular files.
    pub max_bytes: u64,
    /// Entries of the archive, every kind (written or left out), and directories made for
    /// names whose parents the archive did not list.
    pub max_entries: u64,
    /// Levels of a name below the top folder.
    pub max_depth: usize,
    /// Time from start to end.
    pub max_time: Duration,
}

impl Caps {
    /// `max_bytes` and `max_entries`, with [`MAX_DEPTH`] and [`MAX_TIME`].
    pub const fn new(max_bytes: u64, max_entries: u64) -> Caps {
        Caps {
            max_bytes,
            max_entries,
            max_depth: MAX_DEPTH,
            max_time: MAX_TIME,
        }
    }

    /// Headers read, extension headers included: each entry may have one before it.
    pub fn max_headers(&self) -> u64 {
        self.max_entries.saturating_mul(2).saturating_add(16)
    }

    /// Bytes read, compressed and decompressed alike: the files' bytes, and for each entry
    /// its headers and padding. A deflate stream is never much larger than what it holds,
    /// unless it is made of blocks that hold nothing.
    pub fn max_read(&self) -> u64 {
        self.max_bytes
            .saturating_add(self.max_entries.saturating_mul(READ_PER_ENTRY))
            .saturating_add(READ_SLACK)
    }
}

/// What was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    pub files: u64,
    pub bytes: u64,
    pub left_out: LeftOut,
}

/// Why an extraction stopped short. What was written is then removed by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Writing the next file would pass `max_bytes`.
    OverBytes,
    /// The archive holds more than `max_entries` entries.
    OverEntries,
    /// The archive holds more than [`Caps::max_headers`] headers.
    OverHeaders,
    /// More than [`Caps::max_read`] bytes were read, compressed or decompressed.
    OverRead,
    /// A name is more than `max_depth` levels deep.
    TooDeep,
    /// The extraction took longer than `max_time`.
    TooSlow,
    /// The gzip or tar data is broken (or the download ended early): the reader's error.
    Corrupt(String),
    /// The disk refused a write.
    Disk(String),
}

/// Where a read stopped at a bound says which: the `tar` and gzip readers pass our error on
/// as theirs, with their own words around it.
type Tripped = Rc<Cell<Option<Stop>>>;

/// A reader bounded in bytes and in time; past either it fails, and says why in `tripped`.
struct Bounded<R> {
    inner: R,
    read: u64,
    max: u64,
    deadline: Option<Instant>,
    tripped: Tripped,
}

impl<R> Bounded<R> {
    fn new(inner: R, caps: &Caps, deadline: Option<Instant>, tripped: &Tripped) -> Self {
        Bounded {
            inner,
            read: 0,
            max: caps.max_read(),
            deadline,
            tripped: Rc::clone(tripped),
        }
    }

    fn trip(&self, stop: Stop) -> io::Result<usize> {
        self.tripped.set(Some(stop));
        Err(io::Error::other("the extraction reached a bound"))
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return self.trip(Stop::TooSlow);
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.max {
            return self.trip(Stop::OverRead);
        }
        Ok(n)
    }
}

/// Extracts the gzip'd tar read from `from` into `root`, an empty directory.
pub fn extract(from: impl Read, root: &Path, caps: Caps) -> Result<Written, Stop> {
    let deadline = Instant::now().checked_add(caps.max_time);
    let tripped: Tripped = Rc::default();
    // Both sides of the decoder are bounded: the compressed bytes, which may hold nothing,
    // and the tar, whose every byte is work whether it is written or skipped.
    let compressed = Bounded::new(from, &caps, deadline, &tripped);
    let tar = Bounded::new(
        flate2::read::GzDecoder::new(compressed),
        &caps,
        deadline,
        &tripped,
    );
    let mut archive = tar::Archive::new(tar);
    let corrupt = |e: io::Error| failed(&tripped, e);
    let mut out = Out {
        root,
        caps,
        made: HashMap::new(),
        written: Written::default(),
        entries: 0,
        buf: vec![0; COPY_BUFFER],
        tripped: Rc::clone(&tripped),
    };
    {
        let entries = archive.entries().map_err(corrupt)?.raw(true);
        let mut long_name: Option<Vec<u8>> = None;
        let mut pax_path: Option<Vec<u8>> = None;
        let mut pax_size: Option<Vec<u8>> = None;
        let mut headers = 0u64;
        for entry in entries {
            let mut entry = entry.map_err(corrupt)?;
            headers += 1;
            if headers > caps.max_headers() {
                return Err(Stop::OverHeaders);
            }
            let kind = entry.header().entry_type();
            match kind {
                EntryType::XGlobalHeader | EntryType::GNULongLink => {
                    // Nothing needed from them; read past with a cap, like any header.
                    read_extension(&mut entry, corrupt)?;
                    continue;
                }
                EntryType::GNULongName => {
                    let mut name = read_extension(&mut entry, corrupt)?;
                    if name.last() == Some(&0) {
                        name.pop();
                    }
                    long_name = Some(name);
                    continue;
                }
                EntryType::XHeader => {
                    let records = read_extension(&mut entry, corrupt)?;
                    pax_path = pax_record(&records, "path", corrupt)?;
                    pax_size = pax_record(&records, "size", corrupt)?;
                    continue;
                }
                _ => {}
            }
            // In raw mode the header's own size is what is read: an archive whose PAX size
            // says otherwise would read differently in another tool.
            if let Some(size) = pax_size.take()
                && std::str::from_utf8(&size).ok().and_then(|s| s.parse().ok())
                    != Some(entry.size())
            {
                return Err(Stop::Corrupt(
                    "a PAX header and its entry disagree on the size".into(),
                ));
            }
            let name = pax_path
                .take()
                .or(long_name.take())
                .unwrap_or_else(|| entry.path_bytes().into_owned());
            out.entry(kind, &name, &mut entry)?;
        }
    }
    // The rest of the stream, so a cut-off download or a bad checksum in the gzip trailer is
    // caught even when the tar's end marker came first.
    let mut rest = archive.into_inner().take(MAX_TRAILER + 1);
    let trailing = io::copy(&mut rest, &mut io::sink()).map_err(corrupt)?;
    if trailing > MAX_TRAILER {
        return Err(Stop::Corrupt("data after the end of the archive".into()));
    }
    Ok(out.written)
}

/// Where an extraction writes, and what it has written.
struct Out<'a> {
    root: &'a Path,
    caps: Caps,
    /// Directories known to be real directories made here, as a tree: (parent, name) → id,
    /// the root being 0. A name is looked up one component at a time, each hashed alone.
    made: HashMap<(usize, Vec<u8>), usize>,
    written: Written,
    entries: u64,
    buf: Vec<u8>,
    tripped: Tripped,
}

/// What an entry's name means here.
#[derive(Debug, PartialEq, Eq)]
enum Name {
    /// The archive's top folder itself (or an empty name): nothing to write.
    Top,
    /// A path below the root, the top folder stripped.
    Below(PathBuf),
    /// Absolute, or with `..`: never written.
    Refused,
}

fn name_of(raw: &[u8]) -> Name {
    let path = Path::new(OsStr::from_bytes(raw));
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) | Component::ParentDir => {
                return Name::Refused;
            }
        }
    }
    if parts.len() <= 1 {
        return Name::Top;
    }
    Name::Below(parts[1..].iter().collect())
}

impl Out<'_> {
    fn entry<R: Read>(
        &mut self,
        kind: EntryType,
        raw: &[u8],
        data: &mut tar::Entry<'_, R>,
    ) -> Result<(), Stop> {
        let name = name_of(raw);
        if name == Name::Top && matches!(kind, EntryType::Directory) {
            return Ok(());
        }
        self.entries += 1;
        if self.entries > self.caps.max_entries {
            return Err(Stop::OverEntries);
        }
        let rel = match name {
            Name::Below(rel) => rel,
            Name::Top | Name::Refused => {
                self.written.left_out.refused += 1;
                return Ok(());
            }
        };
        if rel.components().count() > self.caps.max_depth {
            return Err(Stop::TooDeep);
        }
        match kind {
            EntryType::Regular | EntryType::Continuous => self.file(&rel, data),
            EntryType::Directory => {
                if !self.dir(&rel, true)? {
                    self.written.left_out.refused += 1;
                }
                Ok(())
            }
            EntryType::Symlink | EntryType::Link => {
                self.written.left_out.links += 1;
                Ok(())
            }
            _ => {
                self.written.left_out.special += 1;
                Ok(())
            }
        }
    }

    /// Makes `rel` and its parents, as real directories; `listed` when `rel` is an entry of
    /// the archive, whose parents count as entries of their own when they are made here.
    /// `false` when something other than a directory is in the way (or the name cannot be
    /// made), so the entry is left out.
    fn dir(&mut self, rel: &Path, listed: bool) -> Result<bool, Stop> {
        let mut full = self.root.to_path_buf();
        let mut id = 0;
        let mut parts = rel.components().peekable();
        while let Some(part) = parts.next() {
            let name = part.as_os_str();
            full.push(name);
            let key = (id, name.as_bytes().to_vec());
            if let Some(&child) = self.made.get(&key) {
                id = child;
                continue;
            }
            if !(listed && parts.peek().is_none()) {
                self.entries += 1;
                if self.entries > self.caps.max_entries {
                    return Err(Stop::OverEntries);
                }
            }
            match DirBuilder::new().mode(0o700).create(&full) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    // Only this code writes here and it makes no links, but a file entry may
                    // have taken the name.
                    match std::fs::symlink_metadata(&full) {
                        Ok(meta) if meta.file_type().is_dir() => {}
                        _ => return Ok(false),
                    }
                }
                Err(e) => return name_error(e),
            }
            let child = self.made.len() + 1;
            self.made.insert(key, child);
            id = child;
        }
        Ok(true)
    }

    fn file<R: Read>(&mut self, rel: &Path, data: &mut tar::Entry<'_, R>) -> Result<(), Stop> {
        // The header's size is what will be read: refuse before writing a byte past the cap.
        let size = data.size();
        if self.written.bytes.saturating_add(size) > self.caps.max_bytes {
            return Err(Stop::OverBytes);
        }
        let parent_ok = match rel.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => self.dir(parent, false)?,
            _ => true,
        };
        if !parent_ok {
            self.written.left_out.refused += 1;
            return Ok(());
        }
        let Some(mut file) = self.create(rel)? else {
            self.written.left_out.refused += 1;
            return Ok(());
        };
        let mut left = size;
        while left > 0 {
            let want = self
                .buf
                .len()
                .min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = data
                .read(&mut self.buf[..want])
                .map_err(|e| failed(&self.tripped, e))?;
            if n == 0 {
                return Err(Stop::Corrupt("the archive ends inside a file".into()));
            }
            file.write_all(&self.buf[..n])
                .map_err(|e| Stop::Disk(e.to_string()))?;
            left -= n as u64;
        }
        self.written.files += 1;
        self.written.bytes += size;
        Ok(())
    }

    /// Creates `rel` afresh (mode 0600, never through a link). A regular file already there
    /// (a name given twice) is replaced; anything else there leaves the entry out (`None`).
    fn create(&self, rel: &Path) -> Result<Option<File>, Stop> {
        let full = self.root.join(rel);
        let open = || {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&full)
        };
        match open() {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                match std::fs::symlink_metadata(&full) {
                    Ok(meta) if meta.file_type().is_file() => {
                        std::fs::remove_file(&full).map_err(|e| Stop::Disk(e.to_string()))?;
                        open().map(Some).or_else(name_error)
                    }
                    _ => Ok(None),
                }
            }
            Err(e) => name_error(e),
        }
    }
}

/// A name that could not be made: the disk's fault stops the extraction, anything else (a
/// name too long, a byte the file system refuses) leaves the entry out.
fn name_error<T: Default>(e: io::Error) -> Result<T, Stop> {
    match e.kind() {
        io::ErrorKind::StorageFull
        | io::ErrorKind::QuotaExceeded
        | io::ErrorKind::ReadOnlyFilesystem => Err(Stop::Disk(e.to_string())),
        _ => Ok(T::default()),
    }
}

/// An extension header's content, read whole up to [`MAX_EXTENSION`].
fn read_extension<R: Read>(
    entry: &mut tar::Entry<'_, R>,
    corrupt: impl Fn(io::Error) -> Stop,
) -> Result<Vec<u8>, Stop> {
    let size = entry.size();
    if size > MAX_EXTENSION {
        return Err(Stop::Corrupt(format!(
            "an extended tar header of {size} bytes"
        )));
    }
    let mut data = Vec::with_capacity(size as usize);
    entry.read_to_end(&mut data).map_err(corrupt)?;
    Ok(data)
}

/// The value of the PAX record `key`, if present.
fn pax_record(
    records: &[u8],
    key: &str,
    corrupt: impl Fn(io::Error) -> Stop,
) -> Result<Option<Vec<u8>>, Stop> {
    for record in tar::PaxExtensions::new(records) {
        let record = record.map_err(&corrupt)?;
        if record.key_bytes() == key.as_bytes() {
            return Ok(Some(record.value_bytes().to_vec()));
        }
    }
    Ok(None)
}

/// A read's error as the reason the extraction stopped: the bound it reached, if any.
fn failed(tripped: &Tripped, e: io::Error) -> Stop {
    tripped
        .take()
        .unwrap_or_else(|| Stop::Corrupt(e.to_string()))
}
