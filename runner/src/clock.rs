//! The clock of invoke timing. Every invoke reads the time four times (its
//! start and end, and around ONNX Runtime's `Run`); on graphs whose calls
//! take microseconds an OS clock read (about 20 ns) is a visible share of
//! the runner's own time. This reads the processor's time-stamp counter
//! through `quanta` where it is invariant (calibrated once per process
//! against the OS clock), and the OS clock elsewhere.

use std::sync::OnceLock;
use std::time::Duration;

fn clock() -> &'static quanta::Clock {
    static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// Calibrates the clock now (part of loading a package), not on the first
/// timed call.
pub(crate) fn calibrate() {
    clock();
}

/// One reading of the clock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tick(u64);

impl Tick {
    /// The time now.
    pub(crate) fn now() -> Tick {
        Tick(clock().raw())
    }

    /// The time from `earlier` to this reading (zero if it is later).
    pub(crate) fn since(self, earlier: Tick) -> Duration {
        clock().delta(earlier.0, self.0)
    }

    /// The time from this reading to now.
    pub(crate) fn elapsed(self) -> Duration {
        Tick::now().since(self)
    }
}
