//! `iosat fsync --like postgres|innodb|mariadb`: the settings a DBA chooses between
//! (PostgreSQL's `wal_sync_method`, InnoDB's `innodb_flush_method`, MariaDB 11's
//! `innodb_*_file_buffering` / `_write_through`), each opened and synced as the database does;
//! the result types, the recommendation in the database's own words and the per-setting flush
//! evidence from the kernel's counters. Pure: the timed loops are like_run.rs.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, load/, sys/.

use super::device::DiskFacts;
use super::report::{FlushStats, GroupLevel, LatencySummary, Layout, Verification};
use super::SyncCall;
use crate::units::ms;
use serde::{Deserialize, Serialize};

/// The database whose commit path is imitated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Database {
    Postgres,
    Innodb,
    Mariadb,
}

impl Database {
    pub fn name(self) -> &'static str {
        match self {
            Database::Postgres => "postgres",
            Database::Innodb => "innodb",
            Database::Mariadb => "mariadb",
        }
    }

    pub fn from_name(s: &str) -> Option<Database> {
        match s.trim().to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" | "pg" => Some(Database::Postgres),
            "innodb" | "mysql" => Some(Database::Innodb),
            "mariadb" => Some(Database::Mariadb),
            _ => None,
        }
    }

    /// The variable whose values the entries are (MariaDB's are named per entry).
    pub fn variable(self) -> &'static str {
        match self {
            Database::Postgres => "wal_sync_method",
            Database::Innodb => "innodb_flush_method",
            Database::Mariadb => "innodb_log_file_* / innodb_data_file_*",
        }
    }

    /// Bytes of one commit's write: PostgreSQL's XLOG_BLCKSZ (8 KiB); InnoDB's log writer
    /// writes whole 512-byte log blocks, a small transaction's commit a few of them (4 KiB).
    pub fn commit_write_bytes(self) -> u32 {
        match self {
            Database::Postgres => PG_WAL_BLOCK,
            Database::Innodb | Database::Mariadb => INNODB_REDO_WRITE,
        }
    }
}

/// PostgreSQL's commit_siblings default: the leader waits commit_delay only when at least
/// this many other backends are in a transaction.
pub const COMMIT_SIBLINGS: u32 = 5;

/// XLOG_BLCKSZ.
pub const PG_WAL_BLOCK: u32 = 8192;
/// wal_segment_size: every WAL segment is created full size and zero-filled (wal_init_zero).
pub const PG_SEGMENT_BYTES: u64 = 16 << 20;
/// One commit of a small InnoDB transaction: eight 512-byte log blocks.
pub const INNODB_REDO_WRITE: u32 = 4096;
/// The redo log file (preallocated and circular, like ib_logfile0).
pub const INNODB_REDO_BYTES: u64 = 16 << 20;
/// innodb_page_size.
pub const INNODB_PAGE: u32 = 16384;
/// Pages per doublewrite batch (innodb_doublewrite_pages' order of size).
pub const DBLWR_BATCH_PAGES: u32 = 8;
/// The tablespace the pages are written back to (1024 pages).
pub const INNODB_DATA_BYTES: u64 = 16 << 20;

/// What one entry measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// The log write(s) of one commit made durable: what a committing session waits for.
    Commit,
    /// InnoDB's page flush: the doublewrite batch written sequentially and synced, then the
    /// same pages in place and synced.
    PageFlush,
}

impl Pattern {
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Commit => "commit",
            Pattern::PageFlush => "page_flush",
        }
    }
}

/// How one file is opened and made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileAccess {
    pub open_flags: libc::c_int,
    pub sync: SyncCall,
}

impl FileAccess {
    const fn new(open_flags: libc::c_int, sync: SyncCall) -> FileAccess {
        FileAccess { open_flags, sync }
    }

