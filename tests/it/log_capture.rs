//! Capturing what the code under test logs, on one test's thread, while the other tests of this
//! binary run beside it.
//!
//! tracing caches each callsite's interest for the whole process. With no global subscriber,
//! a callsite first reached by another test's thread (which has no subscriber of its own) is
//! cached as "never", and the capturing test then sees none of its events: that made the log
//! test fail now and then under CI's scheduling. A global subscriber that records nothing but
//! answers "sometimes" for every callsite keeps them all asked, per event, of the subscriber of
//! the thread that emits it.

use std::sync::{Arc, Mutex, OnceLock};

use tracing::subscriber::{DefaultGuard, Interest};
use tracing::{Event, Metadata, Subscriber, span};

/// What the capturing subscriber wrote.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Records nothing; only keeps every callsite's interest at "sometimes".
struct InterestKeeper;

impl Subscriber for InterestKeeper {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

/// Everything logged on this thread at any level, in plain text, until the guard is dropped.
pub fn capture() -> (Captured, DefaultGuard) {
    static KEEPER: OnceLock<()> = OnceLock::new();
    KEEPER.get_or_init(|| {
        tracing::subscriber::set_global_default(InterestKeeper)
            .expect("no other global subscriber in the test binary");
    });
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    // A callsite registered by another thread while the keeper was being installed may have
    // stored "never" after the keeper's own rebuild: ask them all again.
    tracing::callsite::rebuild_interest_cache();
    (logs, guard)
}
