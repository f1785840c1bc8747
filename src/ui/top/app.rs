//! The state of `iosat top` and its key handling, as pure code: interval reports in (from the
//! sampling thread, through the channel), keys in, what to draw out. No terminal, no /proc:
//! every key is testable on the state alone.
//! Must not import: cli/, config/, cmd/, exporter/.

use crate::monitor::blklat::{DevLatency, Measured};
use crate::monitor::fields::{Column, Field, LATENCY};
use crate::monitor::interval::IntervalReport;
use crate::monitor::saturation::Saturation;
use crate::monitor::select::{DeviceMeta, Selection};
use crate::monitor::DiskRates;
use crate::profile::DeviceProfile;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// A key as the app understands it (ui::top::term maps the terminal's keys to these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Up,
    Down,
    Left,
    Right,
    Tab,
    BackTab,
    Esc,
    Enter,
    Backspace,
    CtrlC,
}

/// Which pane has the focus (Tab switches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Devices,
    Charts,
    /// Who is doing the I/O (live only).
    Processes,
    /// Who loads the selected device: its cgroups (`--cgroups` only).
    Cgroups,
}

/// The chart windows `+`/`-` step through, seconds.
pub const WINDOWS_S: &[u64] = &[30, 60, 120, 300, 600];
const DEFAULT_WINDOW: usize = 1;

/// One column of the device table: a field of the registry (monitor::fields), or the device
/// name, or MiB/s (reads + writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Col {
    /// The registry's JSON key, or "device", "mib_s".
    pub key: &'static str,
    /// Needs a profile (saturation, load, headroom).
    pub profile: bool,
    /// Shown only when some shown device has a non-zero value (d/s, f/s).
    pub when_nonzero: bool,
    /// A block-latency field (fields::LATENCY): shown only when some shown device has
    /// percentiles from the block-latency source.
    pub latency: bool,
}

const fn col(key: &'static str) -> Col {
    Col {
        key,
        profile: false,
        when_nonzero: false,
        latency: false,
    }
}
const fn lat(key: &'static str) -> Col {
    Col {
        latency: true,
        ..col(key)
    }
}
const fn prof(key: &'static str) -> Col {
    Col {
        profile: true,
        ..col(key)
    }
}
const fn nonzero(key: &'static str) -> Col {
    Col {
        when_nonzero: true,
        ..col(key)
    }
}

/// Every column in table order.
pub const COLUMNS: &[Col] = &[
    col("device"),
    prof("saturation"),
    col("r/s"),
    col("w/s"),
    nonzero("d/s"),
    nonzero("f/s"),
    col("mib_s"),
    col("r_await"),
    col("w_await"),
    lat("r_p95_ms"),
    lat("w_p95_ms"),
    Col {
        profile: true,
        ..lat("p95_vs_baseline_r")
    },
    Col {
        profile: true,
        ..lat("p95_vs_baseline_w")
    },
    // The queue's share of the latency (issue 40), once some device has queued at all.
    Col {
        when_nonzero: true,
        ..lat("r_queue_share_pct")
    },
    Col {
        when_nonzero: true,
        ..lat("w_queue_share_pct")
    },
    col("read_concurrency"),
    col("write_concurrency"),
    col("aqu-sz"),
    col("util"),
    prof("saturation_r"),
    prof("saturation_w"),
    prof("load_vs_knee"),
    prof("headroom_iops"),
    // The share of the interval an AWS volume's or instance's cap throttled it (issue 42:
    // the device's own counters, monitor::aws); shown once some device was throttled.
    nonzero("thr_pct"),
    // The interval's short windows (issue 41: monitor::burst): each direction's peak IOPS
    // and the larger peak ÷ mean; shown once some device did I/O in them.
    nonzero("peak_to_mean"),
    nonzero("r_peak"),
    nonzero("w_peak"),
];

/// Which columns stay when the terminal is narrow: first kept first.
pub const PRIORITY: &[&str] = &[
    "device",
    "r/s",
    "w/s",
    "mib_s",
    "r_await",
    "w_await",
    "saturation",
    "thr_pct",
    "peak_to_mean",
    "r_p95_ms",
    "w_p95_ms",
    "p95_vs_baseline_r",
    "p95_vs_baseline_w",
    "load_vs_knee",
    "util",
    "aqu-sz",
    "read_concurrency",
    "write_concurrency",
    "headroom_iops",
    "saturation_r",
    "saturation_w",
    "d/s",
    "f/s",
    "r_queue_share_pct",
    "w_queue_share_pct",
    "r_peak",
    "w_peak",
];

