//! Confinement: every path a model names is resolved inside the root, one component at a time,
//! without following a symbolic link, and every file is checked again on its open handle.
//!
//! The root is a snapshot we extracted, or the user's own working tree (`--checkout DIR`), which
//! can hold links to anywhere, FIFOs and devices. A directory swapped for a link between our
//! `lstat` and our `open` is the one race left; nobody but the user's own processes write there.

use std::ffi::OsStr;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::Until;

/// Why a path is not served. The text is what the model reads, so it names the model's own
/// path (never the root's place on this machine) and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refusal {
    #[error("`{0}` is absolute; paths are relative to the repository root, e.g. `src/main.rs`")]
    Absolute(String),
    #[error("`{0}` contains `..`; paths stay inside the repository")]
    Parent(String),
    #[error("the path contains a NUL byte")]
    Nul,
    #[error("`{0}` is inside .git/, which these tools do not read")]
    Git(String),
    #[error("`{0}` is a symbolic link; links are not followed")]
    Symlink(String),
    #[error("`{0}` does not exist; list_files shows what does")]
    Missing(String),
    #[error("`{0}` is not a directory")]
    NotDir(String),
    #[error("`{0}` is a directory; list_files shows what it holds")]
    IsDir(String),
    #[error("`{0}` is not a regular file (a device, FIFO or socket); it is not read")]
    Special(String),
    #[error("`{0}` has more than one hard link; such files are not read")]
    HardLink(String),
    #[error("`{0}` changed while it was being opened; try again")]
    Changed(String),
    #[error("`{path}` could not be read: {kind}")]
    Io { path: String, kind: io::ErrorKind },
    #[error("bad glob `{glob}`: {error}")]
    Glob { glob: String, error: String },
}

/// A path inside the root, checked: no component is a link.
#[derive(Debug)]
pub(super) struct Resolved {
    pub abs: PathBuf,
    /// Relative to the root, `/`-separated; empty for the root itself.
    pub rel: String,
    pub meta: Metadata,
}

/// `.git` in any case: on a case-insensitive file system `.GIT/config` is `.git/config`.
pub(super) fn is_git(name: &OsStr) -> bool {
    name.as_bytes().eq_ignore_ascii_case(b".git")
}

/// Checks `raw` without touching the file system: relative, no `..`, no NUL, not in `.git`.
/// Yields its normal components.
fn lexical(raw: &str) -> Result<Vec<&OsStr>, Refusal> {
    if raw.contains('\0') {
        return Err(Refusal::Nul);
    }
    let mut names = Vec::new();
    for component in Path::new(raw).components() {
        match component {
            Component::Prefix(_) | Component::RootDir => {
                return Err(Refusal::Absolute(raw.to_owned()));
            }
            Component::ParentDir => return Err(Refusal::Parent(raw.to_owned())),
            Component::CurDir => {}
            Component::Normal(name) if is_git(name) => return Err(Refusal::Git(raw.to_owned())),
            Component::Normal(name) => names.push(name),
        }
    }
    Ok(names)
}

fn io_refusal(rel: &str, error: &io::Error) -> Refusal {
    let path = if rel.is_empty() { "." } else { rel }.to_owned();
    match error.kind() {
        io::ErrorKind::NotFound => Refusal::Missing(path),
        kind => Refusal::Io { path, kind },
    }
}

/// Resolves `raw` under `root`, `lstat`ing each component and refusing a link anywhere on the
/// way, even one that points inside.
pub(super) fn resolve(root: &Path, raw: &str) -> Result<Resolved, Refusal> {
    let names = lexical(raw)?;
    let mut abs = root.to_path_buf();
    let mut rel = String::new();
    let mut meta = fs::metadata(root).map_err(|e| io_refusal("", &e))?;
    for name in names {
        if !meta.is_dir() {
            return Err(Refusal::NotDir(rel));
        }
        abs.push(name);
        if !rel.is_empty() {
            rel.push('/');
        }
        rel.push_str(&name.to_string_lossy());
        meta = fs::symlink_metadata(&abs).map_err(|e| io_refusal(&rel, &e))?;
        if meta.file_type().is_symlink() {
            return Err(Refusal::Symlink(rel));
        }
    }
    Ok(Resolved { abs, rel, meta })
}

