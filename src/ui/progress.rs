//! The sweep's progress bar on stderr: one redrawn line per running level and one kept line
//! per finished level, drawn only when stderr is a terminal. Implements the level driver's
//! [`LevelProgress`]; reads only what the driver hands it (no /proc, no engine state).
//! Must not import: cli/, config/, cmd/, exporter/.

use crate::load::driver::{ExtraLevel, LevelProgress};
use crate::load::result::LevelResult;
use crate::load::LevelSpec;
use crate::units::us_cell;
use std::cell::Cell;
use std::io::Write;

/// Erase the current terminal line.
const CLEAR_LINE: &str = "\r\x1b[2K";

pub struct ProgressBar {
    on: bool,
    /// None for `--levels auto`.
    total_levels: Option<usize>,
    /// Set once the driver measures levels beyond the planned series.
    extra: Cell<Option<ExtraLevel>>,
}

impl ProgressBar {
    /// Drawn when `wanted` and stderr is a terminal.
    pub fn new(wanted: bool, total_levels: Option<usize>) -> ProgressBar {
        use std::io::IsTerminal;
        ProgressBar {
            on: wanted && std::io::stderr().is_terminal(),
            total_levels,
            extra: Cell::new(None),
        }
    }

    /// A one-line remark shown until the next draw or [`ProgressBar::clear`].
    pub fn say(&self, text: &str) {
        if self.on {
            let _ = write!(std::io::stderr().lock(), "{text}");
        }
    }

    pub fn clear(&self) {
        self.say(CLEAR_LINE);
    }
}

impl LevelProgress for ProgressBar {
    fn draw(&self, idx: usize, ls: &LevelSpec, elapsed_ns: u64, ops: u64, measured_ns: u64) {
        if !self.on {
            return;
        }
        let which = level_words(idx, self.total_levels, self.extra.get(), ls.concurrency());
        let span = ls.ramp_ns + ls.duration_ns;
        let frac = (elapsed_ns as f64 / span.max(1) as f64).clamp(0.0, 1.0);
        let width = 12;
        let filled = (frac * width as f64).round() as usize;
        let phase = if elapsed_ns < ls.ramp_ns {
            "ramp"
        } else {
            "measure"
        };
        let iops = if measured_ns > 0 {
            format!("{:.0} IOPS", ops as f64 / (measured_ns as f64 / 1e9))
        } else {
            String::new()
        };
        let left = time_left(idx, self.total_levels, self.extra.get(), span, elapsed_ns);
        let mut line = format!(
            "{which} [{}{}] {:<7} {}",
            "#".repeat(filled),
            "-".repeat(width - filled),
            phase,
            iops,
        );
        // A redrawn line must never wrap: the clear would then erase only its last row. The
        // time left goes whole or not at all.
        let fit = crate::sys::tty::stderr_columns()
            .unwrap_or(80)
            .saturating_sub(1);
        if let Some(s) = left {
            let eta = format!("  about {} left", crate::units::duration_words(s));
            if line.chars().count() + eta.chars().count() <= fit {
                line.push_str(&eta);
            }
        }
        let line: String = line.chars().take(fit).collect();
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "{CLEAR_LINE}{line}");
        let _ = e.flush();
    }

    fn extra(&self, what: ExtraLevel) {
        self.extra.set(Some(what));
    }

    fn open_level_done(&self, r: &crate::load::open::result::OpenLevelResult) {
        if !self.on {
            return;
        }
        let _ = writeln!(
            std::io::stderr().lock(),
            "{CLEAR_LINE}offered {:>8.0}/s: {:>10.0} IOPS  p99 {} µs from the intended start, \
             {} µs from submission{}",
            r.offered_iops,
            r.iops,
            us_cell(Some(r.latency_ns.p99 as f64)),
            us_cell(Some(r.service_latency_ns.p99 as f64)),
            if r.behind.kept {
                ""
            } else {
                "  (behind schedule)"
            }
        );
    }

    fn level_done(&self, r: &LevelResult) {
        if !self.on {
            return;
        }
        let _ = writeln!(
            std::io::stderr().lock(),
            "{CLEAR_LINE}concurrency {:>4}: {:>10.0} IOPS  avg {} µs  p95 {} µs",
            r.concurrency,
            r.iops,
            us_cell(Some(r.latency_ns.mean as f64)),
            us_cell(Some(r.latency_ns.p95 as f64))
        );
    }
}

