//! A diff file's bytes, for a review that reads them once and ends.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The bytes of the file at `path`, for the life of the process.
///
/// A regular file is mapped rather than read: the page cache's own pages back the diff, so
/// nothing is copied and no fresh memory is zeroed and faulted in a page at a time, which
/// cost more than the whole parse on a multi-megabyte diff (docs/benchmarks.md). Anything
/// else (a pipe, `<(git diff)`, an empty file) is read.
///
/// The mapping assumes what a review of a file already does: the file is not rewritten while
/// it is reviewed. A file cut short meanwhile ends the process with `SIGBUS`.
pub fn read_static(path: &Path) -> std::io::Result<&'static [u8]> {
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() && meta.len() > 0 {
        // SAFETY: the map is read-only and never unmapped, so the slice stays valid for the
        // process's life; its bytes are the file's for as long as nothing else writes the
        // file, which is what the review of a file on disk takes (see above).
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) };
        if let Ok(map) = map {
            // Never unmapped: the process ends after its one review.
            return Ok(Box::leak(Box::new(map)));
        }
    }
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)?;
    Ok(buf.leak())
}

#[cfg(test)]
mod tests {
    use super::read_static;

    #[test]
    fn a_regular_file_reads_as_its_bytes_whatever_they_are() {
        let dir = tempfile::TempDir::new().expect("dir");
        let path = dir.path().join("latin1.diff");
        let bytes: Vec<u8> = b"diff --git a/f b/f\n+caf\xe9\n".repeat(5000);
        std::fs::write(&path, &bytes).expect("write");
        assert_eq!(read_static(&path).expect("read"), &bytes[..]);
    }

    #[test]
    fn an_empty_file_reads_as_no_bytes() {
        let dir = tempfile::TempDir::new().expect("dir");
        let path = dir.path().join("empty.diff");
        std::fs::write(&path, b"").expect("write");
        assert_eq!(read_static(&path).expect("read"), b"");
    }

    #[test]
    fn a_pipe_is_read_to_its_end() {
        let dir = tempfile::TempDir::new().expect("dir");
        let path = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo failed");
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::fs::write(path, b"diff --git a/f b/f\n").expect("write")
            })
        };
        assert_eq!(read_static(&path).expect("read"), b"diff --git a/f b/f\n");
        writer.join().expect("writer");
    }

    #[test]
    fn a_missing_file_or_a_directory_is_an_error() {
        let dir = tempfile::TempDir::new().expect("dir");
        assert!(read_static(&dir.path().join("missing.diff")).is_err());
        assert!(read_static(dir.path()).is_err());
    }
}