    /// "O_DSYNC|O_DIRECT + none", as the report shows it.
    pub fn describe(self) -> String {
        let mut f: Vec<&str> = Vec::new();
        if self.open_flags & libc::O_SYNC == libc::O_SYNC {
            f.push("O_SYNC");
        } else if self.open_flags & libc::O_DSYNC != 0 {
            f.push("O_DSYNC");
        }
        if self.open_flags & libc::O_DIRECT != 0 {
            f.push("O_DIRECT");
        }
        let open = if f.is_empty() {
            "buffered".to_string()
        } else {
            f.join("|")
        };
        let sync = match self.sync {
            SyncCall::None => "no sync call",
            SyncCall::Fsync => "fsync",
            SyncCall::Fdatasync => "fdatasync",
        };
        format!("{open} + {sync}")
    }

    /// The write itself waits for stable storage (O_DSYNC or O_SYNC).
    pub fn synchronous_write(self) -> bool {
        self.open_flags & libc::O_DSYNC != 0
    }
}

/// One setting and the file accesses it means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    /// The setting's value as the configuration file spells it ("fdatasync", "O_DIRECT",
    /// "innodb_log_file_write_through=ON"; "write" for PostgreSQL's non-synced ceiling).
    pub value: &'static str,
    pub pattern: Pattern,
    /// The log (commit) or data (page flush) file.
    pub access: FileAccess,
    /// A commit's (or page flush's) data is on stable storage when the call returns.
    pub durable: bool,
    /// PostgreSQL's default on Linux; InnoDB's and MariaDB's documented defaults.
    pub default: bool,
}

const NONE: SyncCall = SyncCall::None;
const FSYNC: SyncCall = SyncCall::Fsync;
const FDATASYNC: SyncCall = SyncCall::Fdatasync;
const DIRECT: libc::c_int = libc::O_DIRECT;

/// The settings of `db`, in the order the report lists them.
///
/// PostgreSQL (src/backend/access/transam/xlog.c get_sync_bit, and pg_test_fsync, which opens
/// the open_* methods with O_DIRECT where the platform has it): open_datasync = O_DSYNC,
/// fdatasync and fsync = a plain descriptor and the call after the writes, open_sync = O_SYNC;
/// "write" is pg_test_fsync's non-synced ceiling.
///
/// InnoDB (MySQL 8.0 manual, innodb_flush_method): fsync = buffered log and data, fsync both;
/// O_DSYNC = "InnoDB uses O_SYNC to open and flush the log files, and fsync() to flush the data
/// files"; O_DIRECT = O_DIRECT data files, fsync both; O_DIRECT_NO_FSYNC = O_DIRECT data files
/// without the fsync after writing them (the log is still fsynced).
///
/// MariaDB 11: the log and data files are set separately: *_buffering=OFF opens with O_DIRECT,
/// *_write_through=ON with O_DSYNC (the write itself is durable, no fsync after it).
pub fn settings(db: Database) -> Vec<Setting> {
    let s = |value, pattern, open, sync, durable, default| Setting {
        value,
        pattern,
        access: FileAccess::new(open, sync),
        durable,
        default,
    };
    use Pattern::{Commit, PageFlush};
    match db {
        Database::Postgres => vec![
            s(
                "open_datasync",
                Commit,
                libc::O_DSYNC | DIRECT,
                NONE,
                true,
                false,
            ),
            s("fdatasync", Commit, 0, FDATASYNC, true, true),
            s("fsync", Commit, 0, FSYNC, true, false),
            s(
                "open_sync",
                Commit,
                libc::O_SYNC | DIRECT,
                NONE,
                true,
                false,
            ),
            s("write", Commit, 0, NONE, false, false),
        ],
        Database::Innodb => vec![
            s("fsync", Commit, 0, FSYNC, true, true),
            s("fsync", PageFlush, 0, FSYNC, true, true),
            s("O_DSYNC", Commit, libc::O_SYNC, NONE, true, false),
            s("O_DSYNC", PageFlush, 0, FSYNC, true, false),
            s("O_DIRECT", Commit, 0, FSYNC, true, false),
            s("O_DIRECT", PageFlush, DIRECT, FSYNC, true, false),
            s("O_DIRECT_NO_FSYNC", Commit, 0, FSYNC, true, false),
            s("O_DIRECT_NO_FSYNC", PageFlush, DIRECT, NONE, false, false),
        ],
        Database::Mariadb => vec![
            s(
                "innodb_log_file_buffering=ON",
                Commit,
                0,
                FSYNC,
                true,
                false,
            ),
            s(
                "innodb_log_file_buffering=OFF",
                Commit,
                DIRECT,
                FSYNC,
                true,
                true,
            ),
            s(
                "innodb_log_file_write_through=ON",
                Commit,
                libc::O_DSYNC | DIRECT,
                NONE,
                true,
                false,
            ),
            s(
                "innodb_data_file_buffering=ON",
                PageFlush,
                0,
                FSYNC,
                true,
                false,
            ),
            s(
                "innodb_data_file_buffering=OFF",
                PageFlush,
                DIRECT,
                FSYNC,
                true,
                true,
            ),
            s(
                "innodb_data_file_write_through=ON",
                PageFlush,
                libc::O_DSYNC | DIRECT,
                NONE,
                true,
                false,
            ),
        ],
    }
}