impl Col {
    pub fn by_key(key: &str) -> Col {
        *COLUMNS
            .iter()
            .find(|c| c.key == key)
            .unwrap_or_else(|| panic!("no top column {key}"))
    }

    /// The header: the registry's, except %util, labelled as what it is (busy time), and the
    /// p95 ratios, shortened to fit the column.
    pub fn header(self) -> &'static str {
        match self.key {
            "device" => "Device",
            "mib_s" => "MiB/s",
            "util" => "%busy",
            "saturation" => "sat",
            "p95_vs_baseline_r" => "r_p95/b",
            "p95_vs_baseline_w" => "w_p95/b",
            "thr_pct" => "thr%",
            "peak_to_mean" => "pk/mean",
            "r_peak" => "r_pk/s",
            "w_peak" => "w_pk/s",
            k => match latency_field(k) {
                Some(f) => f.header,
                None => Column::by_key(k).header(),
            },
        }
    }

    /// The value of a row (None: no value, or no profile).
    pub fn value(self, row: &Row) -> Option<f64> {
        self.getter()(row)
    }

    /// [`Col::value`] with the registry's field looked up once, for many rows.
    pub fn getter(self) -> impl Fn(&Row) -> Option<f64> {
        let lat = latency_field(self.key);
        let field = match self.key {
            "device" | "mib_s" | "thr_pct" | "peak_to_mean" | "r_peak" | "w_peak" => None,
            _ if lat.is_some() => None,
            k => Some(Column::by_key(k)),
        };
        let mib = self.key == "mib_s";
        let thr = self.key == "thr_pct";
        let key = self.key;
        move |row: &Row| {
            let rates = row.rates.as_ref();
            match (field, lat) {
                (Some(f), _) => f.value(rates, row.sat.as_ref()),
                (None, Some(l)) => row.latency.as_ref().and_then(|m| (l.get)(m)),
                (None, None) if mib => rates.map(|r| (r.rkb_s + r.wkb_s) / 1024.0),
                (None, None) if thr => row.throttled_pct,
                (None, None) => row.burst.as_ref().and_then(|b| match key {
                    "r_peak" => Some(b.read.peak_iops),
                    "w_peak" => Some(b.write.peak_iops),
                    "peak_to_mean" => match (b.read.peak_to_mean, b.write.peak_to_mean) {
                        (Some(r), Some(w)) => Some(r.max(w)),
                        (r, w) => r.or(w),
                    },
                    _ => None,
                }),
            }
        }
    }
}

/// The block-latency field of the registry with this JSON key, if it is one.
fn latency_field(key: &str) -> Option<&'static Field<Measured>> {
    LATENCY.iter().find(|f| f.json == key)
}

/// One device in the latest interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub major: u32,
    pub meta: DeviceMeta,
    /// None when the interval has no value for it (new device, counter went backwards).
    pub rates: Option<DiskRates>,
    pub sat: Option<Saturation>,
    pub profile: Option<Arc<DeviceProfile>>,
    /// The block layer's percentiles of the interval (and, with a profile, the p95 ÷ the
    /// baseline p95), when the block-latency source measured the device.
    pub latency: Option<Measured>,
    /// What production learning says of the device (learn/), when on.
    pub learned: Option<std::sync::Arc<crate::learn::Learned>>,
    /// The device's one judgement in the interval (monitor::judge), rendered as it is.
    pub judgement: crate::analysis::state::Judgement,
    /// The share of the interval a cap throttled an AWS volume, % (its own counters).
    pub throttled_pct: Option<f64>,
    /// What those counters say of the interval, in stat's words ("throttled by the volume's
    /// IOPS cap 63 % of this second; latency 4.1× its baseline"), when a cap throttled it.
    pub aws_clause: Option<String>,
    /// The interval's short windows (issue 41), when they were read.
    pub burst: Option<crate::monitor::burst::Burst>,
    /// Who loaded the device in the interval (issue 40; `--cgroups`, or a recording that
    /// holds them): its busiest cgroups and, while it was saturated, the verdict.
    pub cgroups: Option<Arc<crate::monitor::cgroups::DevCgroups>>,
}

/// What the charts draw of one interval of one device.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ChartPoint {
    pub end_wall_ns: i64,
    pub r_await: Option<f64>,
    pub w_await: Option<f64>,
    pub util_pct: f64,
    pub r_conc: f64,
    pub w_conc: f64,
    pub sat_r: Option<f64>,
    pub sat_w: Option<f64>,
    /// The block layer's p95 per direction, ms (block-latency source only).
    pub r_p95: Option<f64>,
    pub w_p95: Option<f64>,
}

