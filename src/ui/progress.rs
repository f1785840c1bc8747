//! The sweep's progress bar on stderr: one redrawn line per running level and one kept line
//! per finished level, drawn only when stderr is a terminal. Implements the level driver's
//! [`LevelProgress`]; reads only what the driver hands it (no /proc, no engine state).
//! Must not import: cli/, config/, cmd/, exporter/.

use crate::load::driver::LevelProgress;
use crate::load::result::LevelResult;
use crate::load::LevelSpec;
use crate::report::levels::us_cell;
use std::io::Write;

/// Erase the current terminal line.
const CLEAR_LINE: &str = "\r\x1b[2K";

pub struct ProgressBar {
    on: bool,
    /// None for `--levels auto`.
    total_levels: Option<usize>,
}

impl ProgressBar {
    /// Drawn when `wanted` and stderr is a terminal.
    pub fn new(wanted: bool, total_levels: Option<usize>) -> ProgressBar {
        use std::io::IsTerminal;
        ProgressBar {
            on: wanted && std::io::stderr().is_terminal(),
            total_levels,
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
        // Past the planned levels come the re-measures of the deciding ones (--budget).
        let which = match self.total_levels {
            Some(n) if idx < n => format!("{}/{n}", idx + 1),
            Some(_) => format!("{} (again)", idx + 1),
            None => format!("{}/auto", idx + 1),
        };
        let span = ls.ramp_ns + ls.duration_ns;
        let frac = (elapsed_ns as f64 / span.max(1) as f64).clamp(0.0, 1.0);
        let width = 20;
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
        let mut e = std::io::stderr().lock();
        let _ = write!(
            e,
            "{CLEAR_LINE}level {which} concurrency {:>4} [{}{}] {:<7} {}",
            ls.concurrency(),
            "#".repeat(filled),
            "-".repeat(width - filled),
            phase,
            iops
        );
        let _ = e.flush();
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