/// Writes per commit measured for `db`: PostgreSQL one and two 8 KiB WAL writes (pg_test_fsync's
/// two tables), InnoDB one log write.
pub fn writes_per_commit(db: Database) -> &'static [u32] {
    match db {
        Database::Postgres => &[1, 2],
        Database::Innodb | Database::Mariadb => &[1],
    }
}

/// One setting measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LikeEntry {
    /// The setting's value ("fdatasync", "O_DIRECT", "innodb_log_file_write_through=ON").
    pub method: String,
    pub pattern: Pattern,
    /// Writes made per commit (a page flush: the doublewrite batch and each page in place).
    pub writes_per_commit: u32,
    /// Bytes of each write.
    pub write_bytes: u32,
    /// How the file is opened and synced: "O_DSYNC|O_DIRECT + no sync call".
    pub access: String,
    pub durable: bool,
    pub commits: u64,
    pub elapsed_ns: u64,
    pub commits_per_s: f64,
    pub latency_ns: LatencySummary,
    /// The device's flush counters (diskstats fields 19–20) around this entry.
    pub device_flushes: Option<FlushStats>,
    /// What the kernel says about this entry's flushes, one sentence each.
    #[serde(default)]
    pub flush_evidence: Vec<String>,
    /// The read-back (`verify`, `verify_error` in the JSON, where they always stood).
    #[serde(flatten)]
    pub verification: Verification,
    #[serde(default)]
    pub interrupted: bool,
    /// How steady the setting's commit rate was: the CV of its commits over eight equal parts
    /// of the duration (None in older files and for a setting cut short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_cv: Option<f64>,
    /// The commit rate of a second, shorter pass of the same setting, made after every other
    /// setting's first pass and in the reverse order: how far a repeat moved on this host,
    /// drift the windows of one pass cannot see (None in older files, for settings never
    /// recommended and when the run was cut short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_per_s: Option<f64>,
}

impl LikeEntry {
    /// The noise of the commit rate, relative to it: the 95 % interval's half-width from its
    /// windows, or how far the repeat pass moved from the first (relative to their mean),
    /// whichever is wider (0 when neither is known).
    pub fn rate_noise_rel(&self) -> f64 {
        let windows = self
            .rate_cv
            .map_or(0.0, |cv| crate::analysis::confidence::rel_half_width(cv, 8));
        let repeat = match self.repeat_per_s {
            Some(r) if r > 0.0 && self.commits_per_s > 0.0 => {
                (r - self.commits_per_s).abs() / ((r + self.commits_per_s) / 2.0)
            }
            _ => 0.0,
        };
        windows.max(repeat)
    }

    /// The commit rate's windows scatter beyond a healthy device's (the sweep's
    /// [`crate::analysis::confidence::UNSTABLE_CV`]).
    pub fn unsteady(&self) -> bool {
        self.rate_cv
            .is_some_and(|cv| cv > crate::analysis::confidence::UNSTABLE_CV)
    }
}

