//! Schedules that shift `linspace(1, 0, steps + 1)` by the size of what is
//! sampled, as a scheduler node computes them: Flux 2's
//! (`Flux2Scheduler`) and LTX-Video's (`LTXVScheduler`). Each maps `t` to
//! `e^s / (e^s + 1/t - 1)` (0 stays 0) with its own shift `s`.

use super::tables::linspace;

/// `linspace(1, 0, steps + 1)` time-shifted by `shift` (`e^s`).
fn shifted(shift: f64, steps: usize) -> Vec<f64> {
    linspace(1.0, 0.0, steps + 1)
        .into_iter()
        .map(|t| match t {
            0.0 => 0.0,
            t => shift / (shift + (1.0 / t - 1.0)),
        })
        .collect()
}

/// `Flux2Scheduler`'s sigmas for `steps` steps of a `width` x `height`
/// picture: ComfyUI's `get_schedule`, whose `mu` is an empirical fit to
/// the token count `round(width * height / 256)` and, up to 4300 tokens,
/// the step count.
pub(super) fn flux2(width: i64, height: i64, steps: usize) -> Vec<f64> {
    let tokens = ((width * height) as f64 / 256.0).round_ties_even();
    let ((a2, b2), (a1, b1)) = FLUX2_FIT;
    let mu = if tokens > FLUX2_STEPLESS_ABOVE {
        a2 * tokens + b2
    } else {
        let (m_200, m_10) = (a2 * tokens + b2, a1 * tokens + b1);
        let a = (m_200 - m_10) / 190.0;
        let b = m_200 - 200.0 * a;
        a * steps as f64 + b
    };
    shifted(mu.exp(), steps)
}

/// The lines `mu = a * tokens + b` of Flux 2's fit: at 200 steps (and
/// at any step count past [`FLUX2_STEPLESS_ABOVE`] tokens), and at 10.
pub(super) const FLUX2_FIT: ((f64, f64), (f64, f64)) = (
    (0.000_169_27, 0.456_666_66),
    (8.738_095_24e-5, 1.898_333_33),
);

/// The token count above which Flux 2's `mu` ignores the step count.
pub(super) const FLUX2_STEPLESS_ABOVE: f64 = 4300.0;

/// `LTXVScheduler`'s settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Ltxv {
    /// The shift at 4096 tokens.
    pub max_shift: f64,
    /// The shift at 1024 tokens.
    pub base_shift: f64,
    /// Stretch the nonzero sigmas so the last is `terminal`.
    pub stretch: bool,
    pub terminal: f64,
    /// The latent's cells (frames times height times width; 4096 without
    /// a latent).
    pub tokens: i64,
}

/// `LTXVScheduler`'s sigmas for `steps` steps: the shift linear in the
/// token count through `(1024, base_shift)` and `(4096, max_shift)`, then,
/// stretched, `1 - (1 - s) / ((1 - s_last) / (1 - terminal))` for every
/// nonzero `s`, `s_last` the last nonzero one.
pub(super) fn ltxv(settings: &Ltxv, steps: usize) -> Vec<f64> {
    let slope = (settings.max_shift - settings.base_shift) / (4096.0 - 1024.0);
    let shift = settings.tokens as f64 * slope + settings.base_shift - slope * 1024.0;
    let mut sigmas = shifted(shift.exp(), steps);
    let last = sigmas.iter().rev().find(|s| **s != 0.0).copied();
    if let (true, Some(last)) = (settings.stretch, last) {
        let scale = (1.0 - last) / (1.0 - settings.terminal);
        if scale != 0.0 {
            for sigma in sigmas.iter_mut().filter(|s| **s != 0.0) {
                *sigma = 1.0 - (1.0 - *sigma) / scale;
            }
        }
    }
    sigmas
}