/// What makes a file servable, from its `lstat` or its handle's `fstat`.
fn check_file(rel: &str, meta: &Metadata) -> Result<(), Refusal> {
    let rel = if rel.is_empty() { "." } else { rel };
    let ft = meta.file_type();
    if ft.is_symlink() {
        Err(Refusal::Symlink(rel.to_owned()))
    } else if ft.is_dir() {
        Err(Refusal::IsDir(rel.to_owned()))
    } else if !ft.is_file() {
        Err(Refusal::Special(rel.to_owned()))
    } else if meta.nlink() > 1 {
        // A hard link can name a file outside the tree; nothing in a path shows it.
        Err(Refusal::HardLink(rel.to_owned()))
    } else {
        Ok(())
    }
}

/// Opens a resolved regular file, then checks the handle itself: whatever the path became
/// after our `lstat`, the file read is the regular, singly-linked file we checked.
pub(super) fn open_file(found: &Resolved) -> Result<(File, Metadata), Refusal> {
    check_file(&found.rel, &found.meta)?;
    let file = OpenOptions::new()
        .read(true)
        // No following a link swapped in as the last component, and no blocking should it
        // have become a FIFO (O_NONBLOCK does nothing to a regular file's reads).
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(&found.abs)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ELOOP) => Refusal::Symlink(found.rel.clone()),
            _ => io_refusal(&found.rel, &e),
        })?;
    let meta = file.metadata().map_err(|e| io_refusal(&found.rel, &e))?;
    check_file(&found.rel, &meta)?;
    if (meta.dev(), meta.ino()) != (found.meta.dev(), found.meta.ino()) {
        return Err(Refusal::Changed(found.rel.clone()));
    }
    Ok((file, meta))
}

/// Where a walk starts and which files it keeps.
pub(super) enum Target {
    /// A file or a directory; the whole root when the model gave no path.
    Path(Resolved),
    /// Files under `base` whose path (or, for a glob without `/`, whose name) matches.
    Glob {
        base: Resolved,
        matcher: GlobMatcher,
        by_name: bool,
    },
}

fn is_glob(raw: &str) -> bool {
    raw.contains(['*', '?', '[', '{'])
}

/// Reads a tool's optional `path`: nothing (the root), a file or directory, or a glob.
pub(super) fn target(root: &Path, raw: Option<&str>) -> Result<Target, Refusal> {
    let raw = raw.unwrap_or("");
    if !is_glob(raw) {
        let found = resolve(root, raw)?;
        if !found.meta.is_dir() {
            // Named alone, a file that would be passed over is refused, saying why.
            check_file(&found.rel, &found.meta)?;
        }
        return Ok(Target::Path(found));
    }
    let names = lexical(raw)?;
    let names: Vec<String> = names.iter().map(|n| n.to_string_lossy().into()).collect();
    // Walk only from the literal directories before the first wildcard.
    let literal: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .take_while(|n| !is_glob(n))
        .collect();
    let base = resolve(root, &literal.join("/"))?;
    let pattern = names.join("/");
    let glob = GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| Refusal::Glob {
            glob: raw.to_owned(),
            error: e.kind().to_string(),
        })?;
    Ok(Target::Glob {
        base,
        matcher: glob.compile_matcher(),
        by_name: !pattern.contains('/'),
    })
}

/// A regular, singly-linked file met by a walk.
pub(super) struct FileEntry {
    pub found: Resolved,
}

/// What a walk passed over, for the model to know what it did not see.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Skipped {
    pub links: usize,
    pub special: usize,
    pub hard_links: usize,
    pub unreadable_dirs: usize,
    /// The walk stopped at its entry cap.
    pub walk_cap: bool,
    /// The walk stopped at the call's time limit, or the lens ended.
    pub stopped: bool,
}