/// Two settings' commit rates are the same within the noise: their ratio lies within
/// [`SAME_SPEED`] or within their intervals added ([`LikeEntry::rate_noise_rel`]).
pub fn equivalent(a: &LikeEntry, b: &LikeEntry) -> bool {
    let (x, y) = (a.commits_per_s, b.commits_per_s);
    if x <= 0.0 || y <= 0.0 {
        return false;
    }
    x.max(y) / x.min(y) - 1.0 <= noise_band(a, b)
}

/// How far apart two settings' rates may lie and still be the same speed: [`SAME_SPEED`] or
/// their noises added, whichever is wider.
fn noise_band(a: &LikeEntry, b: &LikeEntry) -> f64 {
    (SAME_SPEED - 1.0).max(a.rate_noise_rel() + b.rate_noise_rel())
}

/// A setting that could not be measured, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LikeSkipped {
    pub method: String,
    pub pattern: Pattern,
    pub reason: String,
}

/// The recommendation: one variable, one value, and the figures behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    pub variable: String,
    pub value: String,
    pub p99_ns: u64,
    pub commits_per_s: f64,
    /// The setting it is compared with, and how many times faster (commits/s) it is.
    pub versus: Option<String>,
    pub speedup: Option<f64>,
    /// The line as a DBA puts it in the configuration file, with the figures.
    pub text: String,
    /// The other settings measured as fast within the noise ([`equivalent`]): any of them
    /// would do as well on this host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub equivalent: Vec<String>,
    /// The run was disturbed (a setting's rate scattered, two writes a commit beat one): the
    /// advice holds only until a quiet run confirms it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provisional: bool,
}

/// The `--like` section of an fsync result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LikeResult {
    pub database: Database,
    pub variable: String,
    pub entries: Vec<LikeEntry>,
    #[serde(default)]
    pub skipped: Vec<LikeSkipped>,
    /// One per variable: PostgreSQL and InnoDB have one; MariaDB one for the log file and one
    /// for the data files.
    #[serde(default)]
    pub recommendations: Vec<Recommendation>,
    /// What the databases themselves document about these settings.
    #[serde(default)]
    pub caveats: Vec<String>,
    /// Why the block-latency source (the device's own flush latency per setting) is absent;
    /// None when it timed the flushes.
    #[serde(default)]
    pub block_latency_absent: Option<String>,
}

/// Two writes per commit this much faster than one: the run was disturbed (see `caveats`).
pub const NOISE_RATIO: f64 = 1.5;

/// Within this ratio two settings are the same speed: the default (or the documented choice)
/// is kept rather than a difference in the noise.
pub const SAME_SPEED: f64 = 1.10;

/// The entry of `value` and `pattern` with `wpc` writes per commit, if measured.
fn find<'a>(entries: &'a [LikeEntry], value: &str, pattern: Pattern) -> Option<&'a LikeEntry> {
    entries
        .iter()
        .filter(|e| e.method == value && e.pattern == pattern && e.commits > 0)
        .min_by_key(|e| e.writes_per_commit)
}

/// No disk commits two writes faster than one: a setting that did, by more than
/// [`NOISE_RATIO`], shows a disturbed run.
pub fn disturbed(entries: &[LikeEntry]) -> bool {
    entries.iter().any(|one| {
        one.writes_per_commit == 1
            && one.commits > 0
            && entries.iter().any(|two| {
                two.method == one.method
                    && two.pattern == one.pattern
                    && two.writes_per_commit == 2
                    && two.commits > 0
                    && two.commits_per_s > one.commits_per_s * NOISE_RATIO
            })
    })
}

