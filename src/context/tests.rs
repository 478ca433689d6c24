use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;
use tar::{EntryType, Header};

use super::extract::{Caps, Stop, Written, extract};
use super::*;

const TOP: &str = "octo-app-1a2b3c4";
const BIG: Caps = Caps::new(1 << 30, 1_000_000);

/// A tar being written by hand, so a test can put in any name or kind `tar::Builder` refuses.
struct Tarball {
    tar: tar::Builder<Vec<u8>>,
}

impl Tarball {
    /// An archive as GitHub makes one: a PAX global header with the commit, then the top folder.
    fn github() -> Tarball {
        let mut t = Tarball {
            tar: tar::Builder::new(Vec::new()),
        };
        let comment = format!("52 comment={}\n", "e".repeat(40));
        t.raw(
            b"pax_global_header",
            EntryType::XGlobalHeader,
            comment.as_bytes(),
            None,
        );
        t.raw(
            format!("{TOP}/").as_bytes(),
            EntryType::Directory,
            b"",
            None,
        );
        t
    }

    /// One entry with exactly this name (no checks), kind, data and link target.
    fn raw(&mut self, name: &[u8], kind: EntryType, data: &[u8], link: Option<&[u8]>) -> &mut Self {
        let mut h = Header::new_ustar();
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        if let Some(link) = link {
            h.as_old_mut().linkname[..link.len()].copy_from_slice(link);
        }
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o4755);
        h.set_cksum();
        self.tar.append(&h, data).expect("append");
        self
    }

    /// A regular file below the top folder.
    fn file(&mut self, rel: &str, data: &[u8]) -> &mut Self {
        let mut h = Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o755);
        h.set_entry_type(EntryType::Regular);
        self.tar
            .append_data(&mut h, format!("{TOP}/{rel}"), data)
            .expect("append file");
        self
    }

    fn below(&mut self, rel: &str, kind: EntryType, link: Option<&str>) -> &mut Self {
        let name = format!("{TOP}/{rel}");
        self.raw(name.as_bytes(), kind, b"", link.map(str::as_bytes))
    }

    fn gz(self) -> Vec<u8> {
        let tar = self.tar.into_inner().expect("tar");
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(&tar).expect("gzip");
        gz.finish().expect("gzip")
    }
}

fn unpack(gz: &[u8], caps: Caps) -> (tempfile::TempDir, Result<Written, Stop>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    std::fs::create_dir(&root).expect("root");
    let result = extract(gz, &root, caps);
    (dir, result)
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o7777
}