/// Where the reports come from, said on the context line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Live { host: String, kernel: String },
    Replay { file: String },
}

pub struct App {
    pub source: Source,
    pub rows: Vec<Row>,
    /// The columns shown only when non-zero (d/s, f/s) that a shown device has had non-zero
    /// in some interval: they stay, rather than appear and disappear between frames and
    /// shift the table.
    nonzero_seen: Vec<&'static str>,
    /// The view runs as root (the processes pane then does not tell root to run as root).
    pub as_root: bool,
    /// Per device: the report that last listed it, and its points.
    history: HashMap<String, (u64, VecDeque<ChartPoint>)>,
    /// The latest interval, seconds (0 before the first).
    pub interval_s: f64,
    pub end_wall_ns: i64,
    pub reports: u64,
    /// The devices shown without `a` (the user's selection: whole disks, dm, md by default).
    selection: Selection,
    pub selected: Option<String>,
    pub sort: &'static str,
    pub reverse: bool,
    pub filter: String,
    pub filter_editing: bool,
    pub paused: bool,
    pub window: usize,
    pub show_all: bool,
    pub pane: Pane,
    pub help: bool,
    pub quit: bool,
    /// Reports that came while paused, shown on resume or one per step.
    backlog: VecDeque<IntervalReport>,
    /// `--replay` came to its end.
    pub ended: bool,
    /// Colours allowed (NO_COLOR unset).
    pub color: bool,
    /// The latest warning of the sampling side, shown until Esc.
    pub warning: Option<String>,
    /// CPU busy/iowait/steal and PSI over the latest interval (live only).
    pub host: Option<crate::sys::sched::SchedDelta>,
    /// The busiest processes of the latest interval (read only while their pane is shown).
    pub procs: Option<crate::monitor::procs::ProcReport>,
    /// Show the block-latency source's percentiles (false with `--no-bpf`, also in a replay).
    pub latency: bool,
    /// `--cgroups`: the cgroups pane is one of those Tab steps through.
    pub cgroups: bool,
}

/// At most this many reports wait while paused (the oldest are dropped).
const MAX_BACKLOG: usize = 3600;

impl App {
    pub fn new(source: Source, selection: Selection, color: bool) -> App {
        App {
            source,
            rows: Vec::new(),
            history: HashMap::new(),
            interval_s: 0.0,
            end_wall_ns: 0,
            reports: 0,
            selection,
            selected: None,
            sort: "saturation",
            reverse: false,
            filter: String::new(),
            filter_editing: false,
            paused: false,
            window: DEFAULT_WINDOW,
            show_all: false,
            pane: Pane::Devices,
            help: false,
            quit: false,
            backlog: VecDeque::new(),
            ended: false,
            color,
            warning: None,
            procs: None,
            host: None,
            latency: true,
            cgroups: false,
            nonzero_seen: Vec::new(),
            as_root: false,
        }
    }

    /// A report from the sampling thread: shown now, or kept for later while paused.
    pub fn on_report(&mut self, r: IntervalReport) {
        if self.paused {
            if self.backlog.len() == MAX_BACKLOG {
                self.backlog.pop_front();
            }
            self.backlog.push_back(r);
        } else {
            self.apply(r);
        }
    }

    /// Reports waiting while paused.
    pub fn backlog(&self) -> usize {
        self.backlog.len()
    }