/// The value to choose among the durable entries of `pattern` in `values` (one write per
/// commit: the common case; ties by the mean), compared with the default (or, when the
/// default wins, with the runner-up). A winner within [`SAME_SPEED`] of the default is not a
/// reason to change it: the default is named.
fn choose(
    entries: &[LikeEntry],
    candidates: &[Setting],
    pattern: Pattern,
    variable: &str,
    fs: &str,
) -> Option<Recommendation> {
    let measured: Vec<(&Setting, &LikeEntry)> = candidates
        .iter()
        .filter(|s| s.pattern == pattern && s.durable)
        .filter_map(|s| Some((s, find(entries, s.value, pattern)?)))
        .collect();
    let best = measured
        .iter()
        .max_by(|a, b| a.1.commits_per_s.total_cmp(&b.1.commits_per_s))?;
    let default = measured.iter().find(|(s, _)| s.default);
    let (pick, versus) = match default {
        Some(d) if d.0.value != best.0.value => {
            if equivalent(best.1, d.1) {
                // Not worth leaving the default: compare it with the fastest.
                (d, Some(best))
            } else {
                (best, Some(d))
            }
        }
        _ => {
            let runner_up = measured
                .iter()
                .filter(|(s, _)| s.value != best.0.value)
                .max_by(|a, b| a.1.commits_per_s.total_cmp(&b.1.commits_per_s));
            (best, runner_up)
        }
    };
    let what = match pattern {
        Pattern::Commit => "commit",
        Pattern::PageFlush => "page flush",
    };
    let e = pick.1;
    let speedup = versus.map(|v| e.commits_per_s / v.1.commits_per_s.max(f64::MIN_POSITIVE));
    let value = pick.0.value;
    let setting = match value.split_once('=') {
        Some((var, val)) => format!("{var} = {val}"),
        None => format!("{variable} = {value}"),
    };
    let comparison = match (versus, speedup) {
        (Some(v), Some(x)) if x >= SAME_SPEED => {
            format!(", {x:.1}× faster than {} on this filesystem", v.0.value)
        }
        (Some(v), Some(x)) if x >= 1.0 => format!(
            ", as fast as {} within {:.0} % on this filesystem: keep the default",
            v.0.value,
            (x - 1.0) * 100.0
        ),
        (Some(v), Some(x)) => format!(
            ", {:.0} % slower than {} on this filesystem but within the noise (±{:.0} %): \
             keep the default",
            (1.0 - x) * 100.0,
            v.0.value,
            noise_band(e, v.1) * 100.0
        ),
        _ => String::new(),
    };
    let per_s = match pattern {
        Pattern::Commit => "commits/s",
        Pattern::PageFlush => "page flushes/s",
    };
    // Every other setting as fast as the pick within the noise: on this host they are the
    // same choice, and a repeat may rank them either way.
    let same: Vec<String> = measured
        .iter()
        .filter(|(s, m)| s.value != value && equivalent(m, e))
        .map(|(s, _)| s.value.to_string())
        .collect();
    let provisional = measured.iter().any(|(_, m)| m.unsteady()) || disturbed(entries);
    let equivalent_words = if same.is_empty() {
        String::new()
    } else {
        format!(
            "; {} {} as fast within the noise (±{:.0} %), so any of them does as well here",
            same.join(", "),
            if same.len() == 1 { "is" } else { "are" },
            measured
                .iter()
                .map(|(_, m)| m.rate_noise_rel())
                .fold(SAME_SPEED - 1.0, f64::max)
                * 100.0
        )
    };
    let text = format!(
        "{}{setting}: {what} p99 {}, {:.0} {per_s}{comparison}{equivalent_words}{fs}",
        if provisional {
            "Provisional (the run was disturbed: repeat it on a quiet machine before acting): "
        } else {
            ""
        },
        ms(e.latency_ns.p99 as f64, 2),
        e.commits_per_s
    );
    Some(Recommendation {
        equivalent: same,
        provisional,
        variable: setting.split(" = ").next().unwrap_or(variable).to_string(),
        value: setting.split(" = ").nth(1).unwrap_or(value).to_string(),
        p99_ns: e.latency_ns.p99,
        commits_per_s: e.commits_per_s,
        versus: versus.map(|v| v.0.value.to_string()),
        speedup,
        text,
    })
}

