//! Progress lines for running lenses on stderr.
//!
//! A spinner line per lens, with its name and elapsed seconds, ending in ✓ or ✗ and its time —
//! only when stderr is a terminal, and only for a lens still running after [`SHOW_AFTER`], so a
//! quick review prints nothing at all.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::ids::LensName;
use crate::lens::LensStatus;
use crate::review::panel::{NoProgress, PanelObserver};

/// How long a lens runs before its line appears.
pub const SHOW_AFTER: Duration = Duration::from_millis(400);

const TICK: Duration = Duration::from_millis(100);

/// The observer for a terminal session: spinners on stderr when it is a terminal, else nothing.
pub fn observer() -> Box<dyn PanelObserver> {
    if std::io::stderr().is_terminal() {
        Box::new(Spinners::new(ProgressDrawTarget::stderr(), SHOW_AFTER))
    } else {
        Box::new(NoProgress)
    }
}

/// Spinner lines drawn on a target, created lazily for lenses that take a while.
pub struct Spinners {
    shared: Arc<Shared>,
}

struct Shared {
    multi: MultiProgress,
    show_after: Duration,
    running: Mutex<HashMap<LensName, Slot>>,
}

struct Slot {
    started: Instant,
    bar: Option<ProgressBar>,
    timer: Option<tokio::task::JoinHandle<()>>,
}

impl Spinners {
    pub fn new(target: ProgressDrawTarget, show_after: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                multi: MultiProgress::with_draw_target(target),
                show_after,
                running: Mutex::new(HashMap::new()),
            }),
        }
    }

    #[cfg(test)]
    fn shown(&self) -> usize {
        self.shared
            .lock()
            .values()
            .filter(|slot| slot.bar.is_some())
            .count()
    }
}

impl Shared {
    /// A poisoned lock only means a panic elsewhere; the map is still usable for display.
    fn lock(&self) -> MutexGuard<'_, HashMap<LensName, Slot>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Draws the line of `lens` if it is still running.
    fn show(&self, lens: &LensName) {
        let mut running = self.lock();
        let Some(slot) = running.get_mut(lens) else {
            return;
        };
        if slot.bar.is_some() {
            return;
        }
        let bar = ProgressBar::new_spinner()
            .with_style(running_style())
            .with_prefix(lens.to_string())
            .with_elapsed(slot.started.elapsed());
        let bar = self.multi.add(bar);
        bar.enable_steady_tick(TICK);
        slot.bar = Some(bar);
    }
}

impl PanelObserver for Spinners {
    fn started(&self, lens: &LensName) {
        let timer = tokio::runtime::Handle::try_current().ok().map(|runtime| {
            let shared = Arc::clone(&self.shared);
            let lens = lens.clone();
            runtime.spawn(async move {
                tokio::time::sleep(shared.show_after).await;
                shared.show(&lens);
            })
        });
        let no_timer = timer.is_none();
        self.shared.lock().insert(
            lens.clone(),
            Slot {
                started: Instant::now(),
                bar: None,
                timer,
            },
        );
        if no_timer {
            // Outside a runtime there is nothing to wait with: show the line at once.
            self.shared.show(lens);
        }
    }

    fn finished(&self, lens: &LensName, status: LensStatus, elapsed: Duration) {
        let Some(slot) = self.shared.lock().remove(lens) else {
            return;
        };
        if let Some(timer) = slot.timer {
            timer.abort();
        }
        if let Some(bar) = slot.bar {
            let mark = match status {
                LensStatus::Ok => "✓",
                LensStatus::Failed => "✗",
            };
            bar.set_style(done_style());
            bar.finish_with_message(format!("{mark} {lens} {:.1}s", elapsed.as_secs_f64()));
        }
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        for (_, slot) in self.shared.lock().drain() {
            if let Some(timer) = slot.timer {
                timer.abort();
            }
            if let Some(bar) = slot.bar {
                bar.abandon();
            }
        }
    }
}

fn running_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner:.cyan} {prefix:.bold} {secs}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .with_key(
            "secs",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}s", state.elapsed().as_secs());
            },
        )
}

fn done_style() -> ProgressStyle {
    ProgressStyle::with_template("{msg}").unwrap_or_else(|_| ProgressStyle::default_spinner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> LensName {
        LensName::new(s)
    }

    #[tokio::test]
    async fn only_slow_lenses_get_a_line() {
        let spinners = Spinners::new(ProgressDrawTarget::hidden(), SHOW_AFTER);
        spinners.started(&name("quick"));
        spinners.started(&name("slow"));
        tokio::time::sleep(Duration::from_millis(100)).await;
        spinners.finished(&name("quick"), LensStatus::Ok, Duration::from_millis(100));
        assert_eq!(spinners.shown(), 0);

        tokio::time::sleep(SHOW_AFTER).await;
        assert_eq!(spinners.shown(), 1);

        spinners.finished(&name("slow"), LensStatus::Failed, Duration::from_secs(3));
        assert_eq!(spinners.shown(), 0);
    }

    #[test]
    fn outside_a_runtime_lines_show_at_once() {
        let spinners = Spinners::new(ProgressDrawTarget::hidden(), SHOW_AFTER);
        spinners.started(&name("a"));
        assert_eq!(spinners.shown(), 1);
        spinners.finished(&name("a"), LensStatus::Ok, Duration::from_secs(1));
        assert_eq!(spinners.shown(), 0);
    }

    #[test]
    fn the_styles_parse() {
        assert!(ProgressStyle::with_template("{spinner:.cyan} {prefix:.bold} {secs}").is_ok());
        assert!(ProgressStyle::with_template("{msg}").is_ok());
    }
}
