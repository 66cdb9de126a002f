//! The clock of invoke timing. A call reads the time around ONNX Runtime's
//! `Run` (whose end is also when its outputs are in hand), and once more
//! before its checks when it is not steady; on graphs whose calls take
//! microseconds an OS clock read (about 20 ns) is a visible share of the
//! runner's own time. This reads the processor's time-stamp counter
//! through `quanta` where it is invariant (calibrated once per process
//! against the OS clock), and the OS clock elsewhere. Readings are turned
//! into durations by one fixed-point multiplication.

use std::sync::OnceLock;
use std::time::Duration;

/// The counter and its rate.
struct Clock {
    counter: quanta::Clock,
    /// Nanoseconds per tick, times 2^32.
    scale: u128,
}

/// Fraction bits of [`Clock::scale`].
const FRACTION: u32 = 32;

fn clock() -> &'static Clock {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    CLOCK.get_or_init(|| {
        let counter = quanta::Clock::new();
        // The rate over a span long enough that rounding does not show.
        const SPAN: u64 = 1 << 40;
        let nanos = u128::from(counter.delta_as_nanos(0, SPAN));
        Clock {
            counter,
            scale: (nanos << FRACTION) / u128::from(SPAN),
        }
    })
}

/// Calibrates the clock now (part of loading a package), not on the first
/// timed call.
pub(crate) fn calibrate() {
    clock();
}

/// One reading of the clock.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tick(u64);

/// Two readings: a span of time, turned into a duration only when asked.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    pub(crate) start: Tick,
    pub(crate) end: Tick,
}

impl Span {
    /// The span's length.
    pub(crate) fn duration(self) -> Duration {
        self.end.since(self.start)
    }
}

impl Tick {
    /// The time now.
    #[inline]
    pub(crate) fn now() -> Tick {
        Tick(clock().counter.raw())
    }

    /// The time from `earlier` to this reading (zero if it is later).
    #[inline]
    pub(crate) fn since(self, earlier: Tick) -> Duration {
        let ticks = u128::from(self.0.saturating_sub(earlier.0));
        let nanos = (ticks * clock().scale) >> FRACTION;
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::Tick;
    use std::time::{Duration, Instant};

    /// The counter's durations agree with the OS clock's.
    #[test]
    fn measures_like_the_os_clock() {
        let (tick, instant) = (Tick::now(), Instant::now());
        std::thread::sleep(Duration::from_millis(20));
        let (ours, os) = (Tick::now().since(tick), instant.elapsed());
        let diff = ours.abs_diff(os);
        assert!(diff < Duration::from_millis(2), "{ours:?} vs {os:?}");
        assert_eq!(
            Tick::now().since(Tick::now()),
            Duration::ZERO,
            "later first"
        );
    }
}