/// The recommendations for `db` from its measured entries. `fs`: the filesystem's name, if
/// known ("" otherwise), appended as " (ext4)".
pub fn recommend(db: Database, entries: &[LikeEntry], fs: &str) -> Vec<Recommendation> {
    let all = settings(db);
    let fs = if fs.is_empty() {
        String::new()
    } else {
        format!(" ({fs})")
    };
    match db {
        Database::Postgres => choose(entries, &all, Pattern::Commit, db.variable(), &fs)
            .into_iter()
            .collect(),
        Database::Innodb => {
            // One variable for both files: the commit decides (a session waits for it); when
            // the commits are the same speed, the page flush does.
            let commit = choose(entries, &all, Pattern::Commit, db.variable(), &fs);
            let pages = choose(entries, &all, Pattern::PageFlush, db.variable(), &fs);
            match (commit, pages) {
                (Some(c), Some(p)) => {
                    let c_same = c.speedup.map_or(true, |x| x < SAME_SPEED);
                    if c_same && p.value != c.value {
                        let pe = find(entries, &p.value, Pattern::Commit);
                        let ce = find(entries, &c.value, Pattern::Commit);
                        // The page-flush winner, if its commits are as fast.
                        if let (Some(pe), Some(ce)) = (pe, ce) {
                            if pe.commits_per_s * SAME_SPEED >= ce.commits_per_s {
                                return vec![p];
                            }
                        }
                    }
                    vec![c]
                }
                (c, p) => c.or(p).into_iter().collect(),
            }
        }
        Database::Mariadb => {
            let log: Vec<Setting> = all
                .iter()
                .copied()
                .filter(|s| s.pattern == Pattern::Commit)
                .collect();
            let data: Vec<Setting> = all
                .iter()
                .copied()
                .filter(|s| s.pattern == Pattern::PageFlush)
                .collect();
            choose(entries, &log, Pattern::Commit, db.variable(), &fs)
                .into_iter()
                .chain(choose(
                    entries,
                    &data,
                    Pattern::PageFlush,
                    db.variable(),
                    &fs,
                ))
                .collect()
        }
    }
}

/// PostgreSQL's commit_delay from the shared-log group-commit levels with more than
/// [`COMMIT_SIBLINGS`] backends (where the delay applies): the delay and number of backends
/// where waiting raised commits/s most over commit_delay = 0 at the same backends,
/// recommended only when that is at least [`SAME_SPEED`] (10 %) more; otherwise "keep
/// commit_delay = 0". None when no level ran with a delay.
pub fn commit_delay_advice(levels: &[GroupLevel]) -> Option<Recommendation> {
    let shared = |n: u32, d: u32| {
        levels.iter().find(|l| {
            l.layout == Layout::SharedLog
                && l.committers == n
                && l.commit_delay_us == d
                && l.commits > 0
        })
    };
    let mut tried = false;
    let mut best: Option<(&GroupLevel, &GroupLevel, f64)> = None;
    // With commit_siblings or fewer other committers the leader did not wait: a difference
    // there is noise, not the delay.
    for l in levels.iter().filter(|l| {
        l.layout == Layout::SharedLog
            && l.commit_delay_us > 0
            && l.commits > 0
            && l.committers > COMMIT_SIBLINGS
    }) {
        let Some(base) = shared(l.committers, 0) else {
            continue;
        };
        tried = true;
        let gain = l.commits_per_s / base.commits_per_s.max(f64::MIN_POSITIVE);
        if best.map_or(true, |b| gain > b.2) {
            best = Some((l, base, gain));
        }
    }
    if !tried {
        return None;
    }
    let (l, base, gain) = best?;
    let cost_ms = (l.latency_ns.p99 as f64 - base.latency_ns.p99 as f64) / 1e6;
    let cost = if cost_ms >= 0.0 {
        format!("at a p99 cost of {cost_ms:.1} ms")
    } else {
        format!("with p99 {:.1} ms lower", -cost_ms)
    };
    let (value, text, chosen) = if gain >= SAME_SPEED {
        (
            l.commit_delay_us,
            format!(
                "commit_delay = {}: raises commits/s at {} backends by {gain:.1}× ({:.0} against {:.0}) {cost} (it applies with commit_siblings = {COMMIT_SIBLINGS} or fewer other backends active)",
                l.commit_delay_us, l.committers, l.commits_per_s, base.commits_per_s
            ),
            l,
        )
    } else {
        (
            0,
            format!(
                "keep commit_delay = 0: no delay raised commits/s by {:.0} % at any number of backends (best: commit_delay = {} at {} backends, {gain:.2}×)",
                (SAME_SPEED - 1.0) * 100.0,
                l.commit_delay_us,
                l.committers
            ),
            base,
        )
    };
    Some(Recommendation {
        variable: "commit_delay".into(),
        value: value.to_string(),
        p99_ns: chosen.latency_ns.p99,
        commits_per_s: chosen.commits_per_s,
        versus: Some(if value > 0 {
            "0".into()
        } else {
            l.commit_delay_us.to_string()
        }),
        speedup: Some(if value > 0 { gain } else { 1.0 / gain }),
        text,
        equivalent: Vec::new(),
        provisional: false,
    })
}