impl Skipped {
    /// "3 symbolic links, 1 special file", or `None` when nothing was skipped.
    pub fn describe(&self) -> Option<String> {
        let parts: Vec<String> = [
            (self.links, "symbolic link", "symbolic links"),
            (self.special, "special file", "special files"),
            (self.hard_links, "hard-linked file", "hard-linked files"),
            (
                self.unreadable_dirs,
                "unreadable directory",
                "unreadable directories",
            ),
        ]
        .into_iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, one, many)| super::text::count(n, one, many))
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// Visits the regular files of `target` in sorted path order (by bytes of each component),
/// never following a link and never entering `.git`. Visits at most `max_entries` directory
/// entries, and stops when `until` has passed. `visit` returns `Break` to stop early.
pub(super) fn walk(
    target: &Target,
    max_entries: usize,
    until: &Until,
    mut visit: impl FnMut(FileEntry) -> ControlFlow<()>,
) -> Skipped {
    let mut skipped = Skipped::default();
    let (start, glob) = match target {
        Target::Path(found) => (found, None),
        Target::Glob {
            base,
            matcher,
            by_name,
        } => (base, Some((matcher, *by_name))),
    };
    let keep = |rel: &str| match glob {
        None => true,
        Some((matcher, true)) => matcher.is_match(rel.rsplit('/').next().unwrap_or(rel)),
        Some((matcher, false)) => matcher.is_match(rel),
    };
    if !start.meta.is_dir() {
        if check_file(&start.rel, &start.meta).is_ok() && keep(&start.rel) {
            let found = Resolved {
                abs: start.abs.clone(),
                rel: start.rel.clone(),
                meta: start.meta.clone(),
            };
            let _ = visit(FileEntry { found });
        }
        return skipped;
    }
    // Directories (no metadata) and files (their `lstat`) still to visit, the next on top.
    let mut stack: Vec<(PathBuf, String, Option<Metadata>)> =
        vec![(start.abs.clone(), start.rel.clone(), None)];
    let mut seen = 0usize;
    while let Some((abs, rel, file_meta)) = stack.pop() {
        if until.passed() {
            skipped.stopped = true;
            return skipped;
        }
        if let Some(meta) = file_meta {
            let found = Resolved { abs, rel, meta };
            if visit(FileEntry { found }).is_break() {
                return skipped;
            }
            continue;
        }
        let Ok(entries) = fs::read_dir(&abs) else {
            skipped.unreadable_dirs += 1;
            continue;
        };
        let mut children = Vec::new();
        for entry in entries {
            seen += 1;
            if seen > max_entries {
                skipped.walk_cap = true;
                return skipped;
            }
            // A directory of a million entries is read one entry at a time.
            if seen.is_multiple_of(1024) && until.passed() {
                skipped.stopped = true;
                return skipped;
            }
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            // `DirEntry::file_type` does not follow links.
            let Ok(ft) = entry.file_type() else { continue };
            let child_rel = if rel.is_empty() {
                name.to_string_lossy().into_owned()
            } else {
                format!("{rel}/{}", name.to_string_lossy())
            };
            if ft.is_symlink() {
                skipped.links += usize::from(keep(&child_rel));
            } else if ft.is_dir() {
                if !is_git(&name) {
                    children.push((name, child_rel, None));
                }
            } else if ft.is_file() {
                if is_git(&name) {
                    // A submodule's `.git` file points at the superproject's `.git`.
                    continue;
                }
                match entry.metadata() {
                    Ok(meta) if meta.nlink() > 1 => {
                        skipped.hard_links += usize::from(keep(&child_rel));
                    }
                    Ok(meta) if keep(&child_rel) => children.push((name, child_rel, Some(meta))),
                    _ => {}
                }
            } else {
                skipped.special += usize::from(keep(&child_rel));
            }
        }
        children.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        for (name, child_rel, meta) in children.into_iter().rev() {
            stack.push((abs.join(name), child_rel, meta));
        }
    }
    skipped
}