/// Seconds left of the planned sweep while level `idx` (of `span` ns, ramp included) has run
/// `elapsed` ns: the rest of this level and the planned levels after it, each as long as this
/// one. "About": the re-measures of the deciding levels and the baseline measured again at the
/// end depend on the verdict and are not planned; while one runs, only its own rest is known.
/// None for `--levels auto` (the series ends where the device does).
fn time_left(
    idx: usize,
    total: Option<usize>,
    extra: Option<ExtraLevel>,
    span: u64,
    elapsed: u64,
) -> Option<f64> {
    let this = span.saturating_sub(elapsed);
    let after = match (extra, total) {
        (Some(_), _) => 0,
        (None, Some(n)) => n.saturating_sub(idx + 1) as u64 * span,
        (None, None) => return None,
    };
    Some((this + after) as f64 / 1e9)
}

/// What the bar calls level `idx` of concurrency `conc`: its place in the planned series
/// ("level 3/10 concurrency    4"), or, past the series, what it is: the re-measures of the
/// deciding levels are not planned in advance (they depend on the verdict), so instead of a
/// count that runs past its total ("level 11 (again)" after "10/10") they are named.
fn level_words(idx: usize, total: Option<usize>, extra: Option<ExtraLevel>, conc: u32) -> String {
    match (extra, total) {
        (Some(ExtraLevel::Remeasure { nth, of }), _) => {
            format!("re-measuring concurrency {conc:>4} ({nth} of {of})")
        }
        (Some(ExtraLevel::Baseline), Some(n)) => {
            format!("level {n}/{n} concurrency {conc:>4} (baseline again)")
        }
        (Some(ExtraLevel::Baseline), None) => {
            format!("baseline again, concurrency {conc:>4}")
        }
        (None, Some(n)) => format!("level {}/{n} concurrency {conc:>4}", idx + 1),
        (None, None) => format!("level {}/auto concurrency {conc:>4}", idx + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_is_this_level_and_the_planned_ones_after_it() {
        let s = 1_000_000_000u64;
        // Level 3 of 10 (5 s each), 2 s into it: 3 s of it and 7 levels after.
        assert_eq!(time_left(2, Some(10), None, 5 * s, 2 * s), Some(38.0));
        // The last planned level, past its span: nothing left, never negative.
        assert_eq!(time_left(9, Some(10), None, 5 * s, 6 * s), Some(0.0));
        // A re-measure (not planned): only its own rest.
        let again = Some(ExtraLevel::Remeasure { nth: 1, of: 2 });
        assert_eq!(time_left(10, Some(10), again, 5 * s, s), Some(4.0));
        // --levels auto: unknown.
        assert_eq!(time_left(3, None, None, 5 * s, s), None);
    }

    #[test]
    fn re_measures_are_named_not_counted_past_the_total() {
        assert_eq!(
            level_words(2, Some(10), None, 4),
            "level 3/10 concurrency    4"
        );
        assert_eq!(
            level_words(
                9,
                Some(10),
                Some(ExtraLevel::Remeasure { nth: 1, of: 2 }),
                4
            ),
            "re-measuring concurrency    4 (1 of 2)"
        );
        assert_eq!(
            level_words(18, Some(10), Some(ExtraLevel::Baseline), 1),
            "level 10/10 concurrency    1 (baseline again)"
        );
        assert_eq!(
            level_words(3, None, None, 8),
            "level 4/auto concurrency    8"
        );
        assert_eq!(
            level_words(7, None, Some(ExtraLevel::Baseline), 1),
            "baseline again, concurrency    1"
        );
    }
}