/// What the databases document about these settings, for the result's caveats.
pub fn caveats(db: Database, entries: &[LikeEntry], fs: &str) -> Vec<String> {
    let mut out = Vec::new();
    match db {
        Database::Postgres => {
            out.push("open_datasync and open_sync are opened with O_DIRECT here, as pg_test_fsync opens them; PostgreSQL itself adds O_DIRECT only with wal_level = minimal (and debug_io_direct in 16+), so its open_* commits can be slower than these.".into());
            // No disk commits two writes faster than one: when a setting did, the run was
            // disturbed (another process, a CPU-starved machine) and one run decides nothing.
            for s in settings(db).iter().filter(|s| s.durable) {
                let of = |n: u32| {
                    entries
                        .iter()
                        .find(|e| e.method == s.value && e.writes_per_commit == n && e.commits > 0)
                };
                if let (Some(one), Some(two)) = (of(1), of(2)) {
                    if two.commits_per_s > one.commits_per_s * NOISE_RATIO {
                        out.push(format!(
                            "{} made {:.0} commits/s with two writes a commit against {:.0} with one, which no disk does: this run was disturbed (other I/O, a busy CPU); repeat it with a longer --duration before acting on the recommendation.",
                            s.value, two.commits_per_s, one.commits_per_s
                        ));
                    }
                }
            }
            let one = find(entries, "open_datasync", Pattern::Commit);
            let two = entries
                .iter()
                .find(|e| e.method == "open_datasync" && e.writes_per_commit == 2 && e.commits > 0);
            if let (Some(one), Some(two)) = (one, two) {
                out.push(format!(
                    "open_datasync syncs every write: with two 8 KiB writes per commit it makes {:.0} commits/s against {:.0} with one (a commit that fills more than one WAL page pays per page).",
                    two.commits_per_s, one.commits_per_s
                ));
            }
        }
        Database::Innodb | Database::Mariadb => {
            out.push(format!(
                "O_DIRECT_NO_FSYNC (MySQL manual): before MySQL 8.0.14 it skipped the fsync after file-extending writes too, which is not safe on XFS and ext4, whose metadata needs it; from 8.0.14 InnoDB calls fsync() after creating or extending a file.{}",
                if fs == "xfs" { " This directory is on XFS." } else { "" }
            ));
            out.push("O_DIRECT alone does not empty the device's volatile write cache: pages written without an fsync are durable only once a later flush (the redo log's fsync, a checkpoint) reaches the device; see the flush counts per setting.".into());
            out.push("The page flush is measured without a concurrent redo log writer; on a busy server both share the device.".into());
            if db == Database::Mariadb {
                out.push("MariaDB 11 sets the log and the data files separately (innodb_log_file_buffering, innodb_log_file_write_through, innodb_data_file_buffering, innodb_data_file_write_through) and deprecates innodb_flush_method; write_through needs a device that honours FUA to be cheaper than a flush.".into());
            }
        }
    }
    out
}

