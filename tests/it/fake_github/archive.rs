//! The repository archive, as GitHub serves it: `GET /repos/{o}/{r}/tarball/{sha}` answers 302
//! with a `Location` on another host (codeload), whose short-lived URL carries its own token and
//! serves a gzip'd tar: a leading `pax_global_header` with the commit, then one top folder
//! `owner-repo-sha7/`. The codeload route refuses a request that carries `Authorization` (a
//! token forwarded across hosts fails the test) and one that came to the API's host.

use std::io::Write as _;

use axum::body::Body;
use axum::response::Response;
use flate2::Compression;
use flate2::write::GzEncoder;
use tar::{EntryType, Header};

use super::world::World;
use super::{FileSpec, hunks};

/// One entry of a commit's tree as a test wants it archived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeEntry {
    /// A regular file below the top folder.
    File(String, Vec<u8>),
    /// A symbolic link below the top folder, to any target.
    Symlink(String, String),
    /// A hard link below the top folder, to any target.
    HardLink(String, String),
    /// A FIFO below the top folder.
    Fifo(String),
    /// A regular file with exactly this name in the archive (not below the top folder): `..`,
    /// absolute names.
    RawName(String, Vec<u8>),
}

impl TreeEntry {
    pub fn file(path: &str, content: &str) -> TreeEntry {
        TreeEntry::File(path.to_owned(), content.as_bytes().to_vec())
    }
}

/// The tree of `sha` in repository `key`: the one a test set, else the new side of the files
/// of the PR head with that SHA; `None` for a commit the fake does not know.
pub(super) fn tree(w: &World, key: &str, sha: &str) -> Option<Vec<TreeEntry>> {
    let repo = w.repos.get(key)?;
    if let Some(tree) = repo.trees.get(sha) {
        return Some(tree.clone());
    }
    repo.prs.values().find_map(|pr| {
        let (_, files) = pr.heads.iter().find(|(head, _)| head == sha)?;
        Some(files.iter().filter_map(new_side).collect())
    })
}

/// A file's content at the head, as far as its patch shows it.
fn new_side(f: &FileSpec) -> Option<TreeEntry> {
    if f.status == "removed" {
        return None;
    }
    let patch = f.patch.as_deref()?;
    let mut text = String::new();
    for line in hunks::lines(patch) {
        if let Some(rest) = line.strip_prefix('+').or_else(|| line.strip_prefix(' ')) {
            text.push_str(rest);
            text.push('\n');
        }
    }
    Some(TreeEntry::File(f.filename.clone(), text.into_bytes()))
}

/// The gzip'd tar of `tree` as GitHub names it.
pub(super) fn tarball(owner: &str, name: &str, sha: &str, tree: &[TreeEntry]) -> Vec<u8> {
    let top = format!("{owner}-{name}-{}", &sha[..7.min(sha.len())]);
    let mut tar = tar::Builder::new(Vec::new());
    let comment = format!("comment={sha}\n");
    let record = format!("{} {comment}", comment.len() + 3);
    append(
        &mut tar,
        "pax_global_header",
        EntryType::XGlobalHeader,
        record.as_bytes(),
        None,
    );
    append(
        &mut tar,
        &format!("{top}/"),
        EntryType::Directory,
        b"",
        None,
    );
    for entry in tree {
        match entry {
            TreeEntry::File(path, data) => {
                let mut h = Header::new_gnu();
                h.set_size(data.len() as u64);
                h.set_mode(0o644);
                h.set_entry_type(EntryType::Regular);
                tar.append_data(&mut h, format!("{top}/{path}"), data.as_slice())
                    .expect("append file");
            }
            TreeEntry::Symlink(path, target) => append(
                &mut tar,
                &format!("{top}/{path}"),
                EntryType::Symlink,
                b"",
                Some(target),
            ),
            TreeEntry::HardLink(path, target) => append(
                &mut tar,
                &format!("{top}/{path}"),
                EntryType::Link,
                b"",
                Some(target),
            ),
            TreeEntry::Fifo(path) => append(
                &mut tar,
                &format!("{top}/{path}"),
                EntryType::Fifo,
                b"",
                None,
            ),
            TreeEntry::RawName(name, data) => {
                append(&mut tar, name, EntryType::Regular, data, None)
            }
        }
    }
    let tar = tar.into_inner().expect("tar");
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    gz.write_all(&tar).expect("gzip");
    gz.finish().expect("gzip")
}

/// An entry with exactly this name and link target (`tar::Builder` refuses `..` and absolute
/// names, which a hostile archive has).
fn append(
    tar: &mut tar::Builder<Vec<u8>>,
    name: &str,
    kind: EntryType,
    data: &[u8],
    link: Option<&str>,
) {
    let mut h = Header::new_ustar();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    if let Some(link) = link {
        h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
    }
    h.set_entry_type(kind);
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    tar.append(&h, data).expect("append");
}

/// A gzip'd tar response.
pub(super) fn gzip_response(bytes: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(bytes));
    response.headers_mut().insert(
        "content-type",
        axum::http::HeaderValue::from_static("application/x-gzip"),
    );
    response
}