/// Every path below `root`, relative, sorted, with a `/` after directories.
fn tree(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let entry = entry.expect("entry");
            let rel = entry
                .path()
                .strip_prefix(root)
                .expect("below")
                .display()
                .to_string();
            let kind = entry.file_type().expect("type");
            assert!(!kind.is_symlink(), "a link in the snapshot: {rel}");
            if kind.is_dir() {
                out.push(format!("{rel}/"));
                stack.push(entry.path());
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_github_archive_is_written_below_the_top_folder_with_private_modes() {
    let long = format!("deep/{}/name.rs", "d".repeat(150));
    let mut t = Tarball::github();
    t.file("README.md", b"# app\n")
        .file("src/lib.rs", b"pub fn f() {}\n")
        .file(&long, b"long\n")
        .below("empty/", EntryType::Directory, None);
    let (dir, result) = unpack(&t.gz(), BIG);
    let root = dir.path().join("root");
    let written = result.expect("extracted");
    assert_eq!(written.files, 3);
    assert_eq!(written.bytes, 6 + 14 + 5);
    assert_eq!(written.left_out, LeftOut::default());
    assert_eq!(
        tree(&root),
        [
            "README.md".to_owned(),
            "deep/".into(),
            format!("deep/{}/", "d".repeat(150)),
            format!("deep/{}/name.rs", "d".repeat(150)),
            "empty/".into(),
            "src/".into(),
            "src/lib.rs".into(),
        ]
    );
    assert_eq!(
        std::fs::read(root.join("src/lib.rs")).unwrap(),
        b"pub fn f() {}\n"
    );
    // The archive's modes (0755, set-uid) are not kept.
    assert_eq!(mode(&root.join("src/lib.rs")), 0o600);
    assert_eq!(mode(&root.join("src")), 0o700);
    assert_eq!(mode(&root.join("empty")), 0o700);
}

#[test]
fn hostile_entries_write_nothing_outside_and_are_counted() {
    let outside = tempfile::tempdir().expect("outside");
    let key = outside.path().join("app-key.pem");
    std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\n").unwrap();
    let key_path = key.display().to_string();
    let outside_dir = outside.path().display().to_string();
    let mut t = Tarball::github();
    t.file("ok.txt", b"ok\n")
        // Links: to the App's key, to a directory outside, a hard link to an outside file.
        .below("key.pem", EntryType::Symlink, Some(&key_path))
        .below("up", EntryType::Symlink, Some("../../../.."))
        .below("out", EntryType::Symlink, Some(&outside_dir))
        .below("hard", EntryType::Link, Some(&key_path))
        // A file under the symlinked directory: written inside the root, never through it.
        .file("out/pwned.txt", b"pwned\n")
        // Special files.
        .below("fifo", EntryType::Fifo, None)
        .below("tty", EntryType::Char, None)
        .below("disk", EntryType::Block, None);
    // Names that climb out or start at the root.
    t.raw(
        format!("{TOP}/../../escape.txt").as_bytes(),
        EntryType::Regular,
        b"x",
        None,
    )
    .raw(
        format!("{TOP}/a/../../escape2.txt").as_bytes(),
        EntryType::Regular,
        b"x",
        None,
    )
    .raw(
        format!("/{}/abs.txt", outside.path().display()).as_bytes(),
        EntryType::Regular,
        b"x",
        None,
    )
    .raw(b"../escape3.txt", EntryType::Regular, b"x", None);
    let (dir, result) = unpack(&t.gz(), BIG);
    let root = dir.path().join("root");
    let written = result.expect("extracted");
    assert_eq!(
        written.left_out,
        LeftOut {
            links: 4,
            special: 3,
            refused: 4,
        }
    );
    assert_eq!(written.files, 2);
    assert_eq!(tree(&root), ["ok.txt", "out/", "out/pwned.txt"]);
    // Nothing landed outside: next to the root, in the outside directory, or above.
    assert_eq!(
        tree(dir.path()),
        ["root/", "root/ok.txt", "root/out/", "root/out/pwned.txt"]
    );
    assert_eq!(tree(outside.path()), ["app-key.pem"]);
    assert!(!dir.path().parent().unwrap().join("escape.txt").exists());
    // And the key cannot be read through the snapshot.
    assert!(std::fs::read(root.join("key.pem")).is_err());
    assert!(std::fs::read(root.join("hard")).is_err());
}

#[test]
fn a_name_given_twice_keeps_the_last_and_a_file_never_becomes_a_directory() {
    let mut t = Tarball::github();
    t.file("a.txt", b"first\n")
        .file("a.txt", b"second\n")
        .file("f", b"file\n")
        .file("f/inner.txt", b"x\n")
        .below("f", EntryType::Directory, None);
    let (dir, result) = unpack(&t.gz(), BIG);
    let root = dir.path().join("root");
    let written = result.expect("extracted");
    assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"second\n");
    assert_eq!(tree(&root), ["a.txt", "f"]);
    assert_eq!(written.left_out.refused, 2);
}

#[test]
fn over_the_byte_cap_stops_before_writing_it() {
    let mut t = Tarball::github();
    t.file("a", &[b'a'; 600]).file("b", &[b'b'; 600]);
    let gz = t.gz();
    let (_dir, result) = unpack(
        &gz,
        Caps {
            max_bytes: 1000,
            ..BIG
        },
    );
    assert_eq!(result, Err(Stop::OverBytes));
    let (_dir, result) = unpack(
        &gz,
        Caps {
            max_bytes: 1200,
            ..BIG
        },
    );
    assert_eq!(result.map(|w| w.bytes), Ok(1200));
}

#[test]
fn over_the_entry_cap_counts_left_out_entries_too() {
    let mut t = Tarball::github();
    t.file("a", b"a")
        .below("l1", EntryType::Symlink, Some("a"))
        .below("l2", EntryType::Symlink, Some("a"));
    let gz = t.gz();
    let caps = |n| Caps {
        max_entries: n,
        ..BIG
    };
    assert_eq!(unpack(&gz, caps(2)).1, Err(Stop::OverEntries));
    assert_eq!(unpack(&gz, caps(3)).1.map(|w| w.files), Ok(1));
}

#[test]
fn broken_archives_are_corrupt() {
    let mut t = Tarball::github();
    t.file("a.txt", &[b'a'; 100_000]);
    let gz = t.gz();
    // Cut short.
    let (_d, result) = unpack(&gz[..gz.len() / 2], BIG);
    assert!(matches!(result, Err(Stop::Corrupt(_))), "{result:?}");
    // Not gzip.
    let (_d, result) = unpack(b"<html>Unicorn!</html>", BIG);
    assert!(matches!(result, Err(Stop::Corrupt(_))), "{result:?}");
    // A flipped byte in the trailer's checksum.
    let mut bad = gz.clone();
    let at = bad.len() - 6;
    bad[at] ^= 0xff;
    let (_d, result) = unpack(&bad, BIG);
    assert!(matches!(result, Err(Stop::Corrupt(_))), "{result:?}");
}

#[test]
fn a_huge_extended_header_is_refused_without_reading_it() {
    let mut t = Tarball::github();
    let name = vec![b'n'; 100 << 10];
    t.raw(b"././@LongLink", EntryType::GNULongName, &name, None);
    t.file("a", b"a");
    let (_d, result) = unpack(&t.gz(), BIG);
    assert!(
        matches!(&result, Err(Stop::Corrupt(why)) if why.contains("extended")),
        "{result:?}"
    );
}

#[test]
fn a_pax_size_that_disagrees_with_its_header_is_refused() {
    let mut t = Tarball::github();
    let record = format!("{} size=5\n", " size=5\n".len() + 2);
    t.raw(b"pax", EntryType::XHeader, record.as_bytes(), None)
        .raw(
            format!("{TOP}/a").as_bytes(),
            EntryType::Regular,
            b"abc",
            None,
        );
    let (_d, result) = unpack(&t.gz(), BIG);
    assert!(matches!(result, Err(Stop::Corrupt(_))), "{result:?}");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn an_extraction_streams_chunks_and_its_snapshot_is_removed_when_dropped() {
    let mut t = Tarball::github();
    t.file("src/lib.rs", &[b'x'; 300_000]);
    let gz = t.gz();
    runtime().block_on(async {
        let mut ex = Extraction::start(BIG).expect("start");
        for chunk in gz.chunks(7000) {
            assert!(ex.push(Bytes::copy_from_slice(chunk)).await);
        }
        let snapshot = ex.finish().await.expect("snapshot");
        let root = snapshot.root();
        assert!(root.starts_with(parent_dir()));
        assert_eq!(mode(&root), 0o700);
        assert_eq!(
            std::fs::read(root.join("src/lib.rs")).unwrap().len(),
            300_000
        );
        let report = snapshot.report();
        assert_eq!(report.source, Some(Source::Tarball));
        assert_eq!((report.files, report.bytes), (1, 300_000));
        drop(snapshot);
        assert!(!root.exists());

        let mut ex = Extraction::start(BIG).expect("start");
        assert!(ex.push(Bytes::copy_from_slice(&gz)).await);
        let snapshot = ex.finish().await.expect("snapshot");
        let root = snapshot.root();
        snapshot.remove().await;
        assert!(!root.exists());
    });
}

#[test]
fn a_failed_or_abandoned_extraction_leaves_nothing() {
    let mut t = Tarball::github();
    t.file("a", &[b'a'; 50_000]).file("b", &[b'b'; 50_000]);
    let gz = t.gz();
    runtime().block_on(async {
        // Over the cap: the reason, and the directory is gone.
        let mut ex = Extraction::start(Caps {
            max_bytes: 60_000,
            ..BIG
        })
        .expect("start");
        let dir = ex_dir(&ex);
        for chunk in gz.chunks(1000) {
            if !ex.push(Bytes::copy_from_slice(chunk)).await {
                break;
            }
        }
        assert_eq!(
            ex.finish().await.map(|s| s.root()),
            Err(Unavailable::OverBytes { max: 60_000 })
        );
        assert!(!dir.exists());

        // The download failed part-way.
        let mut ex = Extraction::start(BIG).expect("start");
        let dir = ex_dir(&ex);
        assert!(ex.push(Bytes::copy_from_slice(&gz[..gz.len() / 2])).await);
        let why = ex.abandon(Unavailable::Download("cut".into())).await;
        assert_eq!(why, Unavailable::Download("cut".into()));
        assert!(!dir.exists());

        // Dropped part-way (the round was cancelled): the thread removes it on its own.
        let mut ex = Extraction::start(BIG).expect("start");
        let dir = ex_dir(&ex);
        assert!(ex.push(Bytes::copy_from_slice(&gz[..100])).await);
        drop(ex);
        for _ in 0..200 {
            if !dir.exists() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(!dir.exists());

        // A gzip'd page that is not a tar at all.
        let mut ex = Extraction::start(BIG).expect("start");
        let mut page = GzEncoder::new(Vec::new(), Compression::fast());
        page.write_all(&[b'<'; 2000]).unwrap();
        assert!(ex.push(Bytes::from(page.finish().unwrap())).await);
        assert!(matches!(ex.finish().await, Err(Unavailable::Corrupt(_))));
    });
}

fn ex_dir(ex: &Extraction) -> std::path::PathBuf {
    assert!(ex.root.exists());
    ex.root.clone()
}

#[test]
fn a_checkout_is_the_users_directory_and_is_never_removed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
    let snapshot = Snapshot::checkout(dir.path()).expect("checkout");
    let root = snapshot.root();
    assert!(root.is_absolute());
    assert_eq!(snapshot.report().source, Some(Source::Checkout));
    drop(snapshot);
    assert!(dir.path().join("a.rs").exists());
    let file = dir.path().join("a.rs");
    assert_eq!(
        Snapshot::checkout(&file).unwrap_err().kind(),
        std::io::ErrorKind::NotADirectory
    );
    assert_eq!(
        Snapshot::checkout(&dir.path().join("missing"))
            .unwrap_err()
            .kind(),
        std::io::ErrorKind::NotFound
    );
}

#[test]
fn sweep_removes_what_dead_processes_left_and_keeps_live_ones() {
    let parent = private_parent().expect("parent");
    assert_eq!(mode(&parent), 0o700);
    // No process has an id this large (Linux's pid_max is at most 2^22).
    let dead = parent.join("99999999-sweeptest");
    std::fs::create_dir_all(dead.join("src")).unwrap();
    std::fs::write(dead.join("src/lib.rs"), "x").unwrap();
    let live = tempfile::Builder::new()
        .prefix(&format!("{}-", std::process::id()))
        .tempdir_in(&parent)
        .unwrap();
    let removed = sweep().expect("sweep");
    assert!(removed >= 1);
    assert!(!dead.exists());
    assert!(live.path().exists());
}

#[test]
fn chunk_boundaries_do_not_matter() {
    // The same archive fed a byte at a time through the reader extracts the same.
    let mut t = Tarball::github();
    t.file("x/y.txt", b"hello\n");
    let gz = t.gz();
    struct OneByte<'a>(&'a [u8]);
    impl std::io::Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((b, rest)), Some(slot)) => {
                    *slot = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let written = extract(OneByte(&gz), dir.path(), BIG).expect("extracted");
    assert_eq!(written.files, 1);
    assert_eq!(
        std::fs::read(dir.path().join("x/y.txt")).unwrap(),
        b"hello\n"
    );
}

/// Crafted archives: a gzip stream put together by hand, so that gigabytes of tar can be made
/// of a few megabytes without being written out.
mod crafted {
    use flate2::{Compress, Compression, Crc, FlushCompress};

    use super::*;

    /// A gzip stream being written: raw deflate, each part flushed whole so that a part given
    /// twice compresses to the same bytes.
    pub(super) struct Gzip {
        deflate: Compress,
        out: Vec<u8>,
        crc: Crc,
    }

    impl Gzip {
        pub(super) fn new() -> Gzip {
            Gzip {
                deflate: Compress::new(Compression::fast(), false),
                // The gzip header: deflate, no name, no time, any OS.
                out: vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff],
                crc: Crc::new(),
            }
        }

        fn compress(&mut self, data: &[u8], flush: FlushCompress) -> Vec<u8> {
            let mut out = Vec::with_capacity(data.len() / 2 + 1024);
            let start = self.deflate.total_in();
            loop {
                let done = usize::try_from(self.deflate.total_in() - start).expect("small");
                if out.capacity() - out.len() < 1024 {
                    out.reserve(out.capacity());
                }
                let before = out.len();
                self.deflate
                    .compress_vec(&data[done..], &mut out, flush)
                    .expect("deflate");
                let all_in =
                    usize::try_from(self.deflate.total_in() - start).expect("small") == data.len();
                if all_in && out.len() - before < out.capacity() - before {
                    return out;
                }
            }
        }

        /// Tar bytes, compressed.
        pub(super) fn data(&mut self, data: &[u8]) -> &mut Self {
            let bytes = self.compress(data, FlushCompress::Full);
            self.out.extend_from_slice(&bytes);
            self.crc.update(data);
            self
        }

        /// `n` MiB of zeros, compressed once and repeated.
        pub(super) fn zeros(&mut self, n: usize) -> &mut Self {
            let mib = vec![0u8; 1 << 20];
            let bytes = self.compress(&mib, FlushCompress::Full);
            let mut one = Crc::new();
            one.update(&mib);
            for _ in 0..n {
                self.out.extend_from_slice(&bytes);
                self.crc.combine(&one);
            }
            self
        }

        /// `n` empty stored blocks: five bytes each that decompress to nothing.
        pub(super) fn empty_blocks(&mut self, n: usize) -> &mut Self {
            for _ in 0..n {
                self.out.extend_from_slice(&[0, 0, 0, 0xff, 0xff]);
            }
            self
        }

        pub(super) fn finish(mut self) -> Vec<u8> {
            let end = self.compress(&[], FlushCompress::Finish);
            self.out.extend_from_slice(&end);
            self.out.extend_from_slice(&self.crc.sum().to_le_bytes());
            self.out.extend_from_slice(&self.crc.amount().to_le_bytes());
            self.out
        }
    }

    /// The tar bytes of `t`, without its end marker.
    pub(super) fn tar_of(t: Tarball) -> Vec<u8> {
        let mut tar = t.tar.into_inner().expect("tar");
        tar.truncate(tar.len() - 1024);
        tar
    }

    /// One header of `kind` named `name` (a GNU long name first when it needs one) claiming
    /// `size` bytes of data, which the caller adds.
    pub(super) fn header(name: &[u8], kind: EntryType, size: u64) -> Vec<u8> {
        let mut out = Vec::new();
        if name.len() > 99 {
            let mut long = Header::new_gnu();
            long.as_gnu_mut().expect("gnu").name[..13].copy_from_slice(b"././@LongLink");
            long.set_entry_type(EntryType::GNULongName);
            long.set_size(name.len() as u64 + 1);
            long.set_mode(0o644);
            long.set_cksum();
            out.extend_from_slice(long.as_bytes());
            out.extend_from_slice(name);
            out.push(0);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        let mut h = Header::new_gnu();
        let short = &name[..name.len().min(99)];
        h.as_old_mut().name[..short.len()].copy_from_slice(short);
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_mode(0o755);
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out
    }

    /// `chains` chains of directories `depth` deep, each directory its own entry, as the
    /// archive of a crafted repository would hold them.
    pub(super) fn deep_dirs(chains: usize, depth: usize) -> Vec<u8> {
        let mut gz = Gzip::new();
        gz.data(&tar_of(Tarball::github()));
        for c in 0..chains {
            let mut name = format!("{TOP}/c{c}");
            let mut batch = Vec::new();
            for _ in 0..depth {
                name.push_str("/d");
                batch.extend(header(
                    format!("{name}/").as_bytes(),
                    EntryType::Directory,
                    0,
                ));
                if batch.len() > 1 << 20 {
                    gz.data(&std::mem::take(&mut batch));
                }
            }
            gz.data(&batch);
        }
        gz.data(&[0; 1024]);
        gz.finish()
    }

    /// `a.txt` holding `a`, the end marker, the gzip trailer.
    fn end_with_a_file(mut gz: Gzip) -> Vec<u8> {
        let mut file = header(format!("{TOP}/a.txt").as_bytes(), EntryType::Regular, 2);
        file.extend_from_slice(b"a\n");
        file.resize(1024, 0);
        gz.data(&file).data(&[0; 1024]);
        gz.finish()
    }

    /// `n` PAX extended headers in a row, then one file.
    pub(super) fn extension_headers(n: usize) -> Vec<u8> {
        let mut gz = Gzip::new();
        gz.data(&tar_of(Tarball::github()));
        let record = b"30 comment=crafted-padding-xx\n";
        let mut one = header(b"pax", EntryType::XHeader, record.len() as u64);
        one.extend_from_slice(record);
        one.resize(1024, 0);
        let block: Vec<u8> = one.repeat(1024);
        for _ in 0..n / 1024 {
            gz.data(&block);
        }
        gz.data(&one.repeat(n % 1024));
        end_with_a_file(gz)
    }

    /// A symbolic link whose entry carries `mib` MiB of data, then one file.
    pub(super) fn fat_link(mib: usize) -> Vec<u8> {
        let mut gz = Gzip::new();
        gz.data(&tar_of(Tarball::github()));
        let size = u64::try_from(mib).expect("small") << 20;
        gz.data(&header(
            format!("{TOP}/link").as_bytes(),
            EntryType::Symlink,
            size,
        ));
        gz.zeros(mib);
        end_with_a_file(gz)
    }

    /// An ordinary archive behind `mib` MiB of deflate blocks that hold nothing.
    pub(super) fn empty_blocks_first(mib: usize) -> Vec<u8> {
        let mut t = Tarball::github();
        t.file("a.txt", b"a\n");
        let mut gz = Gzip::new();
        gz.empty_blocks((mib << 20) / 5);
        gz.data(&t.tar.into_inner().expect("tar"));
        gz.finish()
    }
}

/// The caps an issue's measurements used: 1 MB of files, 10 entries.
const SMALL: Caps = Caps::new(1_000_000, 10);

fn timed(gz: &[u8], caps: Caps) -> (Result<Written, Stop>, std::time::Duration) {
    let started = std::time::Instant::now();
    let (_dir, result) = unpack(gz, caps);
    (result, started.elapsed())
}

#[test]
fn a_deep_name_stops_the_extraction_at_once() {
    // 8 chains of directories 2,000 deep: cubic work in the depth before (about 4 s for one
    // chain 1,000 deep in a debug build); the 101st level stops it.
    let (result, took) = timed(&crafted::deep_dirs(8, 2_000), BIG);
    assert_eq!(result, Err(Stop::TooDeep));
    assert!(took < std::time::Duration::from_secs(2), "took {took:?}");
    // 100 levels are fine (each chain starts with a directory of its own).
    let (result, _) = timed(&crafted::deep_dirs(2, MAX_DEPTH - 1), BIG);
    assert_eq!(result.map(|w| w.files), Ok(0));
}

#[test]
fn directories_made_for_unlisted_parents_count_as_entries() {
    let mut t = Tarball::github();
    t.file("a/b/c/d/e/f.txt", b"f\n");
    let gz = t.gz();
    assert_eq!(unpack(&gz, Caps::new(1 << 20, 5)).1, Err(Stop::OverEntries));
    assert_eq!(unpack(&gz, Caps::new(1 << 20, 6)).1.map(|w| w.files), Ok(1));
    // Parents listed first, as GitHub lists them, count once.
    let mut t = Tarball::github();
    t.below("a/", EntryType::Directory, None)
        .below("a/b/", EntryType::Directory, None)
        .file("a/b/f.txt", b"f\n");
    assert_eq!(
        unpack(&t.gz(), Caps::new(1 << 20, 3)).1.map(|w| w.files),
        Ok(1)
    );
}

#[test]
fn extension_headers_count_against_the_header_cap() {
    // Before, 200,000 of them were read under caps of 10 entries (22 s in a debug build).
    let (result, took) = timed(&crafted::extension_headers(5_000), SMALL);
    assert_eq!(result, Err(Stop::OverHeaders));
    assert!(took < std::time::Duration::from_secs(1), "took {took:?}");
    let (result, _) = timed(&crafted::extension_headers(10), SMALL);
    assert_eq!(result.map(|w| w.files), Ok(1));
}

#[test]
fn data_that_is_only_skipped_counts_against_the_read_bound() {
    // A link's data is read to be skipped: 64 MiB of it under caps of 1 MB.
    let (result, _) = timed(&crafted::fat_link(64), SMALL);
    assert_eq!(result, Err(Stop::OverRead));
    let (result, _) = timed(&crafted::fat_link(1), BIG);
    assert_eq!(result.map(|w| (w.files, w.left_out.links)), Ok((1, 1)));
    // Deflate blocks that hold nothing: compressed bytes with no tar in them.
    let (result, _) = timed(&crafted::empty_blocks_first(8), SMALL);
    assert_eq!(result, Err(Stop::OverRead));
    let (result, _) = timed(&crafted::empty_blocks_first(1), BIG);
    assert_eq!(result.map(|w| w.files), Ok(1));
    assert_eq!(SMALL.max_read(), 1_000_000 + 10 * 8192 + (2 << 20));
}

#[test]
fn an_extraction_past_its_time_stops() {
    let mut t = Tarball::github();
    t.file("a.txt", b"a\n");
    let caps = Caps {
        max_time: std::time::Duration::ZERO,
        ..BIG
    };
    assert_eq!(unpack(&t.gz(), caps).1, Err(Stop::TooSlow));
}

#[test]
fn each_bound_is_the_rounds_reason_for_the_diff_alone() {
    let slow = Caps {
        max_time: std::time::Duration::ZERO,
        ..BIG
    };
    let cases = [
        (
            crafted::deep_dirs(1, 200),
            BIG,
            Unavailable::TooDeep { max: 100 },
        ),
        (
            crafted::extension_headers(100),
            SMALL,
            Unavailable::OverHeaders { max: 36 },
        ),
        (
            crafted::fat_link(8),
            SMALL,
            Unavailable::OverRead {
                max: SMALL.max_read(),
            },
        ),
        (
            crafted::fat_link(1),
            slow,
            Unavailable::TooSlow {
                max: std::time::Duration::ZERO,
            },
        ),
    ];
    runtime().block_on(async {
        for (gz, caps, why) in cases {
            let mut ex = Extraction::start(caps).expect("start");
            let dir = ex_dir(&ex);
            for chunk in gz.chunks(64 << 10) {
                if !ex.push(Bytes::copy_from_slice(chunk)).await {
                    break;
                }
            }
            assert_eq!(ex.finish().await.map(|s| s.root()), Err(why));
            assert!(!dir.exists());
        }
    });
}