/// The device's flush time as measured in this run: the median f_await of the entries whose
/// commits sent flushes, ms.
pub fn device_flush_ms(entries: &[LikeEntry]) -> Option<f64> {
    let mut f: Vec<f64> = entries
        .iter()
        .filter_map(|e| e.device_flushes.as_ref()?.f_await_ms)
        .filter(|f| *f > 0.0)
        .collect();
    if f.is_empty() {
        return None;
    }
    f.sort_by(f64::total_cmp);
    Some(f[f.len() / 2])
}

/// What the kernel's counters say about one entry's flushes (item 3 of issue 31), one sentence
/// each with its evidence: the flushes that reached the device per commit; a write-through
/// cache (the kernel sends none: flushes are no-ops); fsyncs that reach a write-back device as
/// no flush at all; commits faster than the device's own flush time; the device's own flush
/// latency as the block layer timed it (the BPF source), or why that source is absent
/// (`blk_absent`).
pub fn flush_evidence(
    e: &LikeEntry,
    dev: Option<&DiskFacts>,
    flush_ms: Option<f64>,
    blk_absent: Option<&str>,
) -> Vec<String> {
    let mut out = Vec::new();
    let Some(dev) = dev else {
        return out;
    };
    let wc = dev.write_cache.as_deref();
    let sysfs = format!("/sys/block/{}/queue", dev.name);
    if wc == Some("write through") {
        out.push(format!(
            "{sysfs}/write_cache = write through: the kernel sends no flush to this device (a flush is a no-op), so {}'s syncs cost only the write.",
            e.method
        ));
    }
    let Some(f) = e.device_flushes.as_ref() else {
        return out;
    };
    let commits = e.commits.max(1);
    let per = f.flushes as f64 / commits as f64;
    let wait = f
        .f_await_ms
        .map(|a| format!(", {a:.3} ms each at the device"))
        .unwrap_or_default();
    out.push(format!(
        "diskstats {}: {} flush requests completed during {} commits ({per:.2} per commit{wait}).",
        dev.name, f.flushes, e.commits
    ));
    let commit_ms = e.latency_ns.p50 as f64 / 1e6;
    match (&f.block_layer, blk_absent) {
        (Some(b), _) => match (b.p50_ms, b.p99_ms) {
            (Some(p50), Some(p99)) if b.flushes > 0 => out.push(format!(
                "the device's own flushes took {p50:.3} ms p50, {p99:.3} ms p99 (block layer, {} flushes timed), commits {commit_ms:.3} ms p50.",
                b.flushes
            )),
            _ => out.push(format!(
                "the block layer timed no flush on {} during {} commits (commits {commit_ms:.3} ms p50).",
                dev.name, e.commits
            )),
        },
        (None, Some(why)) => out.push(format!(
            "the device's own flush latency is not known: the block-latency source is absent ({why})."
        )),
        (None, None) => {}
    }
    let fua = dev.fua == Some(true);
    if e.durable && f.flushes == 0 && wc == Some("write back") {
        if fua && (e.access.contains("O_DSYNC") || e.access.contains("O_SYNC")) {
            out.push(format!(
                "{sysfs}/fua = 1: {}'s synchronous writes reach the device as FUA writes, durable without a separate flush.",
                e.method
            ));
        } else {
            out.push(format!(
                "{}'s syncs reach the device as no flush at all while {sysfs}/write_cache = write back: the data may sit in the device's volatile cache when the call returns.",
                e.method
            ));
        }
    }
    if let Some(fl) = flush_ms {
        let p50_ms = e.latency_ns.p50 as f64 / 1e6;
        if e.durable && wc == Some("write back") && per < 0.5 && p50_ms < fl {
            out.push(format!(
                "{}'s median commit ({p50_ms:.3} ms) is below the device's own flush time ({fl:.3} ms, f_await of this run) with {per:.2} flushes per commit: durable only if the writes are (FUA, or a cache that does not need flushing).",
                e.method
            ));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