    fn apply(&mut self, r: IntervalReport) {
        self.interval_s = r.interval_s();
        self.end_wall_ns = r.end_wall_ns;
        self.reports += 1;
        let keep = self.history_len();
        self.rows = r
            .devices
            .into_iter()
            .map(|d| {
                let sat = d.saturation();
                let judgement = d.judgement();
                let latency = match d.latency {
                    Some(DevLatency::Measured(m)) if self.latency => Some(*m),
                    _ => None,
                };
                Row {
                    throttled_pct: d.aws.as_ref().map(|a| a.throttled_pct()),
                    aws_clause: d
                        .aws
                        .as_ref()
                        .and_then(|a| a.clause(judgement.device.ratio)),
                    burst: d.burst,
                    cgroups: d.cgroups,
                    latency,
                    judgement,
                    learned: d.learned,
                    name: d.kernel_name,
                    major: d.major,
                    meta: d.meta,
                    rates: d.rates.ok(),
                    sat,
                    profile: d.profile,
                }
            })
            .collect();
        let seen: Vec<&'static str> = {
            let shown = self.visible();
            COLUMNS
                .iter()
                .filter(|c| c.when_nonzero && !self.nonzero_seen.contains(&c.key))
                .filter(|c| {
                    let value = c.getter();
                    shown.iter().any(|r| value(r).is_some_and(|v| v > 0.0))
                })
                .map(|c| c.key)
                .collect()
        };
        self.nonzero_seen.extend(seen);
        let now = self.reports;
        for row in &self.rows {
            let entry = match (self.history.get_mut(&row.name), &row.rates) {
                (Some(e), _) => e,
                (None, None) => continue,
                // The name is copied only for a device seen for the first time.
                (None, Some(_)) => self
                    .history
                    .entry(row.name.clone())
                    .or_insert((now, VecDeque::new())),
            };
            entry.0 = now;
            let Some(rates) = &row.rates else { continue };
            let h = &mut entry.1;
            if h.len() >= keep {
                h.pop_front();
            }
            h.push_back(ChartPoint {
                end_wall_ns: r.end_wall_ns,
                r_await: rates.r_await,
                w_await: rates.w_await,
                util_pct: rates.util_pct,
                r_conc: rates.read_concurrency,
                w_conc: rates.write_concurrency,
                sat_r: row.sat.as_ref().and_then(|s| s.saturation_r),
                sat_w: row.sat.as_ref().and_then(|s| s.saturation_w),
                r_p95: row.latency.as_ref().and_then(|m| m.read.p95_ms),
                w_p95: row.latency.as_ref().and_then(|m| m.write.p95_ms),
            });
        }
        // Devices this report no longer lists lose their history.
        self.history.retain(|_, (seen, _)| *seen == now);
        self.fix_selection();
    }

    /// Points kept per device: the longest window at the current interval.
    fn history_len(&self) -> usize {
        let longest = *WINDOWS_S.last().unwrap_or(&600) as f64;
        let per = if self.interval_s > 0.0 {
            self.interval_s
        } else {
            1.0
        };
        ((longest / per).ceil() as usize).clamp(2, 6000)
    }

    pub fn window_s(&self) -> u64 {
        WINDOWS_S[self.window]
    }

    /// The selected device's points within the window, oldest first.
    pub fn history(&self, name: &str) -> Vec<ChartPoint> {
        let Some((_, h)) = self.history.get(name) else {
            return Vec::new();
        };
        let from = self.end_wall_ns - self.window_s() as i64 * 1_000_000_000;
        h.iter()
            .filter(|p| p.end_wall_ns >= from)
            .copied()
            .collect()
    }

    /// Does the row pass the device selection (or `a`) and the filter?
    fn shown(&self, r: &Row, needle: &str) -> bool {
        (self.show_all || self.selection.selects(r.major, &r.name, &r.meta))
            && (needle.is_empty()
                || r.name.to_lowercase().contains(needle)
                || r.meta.display_name.to_lowercase().contains(needle))
    }

    /// The rows shown, filtered and sorted.
    pub fn visible(&self) -> Vec<&Row> {
        let needle = self.filter.to_lowercase();
        let col = Col::by_key(self.sort);
        let value = col.getter();
        // Each row's sort key once (largest first, no value last; ties: the busier queue).
        let mut v: Vec<(f64, f64, &Row)> = self
            .rows
            .iter()
            .filter(|r| self.shown(r, &needle))
            .map(|r| (value(r).unwrap_or(f64::NEG_INFINITY), aqu(r), r))
            .collect();
        v.sort_by(|a, b| {
            let ord = if col.key == "device" {
                a.2.name.cmp(&b.2.name)
            } else {
                b.0.total_cmp(&a.0)
                    .then_with(|| b.1.total_cmp(&a.1))
                    .then_with(|| a.2.name.cmp(&b.2.name))
            };
            if self.reverse {
                ord.reverse()
            } else {
                ord
            }
        });
        v.into_iter().map(|t| t.2).collect()
    }

    /// The columns that fit in `width` characters, in table order (the sort column is kept).
    pub fn columns(&self, width: u16) -> Vec<Col> {
        self.columns_of(&self.visible(), width)
    }

    /// [`App::columns`] for rows already chosen.
    pub fn columns_of(&self, rows: &[&Row], width: u16) -> Vec<Col> {
        let profiled = rows.iter().any(|r| r.profile.is_some());
        let measured = rows.iter().any(|r| r.latency.is_some());
        let wanted = |c: &Col| {
            (!c.profile || profiled)
                && (!c.latency || measured)
                && (!c.when_nonzero || self.nonzero_seen.contains(&c.key) || {
                    let value = c.getter();
                    rows.iter().any(|r| value(r).is_some_and(|v| v > 0.0))
                })
        };
        let mut used = 0u16;
        let mut keep: Vec<&str> = Vec::new();
        let order = std::iter::once(self.sort).chain(PRIORITY.iter().copied());
        for key in order {
            let c = Col::by_key(key);
            if keep.contains(&key) || !wanted(&c) {
                continue;
            }
            let w = col_width(c) + 1;
            if used + w > width {
                continue;
            }
            used += w;
            keep.push(key);
        }
        COLUMNS
            .iter()
            .filter(|c| keep.contains(&c.key))
            .copied()
            .collect()
    }

    /// The selected row (the first shown when the selected one is gone).
    pub fn selected_row(&self) -> Option<&Row> {
        let name = self.selected.as_deref()?;
        let needle = self.filter.to_lowercase();
        self.rows
            .iter()
            .find(|r| r.name == name && self.shown(r, &needle))
    }

    fn fix_selection(&mut self) {
        // Still shown: nothing to do (no sort needed to know that).
        if self.selected_row().is_some() {
            return;
        }
        self.selected = self.visible().first().map(|r| r.name.clone());
    }

    fn move_selection(&mut self, by: isize) {
        let v = self.visible();
        if v.is_empty() {
            return;
        }
        let at = self
            .selected
            .as_deref()
            .and_then(|s| v.iter().position(|r| r.name == s))
            .unwrap_or(0);
        let to = (at as isize + by).clamp(0, v.len() as isize - 1) as usize;
        self.selected = Some(v[to].name.clone());
    }

    fn move_sort(&mut self, by: isize) {
        let cols = self.columns(u16::MAX);
        let n = cols.len() as isize;
        let to = match cols.iter().position(|c| c.key == self.sort) {
            Some(at) => (at as isize + by).rem_euclid(n),
            // The sort column is not shown (saturation without a profile): start at an end.
            None if by > 0 => 0,
            None => n - 1,
        };
        self.sort = cols[to as usize].key;
    }

    /// Show one report kept while paused (`n` or `.`).
    pub fn step(&mut self) {
        if let Some(r) = self.backlog.pop_front() {
            self.apply(r);
        }
    }

    /// Handle one key.
    pub fn on_key(&mut self, k: Key) {
        if k == Key::CtrlC {
            self.quit = true;
            return;
        }
        if self.filter_editing {
            match k {
                Key::Char(c) => self.filter.push(c),
                Key::Backspace => {
                    self.filter.pop();
                }
                Key::Enter => self.filter_editing = false,
                Key::Esc => {
                    self.filter_editing = false;
                    self.filter.clear();
                }
                _ => {}
            }
            self.fix_selection();
            return;
        }
        if self.help {
            match k {
                Key::Char('q') => self.quit = true,
                Key::Esc | Key::Char('?') | Key::Enter => self.help = false,
                _ => {}
            }
            return;
        }
        match k {
            Key::Char('q') => self.quit = true,
            Key::Char('?') => self.help = true,
            Key::Esc => {
                self.filter.clear();
                self.warning = None;
            }
            Key::Char('p') | Key::Char(' ') => {
                self.paused = !self.paused;
                if !self.paused {
                    while let Some(r) = self.backlog.pop_front() {
                        self.apply(r);
                    }
                }
            }
            Key::Char('n') | Key::Char('.') if self.paused => self.step(),
            Key::Up | Key::Char('k') => self.move_selection(-1),
            Key::Down | Key::Char('j') => self.move_selection(1),
            Key::Left | Key::Char('<') => self.move_sort(-1),
            Key::Right | Key::Char('>') => self.move_sort(1),
            Key::Char('r') => self.reverse = !self.reverse,
            Key::Char('/') => self.filter_editing = true,
            Key::Tab => {
                self.pane = match self.pane {
                    Pane::Devices => Pane::Charts,
                    Pane::Charts => Pane::Processes,
                    Pane::Processes if self.cgroups => Pane::Cgroups,
                    Pane::Processes | Pane::Cgroups => Pane::Devices,
                }
            }
            Key::BackTab => {
                self.pane = match self.pane {
                    Pane::Devices if self.cgroups => Pane::Cgroups,
                    Pane::Devices => Pane::Processes,
                    Pane::Charts => Pane::Devices,
                    Pane::Processes => Pane::Charts,
                    Pane::Cgroups => Pane::Processes,
                }
            }
            Key::Char('+') | Key::Char('=') => {
                self.window = (self.window + 1).min(WINDOWS_S.len() - 1)
            }
            Key::Char('-') => self.window = self.window.saturating_sub(1),
            Key::Char('a') => self.show_all = !self.show_all,
            _ => {}
        }
        self.fix_selection();
    }
}

