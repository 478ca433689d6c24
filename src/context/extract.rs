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

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Component, Path, PathBuf};

use tar::EntryType;

use super::LeftOut;

/// Largest GNU long name or PAX header read (`PATH_MAX` is 4096; room for other records).
const MAX_EXTENSION: u64 = 64 << 10;
/// Most bytes read after the archive's end marker (the gzip trailer, a tar's padding).
const MAX_TRAILER: u64 = 1 << 20;
/// The copy buffer: large enough that a big file is written in few calls.
const COPY_BUFFER: usize = 256 << 10;

/// What an extraction may write.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Bytes of regular files.
    pub max_bytes: u64,
    /// Entries of the archive, every kind (written or left out).
    pub max_entries: u64,
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
    /// The gzip or tar data is broken (or the download ended early): the reader's error.
    Corrupt(String),
    /// The disk refused a write.
    Disk(String),
}

/// Extracts the gzip'd tar read from `from` into `root`, an empty directory.
pub fn extract(from: impl Read, root: &Path, caps: Caps) -> Result<Written, Stop> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(from));
    let mut out = Out {
        root,
        caps,
        made: HashSet::new(),
        written: Written::default(),
        entries: 0,
        buf: vec![0; COPY_BUFFER],
    };
    {
        let entries = archive.entries().map_err(corrupt)?.raw(true);
        let mut long_name: Option<Vec<u8>> = None;
        let mut pax_path: Option<Vec<u8>> = None;
        let mut pax_size: Option<Vec<u8>> = None;
        for entry in entries {
            let mut entry = entry.map_err(corrupt)?;
            let kind = entry.header().entry_type();
            match kind {
                EntryType::XGlobalHeader | EntryType::GNULongLink => {
                    // Nothing needed from them; read past with a cap, like any header.
                    read_extension(&mut entry)?;
                    continue;
                }
                EntryType::GNULongName => {
                    let mut name = read_extension(&mut entry)?;
                    if name.last() == Some(&0) {
                        name.pop();
                    }
                    long_name = Some(name);
                    continue;
                }
                EntryType::XHeader => {
                    let records = read_extension(&mut entry)?;
                    pax_path = pax_record(&records, "path")?;
                    pax_size = pax_record(&records, "size")?;
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
    /// Directories (relative to the root) known to be real directories made here.
    made: HashSet<PathBuf>,
    written: Written,
    entries: u64,
    buf: Vec<u8>,
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
        match kind {
            EntryType::Regular | EntryType::Continuous => self.file(&rel, data),
            EntryType::Directory => {
                if !self.dir(&rel)? {
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

    /// Makes `rel` and its parents, as real directories. `false` when something other than a
    /// directory is in the way (or the name cannot be made), so the entry is left out.
    fn dir(&mut self, rel: &Path) -> Result<bool, Stop> {
        if self.made.contains(rel) {
            return Ok(true);
        }
        let mut at = PathBuf::new();
        for part in rel.components() {
            at.push(part);
            if self.made.contains(&at) {
                continue;
            }
            let full = self.root.join(&at);
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
            self.made.insert(at.clone());
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
            Some(parent) if !parent.as_os_str().is_empty() => self.dir(parent)?,
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
            let n = data.read(&mut self.buf[..want]).map_err(corrupt)?;
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
fn read_extension<R: Read>(entry: &mut tar::Entry<'_, R>) -> Result<Vec<u8>, Stop> {
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
fn pax_record(records: &[u8], key: &str) -> Result<Option<Vec<u8>>, Stop> {
    for record in tar::PaxExtensions::new(records) {
        let record = record.map_err(corrupt)?;
        if record.key_bytes() == key.as_bytes() {
            return Ok(Some(record.value_bytes().to_vec()));
        }
    }
    Ok(None)
}

fn corrupt(e: io::Error) -> Stop {
    Stop::Corrupt(e.to_string())
}
