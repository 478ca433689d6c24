//! The log writer: masks every secret written through it.

use super::redact;

/// A writer that masks secrets in everything written through it: the log writer
/// (`tracing_subscriber::fmt().with_writer(redact::redacting_stderr)`), so no log line carries
/// a secret whatever a field holds. The formatter writes one event per call, so a secret is
/// never split across two writes.
pub struct RedactingWriter<W: std::io::Write>(pub W);

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Standard error through [`RedactingWriter`].
pub fn redacting_stderr() -> RedactingWriter<std::io::Stderr> {
    RedactingWriter(std::io::stderr())
}