fn aqu(r: &Row) -> f64 {
    r.rates.as_ref().map_or(0.0, |r| r.aqu_sz)
}

/// Characters a column takes (without the gap).
pub fn col_width(c: Col) -> u16 {
    match c.key {
        "device" => 12,
        "headroom_iops" => 9,
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::replay::{Replay, Step};

    /// Reports of a recording: sda idle, sdb busy, loop0 (shown with `a` only).
    fn reports() -> Vec<IntervalReport> {
        let text = "#iosat-record 1\nR 1000000000 1000000000\n\
D 8:0 sda disk sda\nD 8:16 sdb disk sdb\nD 7:0 loop0 loop loop0\n\
T 1000000000 1000000000\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n 8 16 sdb 1 0 8 1 0 0 0 0 0 1 1\n 7 0 loop0 1 0 8 1 0 0 0 0 0 1 1\n\
T 2000000000 2000000000\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n 8 16 sdb 101 0 808 201 0 0 0 0 0 501 201\n 7 0 loop0 5 0 8 5 0 0 0 0 0 5 5\n\
T 3000000000 3000000000\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n 8 16 sdb 201 0 1608 401 0 0 0 0 0 1001 401\n 7 0 loop0 9 0 8 9 0 0 0 0 0 9 9\n";
        let sel = Selection {
            patterns: vec![],
            partitions: true,
            all: true,
        };
        Replay::new(text, sel, false, Box::new(|_| None))
            .unwrap()
            .filter_map(|s| match s.unwrap() {
                Step::Report(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    fn app() -> App {
        let mut a = App::new(
            Source::Replay { file: "x".into() },
            Selection::default(),
            true,
        );
        for r in reports() {
            a.on_report(r);
        }
        a
    }

    fn names(a: &App) -> Vec<&str> {
        a.visible().iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn default_selection_sorting_and_all() {
        let mut a = app();
        assert_eq!(a.reports, 2);
        // No profiles: the busier queue first; loop0 hidden until `a`.
        assert_eq!(names(&a), ["sdb", "sda"]);
        assert_eq!(a.selected.as_deref(), Some("sdb"));
        a.on_key(Key::Char('a'));
        assert_eq!(names(&a), ["sdb", "loop0", "sda"]);
        a.on_key(Key::Char('a'));
        assert_eq!(names(&a), ["sdb", "sda"]);
    }

    #[test]
    fn sort_column_and_reverse() {
        let mut a = app();
        assert_eq!(a.sort, "saturation");
        // Without a profile the saturation column is not there: → goes to the first column.
        a.on_key(Key::Right);
        assert_eq!(a.sort, "device");
        assert_eq!(names(&a), ["sda", "sdb"]);
        a.on_key(Key::Char('r'));
        assert_eq!(names(&a), ["sdb", "sda"]);
        a.on_key(Key::Char('>'));
        assert_eq!(a.sort, "r/s");
        a.on_key(Key::Char('<'));
        a.on_key(Key::Left);
        assert_eq!(a.sort, "util", "wraps to the last column");
    }

    #[test]
    fn selection_moves_and_clamps() {
        let mut a = app();
        a.on_key(Key::Down);
        assert_eq!(a.selected.as_deref(), Some("sda"));
        a.on_key(Key::Char('j'));
        assert_eq!(a.selected.as_deref(), Some("sda"));
        a.on_key(Key::Char('k'));
        a.on_key(Key::Up);
        assert_eq!(a.selected.as_deref(), Some("sdb"));
    }

    #[test]
    fn filter_edit_keep_and_clear() {
        let mut a = app();
        a.on_key(Key::Char('/'));
        assert!(a.filter_editing);
        for c in "sda".chars() {
            a.on_key(Key::Char(c));
        }
        // While typing, q is a letter, not quit.
        a.on_key(Key::Char('q'));
        assert!(!a.quit);
        a.on_key(Key::Backspace);
        a.on_key(Key::Enter);
        assert!(!a.filter_editing);
        assert_eq!(a.filter, "sda");
        assert_eq!(names(&a), ["sda"]);
        assert_eq!(a.selected.as_deref(), Some("sda"));
        a.on_key(Key::Esc);
        assert_eq!(names(&a), ["sdb", "sda"]);
        a.on_key(Key::Char('/'));
        a.on_key(Key::Char('z'));
        assert!(names(&a).is_empty());
        assert_eq!(a.selected, None);
        a.on_key(Key::Esc);
        assert!(!a.filter_editing);
        assert_eq!(a.filter, "");
    }

    #[test]
    fn pause_keeps_reports_and_steps() {
        let mut rs = reports();
        let mut a = App::new(
            Source::Replay { file: "x".into() },
            Selection::default(),
            true,
        );
        a.on_key(Key::Char(' '));
        assert!(a.paused);
        a.on_report(rs.remove(0));
        a.on_report(rs.remove(0));
        assert_eq!((a.reports, a.backlog()), (0, 2));
        a.on_key(Key::Char('n'));
        assert_eq!((a.reports, a.backlog()), (1, 1));
        a.on_key(Key::Char('p'));
        assert!(!a.paused);
        assert_eq!((a.reports, a.backlog()), (2, 0));
        // Not paused: `n` does nothing.
        a.on_key(Key::Char('n'));
        assert_eq!(a.reports, 2);
    }

    #[test]
    fn the_cgroups_pane_is_a_tab_stop_only_with_the_flag() {
        let mut a = app();
        for _ in 0..3 {
            a.on_key(Key::Tab);
        }
        assert_eq!(a.pane, Pane::Devices, "no cgroups pane without --cgroups");
        a.cgroups = true;
        for _ in 0..3 {
            a.on_key(Key::Tab);
        }
        assert_eq!(a.pane, Pane::Cgroups);
        a.on_key(Key::Tab);
        assert_eq!(a.pane, Pane::Devices);
        a.on_key(Key::BackTab);
        assert_eq!(a.pane, Pane::Cgroups);
        a.on_key(Key::BackTab);
        assert_eq!(a.pane, Pane::Processes);
    }

    #[test]
    fn window_help_panes_and_quit() {
        let mut a = app();
        assert_eq!(a.window_s(), 60);
        a.on_key(Key::Char('+'));
        assert_eq!(a.window_s(), 120);
        for _ in 0..10 {
            a.on_key(Key::Char('+'));
        }
        assert_eq!(a.window_s(), 600);
        for _ in 0..10 {
            a.on_key(Key::Char('-'));
        }
        assert_eq!(a.window_s(), 30);
        a.on_key(Key::Tab);
        assert_eq!(a.pane, Pane::Charts);
        a.on_key(Key::Tab);
        assert_eq!(a.pane, Pane::Processes);
        a.on_key(Key::Tab);
        assert_eq!(a.pane, Pane::Devices);
        a.on_key(Key::BackTab);
        assert_eq!(a.pane, Pane::Processes);
        a.on_key(Key::BackTab);
        a.on_key(Key::BackTab);
        assert_eq!(a.pane, Pane::Devices);
        a.on_key(Key::Char('?'));
        assert!(a.help);
        // In help, other keys do nothing; Esc closes.
        a.on_key(Key::Char('a'));
        assert!(!a.show_all);
        a.on_key(Key::Esc);
        assert!(!a.help);
        assert!(!a.quit);
        a.on_key(Key::Char('q'));
        assert!(a.quit);
        let mut b = app();
        b.on_key(Key::Char('/'));
        b.on_key(Key::CtrlC);
        assert!(b.quit);
    }

    #[test]
    fn thr_is_shown_once_an_aws_volume_was_throttled() {
        use crate::monitor::aws::AwsInterval;
        use crate::sys::ebs::{Cap, Kind, Share};
        let aws = |share: f64| {
            std::sync::Arc::new(AwsInterval {
                kind: Kind::EbsVolume,
                volume_id: None,
                secs: 1.0,
                shares: vec![Share {
                    cap: Cap::VolumeIops,
                    exceeded_us: (share * 1e6) as u64,
                    share,
                }],
                iops: 0.0,
                bytes_per_s: 0.0,
                queue_length: 0,
                read_latency: None,
                write_latency: None,
                effective_iops: None,
                effective_bytes_per_s: None,
                exceeded_total_s: Vec::new(),
                reader: Default::default(),
            })
        };
        let mut a = App::new(
            Source::Replay { file: "x".into() },
            Selection::default(),
            true,
        );
        let has_thr = |a: &App| a.columns(400).iter().any(|c| c.key == "thr_pct");
        let mut rs = reports().into_iter();
        // An AWS volume never throttled, and no AWS device at all: no column.
        let mut r = rs.next().unwrap();
        r.devices[1].aws = Some(aws(0.0));
        a.on_report(r);
        assert!(!has_thr(&a));
        let mut r = rs.next().unwrap();
        r.devices[1].aws = Some(aws(0.63));
        a.on_report(r);
        assert!(has_thr(&a));
        assert_eq!(Col::by_key("thr_pct").header(), "thr%");
        let sdb = a.rows.iter().find(|r| r.name == "sdb").unwrap();
        assert_eq!(Col::by_key("thr_pct").value(sdb), Some(63.0));
        let sda = a.rows.iter().find(|r| r.name == "sda").unwrap();
        assert_eq!(Col::by_key("thr_pct").value(sda), None);
        // The clause stat prints, on the selected device's line.
        assert_eq!(
            sdb.aws_clause.as_deref(),
            Some("throttled by the volume's IOPS cap 63 % of this second")
        );
        assert_eq!(
            super::super::draw::gauge_words(sdb),
            "sdb: throttled by the volume's IOPS cap 63 % of this second"
        );
        assert_eq!(sda.aws_clause, None);
    }

    #[test]
    fn a_column_shown_when_non_zero_stays_once_shown() {
        // Discards in the first interval only: d/s appears and stays (it shifted the table
        // when it came and went between frames).
        let text = "#iosat-record 1\nR 1000000000 1000000000\nD 8:16 sdb disk sdb\n\
T 1000000000 1000000000\n 8 16 sdb 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n\
T 2000000000 2000000000\n 8 16 sdb 101 0 808 201 0 0 0 0 0 501 201 10 0 80 10 0 0\n\
T 3000000000 3000000000\n 8 16 sdb 201 0 1608 401 0 0 0 0 0 1001 401 10 0 80 10 0 0\n";
        let reports: Vec<IntervalReport> =
            Replay::new(text, Selection::default(), false, Box::new(|_| None))
                .unwrap()
                .filter_map(|s| match s.unwrap() {
                    Step::Report(r) => Some(r),
                    _ => None,
                })
                .collect();
        assert_eq!(reports.len(), 2);
        let mut a = App::new(
            Source::Replay { file: "x".into() },
            Selection::default(),
            false,
        );
        let has_ds = |a: &App| a.columns(400).iter().any(|c| c.key == "d/s");
        assert!(!has_ds(&a));
        let mut it = reports.into_iter();
        a.on_report(it.next().unwrap());
        assert!(has_ds(&a), "discards in this interval");
        a.on_report(it.next().unwrap());
        assert_eq!(a.rows[0].rates.as_ref().unwrap().d_s, Some(0.0));
        assert!(has_ds(&a), "no discards now, but the column stays");
    }

    #[test]
    fn the_queue_share_is_a_column_once_a_device_has_queued() {
        // 100 reads of 3 ms: 2 ms in the queue, 1 ms at the device (issue 40).
        let text = "#iosat-record 1\nR 1000000000 1000000000\nD 8:16 sdb disk sdb\nB 0\n\
T 1000000000 1000000000\n 8 16 sdb 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n\
B 0 8:16/r/300000000/100=100 8:16/rQ/200000000/0/92=100 8:16/rD/100000000/84=100\n\
T 2000000000 2000000000\n 8 16 sdb 101 0 808 301 0 0 0 0 0 301 301 0 0 0 0 0 0\n";
        let mut a = App::new(
            Source::Replay { file: "x".into() },
            Selection::default(),
            false,
        );
        for s in Replay::new(text, Selection::default(), false, Box::new(|_| None)).unwrap() {
            if let Step::Report(r) = s.unwrap() {
                a.on_report(r);
            }
        }
        let keys: Vec<&str> = a.columns(400).iter().map(|c| c.key).collect();
        assert!(keys.contains(&"r_queue_share_pct"), "{keys:?}");
        assert!(!keys.contains(&"w_queue_share_pct"), "no writes: {keys:?}");
        let share = Col::by_key("r_queue_share_pct").value(&a.rows[0]).unwrap();
        assert!((share - 200.0 / 3.0).abs() < 1e-9, "{share}");
        assert_eq!(Col::by_key("r_queue_share_pct").header(), "rq%");
    }

    #[test]
    fn history_is_windowed_and_columns_fit() {
        let a = app();
        let h = a.history("sdb");
        assert_eq!(h.len(), 2);
        assert_eq!(h[1].r_await, Some(2.0));
        assert!(a.history("nope").is_empty());
        let narrow: Vec<&str> = a.columns(40).iter().map(|c| c.key).collect();
        assert_eq!(narrow, ["device", "r/s", "w/s", "mib_s"]);
        let wide = a.columns(400);
        assert!(
            wide.iter().all(|c| !c.profile),
            "no profile, no sat columns"
        );
        assert!(
            wide.iter().all(|c| !c.when_nonzero),
            "no discards or flushes"
        );
        assert_eq!(Col::by_key("util").header(), "%busy");
        assert_eq!(Col::by_key("read_concurrency").header(), "r_conc");
    }
}
