//! DiskSample → DiskDelta::between → DiskRates: raw cumulative counters in, the sysstat formulas
//! (docs/design.md §4) plus per-direction concurrency out; data only, never rendering. Submodules:
//! interval (the stat engine), record (the recording format), replay (the one recording reader),
//! collect (the one live collector), hindsight (the ring of recent samples written out on an
//! incident), series (chart history), fields (the field registry), select,
//! saturation, watch, info, procs (who does the I/O). Pure except the readers (`RawSample::take`,
//! collect, info, watch), which read through sys/ and never /proc themselves.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use crate::error::Result;
use crate::sys::diskstats::{self, DiskStatLine};
use crate::sys::{clock, Root};

/// One read of /proc/diskstats with the clocks read around it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiskSample {
    /// Monotonic time at the middle of the file read: rates divide by differences of this.
    pub mono_ns: u64,
    /// Wall-clock time (ns since the epoch) at the same moment, for timestamps only.
    pub wall_ns: i64,
    pub lines: Vec<DiskStatLine>,
}

/// The raw text of one read with its clocks: what `--record` stores, so that replay and live
/// run the same parser on the same bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RawSample {
    pub mono_ns: u64,
    pub wall_ns: i64,
    pub text: String,
}

impl RawSample {
    /// Read `<proc>/diskstats`, taking the monotonic clock just before and just after the read
    /// and keeping the midpoint, so the interval is the one the kernel's counters span.
    pub fn take(root: &Root) -> Result<RawSample> {
        let t0 = clock::monotonic_ns();
        let text = diskstats::read_text(root)?;
        let t1 = clock::monotonic_ns();
        let wall_ns = clock::wall_ns();
        Ok(RawSample {
            mono_ns: t0 + (t1 - t0) / 2,
            wall_ns,
            text,
        })
    }

    /// Parse the text; the warnings name each skipped line.
    pub fn parse(&self) -> (DiskSample, Vec<String>) {
        let p = diskstats::parse(&self.text);
        (
            DiskSample {
                mono_ns: self.mono_ns,
                wall_ns: self.wall_ns,
                lines: p.lines,
            },
            p.warnings,
        )
    }
}

impl DiskSample {
    /// Read and parse `<proc>/diskstats` (malformed lines are skipped).
    pub fn take(root: &Root) -> Result<DiskSample> {
        Ok(RawSample::take(root)?.parse().0)
    }

    /// The line of device major:minor, if present in this sample.
    pub fn find(&self, major: u32, minor: u32) -> Option<&DiskStatLine> {
        self.lines
            .iter()
            .find(|l| l.major == major && l.minor == minor)
    }
}

/// The kernel prints every `*_ms` field of diskstats as a 32-bit unsigned int
/// (block/genhd.c diskstats_show), so they wrap at 2^32 ms (49.7 days of busy time).
pub const MS_FIELD_WRAP: u64 = 1 << 32;

/// Upper bound on how long one request can have been in flight, used only to decide whether a
/// 32-bit wrap of a per-direction time is physically possible (block-layer timeouts are 30 s;
/// four times that with retries).
pub const MAX_REQUEST_AGE_MS: u64 = 120_000;

/// Slack for io_ticks, which the kernel advances in jiffies (up to 10 ms at HZ=100) and
/// samples imprecisely on 5.0–6.9.
pub const IO_TICKS_SLACK_MS: u64 = 50;

/// Differences of every counter between two samples of one device, and the measured interval.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiskDelta {
    pub dt_ns: u64,
    pub reads: u64,
    pub reads_merged: u64,
    pub read_sectors: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub writes_merged: u64,
    pub write_sectors: u64,
    pub write_ms: u64,
    pub io_ms: u64,
    pub weighted_ms: u64,
    pub discards: Option<u64>,
    pub discards_merged: Option<u64>,
    pub discard_sectors: Option<u64>,
    pub discard_ms: Option<u64>,
    pub flushes: Option<u64>,
    pub flush_ms: Option<u64>,
    /// The gauge at the end of the interval.
    pub in_flight: u64,
    /// How many ms fields were recognised as 32-bit wraps in this interval.
    pub wrapped_fields: u32,
}

/// Counter difference; None when it went backwards. Never saturating (docs/design.md §3.1).
fn count(prev: u64, cur: u64) -> Option<u64> {
    cur.checked_sub(prev)
}

/// Difference of a 32-bit ms field: a plain difference, or the wrapped one when it went
/// backwards and the wrapped advance is at most `bound_ms` (proof that it is a wrap, not a
/// reset). Sets `wrapped` when a wrap was used.
fn ms(prev: u64, cur: u64, bound_ms: u64, wrapped: &mut u32) -> Option<u64> {
    if cur >= prev {
        return Some(cur - prev);
    }
    if prev >= MS_FIELD_WRAP || cur >= MS_FIELD_WRAP {
        return None;
    }
    let d = cur + MS_FIELD_WRAP - prev;
    if d <= bound_ms {
        *wrapped += 1;
        Some(d)
    } else {
        None
    }
}

fn both<T>(a: Option<T>, b: Option<T>) -> Option<(T, T)> {
    Some((a?, b?))
}

impl DiskDelta {
    /// None when any counter went backwards (unless a 32-bit ms wrap is provable) or dt is 0.
    ///
    /// A ms field that went backwards counts as a wrap only when every count field advanced
    /// (the device was not reset or re-created), both values fit in 32 bits, and the wrapped
    /// advance is possible in the interval: io_ms by at most the interval (+ jiffy slack); a
    /// per-direction time by at most (completions in that direction + requests in flight at
    /// the start) × (interval + MAX_REQUEST_AGE_MS), and never without a completion.
    pub fn between(prev: &DiskStatLine, cur: &DiskStatLine, dt_ns: u64) -> Option<DiskDelta> {
        Self::between_why(prev, cur, dt_ns).ok()
    }

    /// [`DiskDelta::between`] with the reason when there is no value: a zero interval, a
    /// counter that went backwards, or a sum of deltas beyond 64 bits (checked, never wrapped
    /// or saturated into a wrong number).
    pub fn between_why(
        prev: &DiskStatLine,
        cur: &DiskStatLine,
        dt_ns: u64,
    ) -> Result<DiskDelta, interval::NoValue> {
        use interval::NoValue::{CounterWentBackwards as Back, Overflow, ZeroInterval};
        if dt_ns == 0 {
            return Err(ZeroInterval);
        }
        Self::deltas(prev, cur, dt_ns)
            .map_err(|o| if o { Overflow } else { Back })?
            .ok_or(Back)
    }

    /// Err(true) on overflow; Ok(None) when a counter went backwards.
    fn deltas(
        prev: &DiskStatLine,
        cur: &DiskStatLine,
        dt_ns: u64,
    ) -> Result<Option<DiskDelta>, bool> {
        let all = [
            cur.reads.checked_sub(prev.reads),
            cur.writes.checked_sub(prev.writes),
            both(prev.discards, cur.discards).map_or(Some(0), |(p, c)| c.checked_sub(p)),
            both(prev.flushes, cur.flushes).map_or(Some(0), |(p, c)| c.checked_sub(p)),
        ];
        if all.iter().all(Option::is_some) {
            let sum = all
                .iter()
                .try_fold(0u64, |a, b| a.checked_add(b.unwrap_or(0)));
            let bound = sum.and_then(|s| s.checked_add(prev.in_flight));
            if bound.is_none() {
                return Err(true);
            }
        }
        Ok(Self::deltas_unchecked(prev, cur, dt_ns))
    }

    fn deltas_unchecked(prev: &DiskStatLine, cur: &DiskStatLine, dt_ns: u64) -> Option<DiskDelta> {
        let reads = count(prev.reads, cur.reads)?;
        let reads_merged = count(prev.reads_merged, cur.reads_merged)?;
        let read_sectors = count(prev.read_sectors, cur.read_sectors)?;
        let writes = count(prev.writes, cur.writes)?;
        let writes_merged = count(prev.writes_merged, cur.writes_merged)?;
        let write_sectors = count(prev.write_sectors, cur.write_sectors)?;
        let disc = match both(prev.discards, cur.discards) {
            Some((p, c)) => Some(count(p, c)?),
            None => None,
        };
        let disc_merged = match both(prev.discards_merged, cur.discards_merged) {
            Some((p, c)) => Some(count(p, c)?),
            None => None,
        };
        let disc_sectors = match both(prev.discard_sectors, cur.discard_sectors) {
            Some((p, c)) => Some(count(p, c)?),
            None => None,
        };
        let flushes = match both(prev.flushes, cur.flushes) {
            Some((p, c)) => Some(count(p, c)?),
            None => None,
        };

        let dt_ms = dt_ns.div_ceil(1_000_000);
        let per_req_ms = dt_ms + MAX_REQUEST_AGE_MS;
        let start_inflight = prev.in_flight;
        let dir_bound = |n: u64| {
            if n == 0 {
                0
            } else {
                // Checked in deltas(): n + start_inflight fits; the product is a bound only.
                (n + start_inflight).saturating_mul(per_req_ms)
            }
        };
        let mut wrapped = 0u32;
        let read_ms = ms(prev.read_ms, cur.read_ms, dir_bound(reads), &mut wrapped)?;
        let write_ms = ms(prev.write_ms, cur.write_ms, dir_bound(writes), &mut wrapped)?;
        let io_ms = ms(
            prev.io_ms,
            cur.io_ms,
            dt_ms + IO_TICKS_SLACK_MS,
            &mut wrapped,
        )?;
        let all = reads + writes + disc.unwrap_or(0) + flushes.unwrap_or(0);
        let weighted_ms = ms(
            prev.weighted_ms,
            cur.weighted_ms,
            dir_bound(all),
            &mut wrapped,
        )?;
        let discard_ms = match both(prev.discard_ms, cur.discard_ms) {
            Some((p, c)) => Some(ms(p, c, dir_bound(disc.unwrap_or(0)), &mut wrapped)?),
            None => None,
        };
        let flush_ms = match both(prev.flush_ms, cur.flush_ms) {
            Some((p, c)) => Some(ms(p, c, dir_bound(flushes.unwrap_or(0)), &mut wrapped)?),
            None => None,
        };
        Some(DiskDelta {
            dt_ns,
            reads,
            reads_merged,
            read_sectors,
            read_ms,
            writes,
            writes_merged,
            write_sectors,
            write_ms,
            io_ms,
            weighted_ms,
            discards: disc,
            discards_merged: disc_merged,
            discard_sectors: disc_sectors,
            discard_ms,
            flushes,
            flush_ms,
            in_flight: cur.in_flight,
            wrapped_fields: wrapped,
        })
    }
}

/// The sysstat formulas (docs/design.md §4) plus iosat's additions. None = undefined (e.g. await
/// with no completed requests, discard fields on a kernel without them).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DiskRates {
    pub interval_s: f64,
    pub r_s: f64,
    pub w_s: f64,
    pub d_s: Option<f64>,
    pub f_s: Option<f64>,
    pub rkb_s: f64,
    pub wkb_s: f64,
    pub dkb_s: Option<f64>,
    pub rrqm_s: f64,
    pub wrqm_s: f64,
    pub drqm_s: Option<f64>,
    pub rrqm_pct: f64,
    pub wrqm_pct: f64,
    pub drqm_pct: Option<f64>,
    pub r_await: Option<f64>,
    pub w_await: Option<f64>,
    pub d_await: Option<f64>,
    pub f_await: Option<f64>,
    pub rareq_sz: Option<f64>,
    pub wareq_sz: Option<f64>,
    pub dareq_sz: Option<f64>,
    pub aqu_sz: f64,
    pub util_pct: f64,
    /// Δread_ms/Δt: the mean number of reads in flight (Little's law; exact on kernels ≥ 5.7).
    pub read_concurrency: f64,
    pub write_concurrency: f64,
    pub discard_concurrency: Option<f64>,
    pub flush_concurrency: Option<f64>,
    pub in_flight: u64,
}

/// Sectors in /proc/diskstats are always 512 bytes (iostats.rst).
const KB_PER_SECTOR: f64 = 512.0 / 1024.0;

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// sysstat's %rrqm: merged / (merged + issued) × 100, 0 when neither happened.
fn merge_pct(merged: u64, ios: u64) -> f64 {
    // In f64: merged + ios may exceed 64 bits (counters near 2^64).
    let total = merged as f64 + ios as f64;
    if total > 0.0 {
        merged as f64 / total * 100.0
    } else {
        0.0
    }
}

impl DiskRates {
    pub fn from_delta(d: &DiskDelta) -> DiskRates {
        let dt_s = d.dt_ns as f64 / 1e9;
        let dt_ms = d.dt_ns as f64 / 1e6;
        let per_s = |n: u64| n as f64 / dt_s;
        let conc = |ms: u64| ms as f64 / dt_ms;
        DiskRates {
            interval_s: dt_s,
            r_s: per_s(d.reads),
            w_s: per_s(d.writes),
            d_s: d.discards.map(per_s),
            f_s: d.flushes.map(per_s),
            rkb_s: d.read_sectors as f64 * KB_PER_SECTOR / dt_s,
            wkb_s: d.write_sectors as f64 * KB_PER_SECTOR / dt_s,
            dkb_s: d.discard_sectors.map(|s| s as f64 * KB_PER_SECTOR / dt_s),
            rrqm_s: per_s(d.reads_merged),
            wrqm_s: per_s(d.writes_merged),
            drqm_s: d.discards_merged.map(per_s),
            rrqm_pct: merge_pct(d.reads_merged, d.reads),
            wrqm_pct: merge_pct(d.writes_merged, d.writes),
            drqm_pct: both(d.discards_merged, d.discards).map(|(m, n)| merge_pct(m, n)),
            r_await: ratio(d.read_ms, d.reads),
            w_await: ratio(d.write_ms, d.writes),
            d_await: both(d.discard_ms, d.discards).and_then(|(t, n)| ratio(t, n)),
            f_await: both(d.flush_ms, d.flushes).and_then(|(t, n)| ratio(t, n)),
            rareq_sz: ratio(d.read_sectors, d.reads).map(|s| s * KB_PER_SECTOR),
            wareq_sz: ratio(d.write_sectors, d.writes).map(|s| s * KB_PER_SECTOR),
            dareq_sz: both(d.discard_sectors, d.discards)
                .and_then(|(s, n)| ratio(s, n))
                .map(|s| s * KB_PER_SECTOR),
            aqu_sz: conc(d.weighted_ms),
            util_pct: d.io_ms as f64 / dt_ms * 100.0,
            read_concurrency: conc(d.read_ms),
            write_concurrency: conc(d.write_ms),
            discard_concurrency: d.discard_ms.map(conc),
            flush_concurrency: d.flush_ms.map(conc),
            in_flight: d.in_flight,
        }
    }

    /// The values under the key names of `iostat -x -o JSON` ("r/s", "w/s", "r_await",
    /// "aqu-sz", "util", ...), for embedding in sweep/fsync JSON. Undefined values (await
    /// without requests, discards on an old kernel) are `null`, not a made-up 0.
    pub fn sysstat_json(&self) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::Value;
        let mut m = serde_json::Map::new();
        let mut put = |k: &str, v: Option<f64>| {
            m.insert(
                k.to_string(),
                v.and_then(serde_json::Number::from_f64)
                    .map_or(Value::Null, Value::Number),
            );
        };
        put("r/s", Some(self.r_s));
        put("w/s", Some(self.w_s));
        put("d/s", self.d_s);
        put("f/s", self.f_s);
        put("rkB/s", Some(self.rkb_s));
        put("wkB/s", Some(self.wkb_s));
        put("dkB/s", self.dkb_s);
        put("rrqm/s", Some(self.rrqm_s));
        put("wrqm/s", Some(self.wrqm_s));
        put("drqm/s", self.drqm_s);
        put("rrqm", Some(self.rrqm_pct));
        put("wrqm", Some(self.wrqm_pct));
        put("drqm", self.drqm_pct);
        put("r_await", self.r_await);
        put("w_await", self.w_await);
        put("d_await", self.d_await);
        put("f_await", self.f_await);
        put("rareq-sz", self.rareq_sz);
        put("wareq-sz", self.wareq_sz);
        put("dareq-sz", self.dareq_sz);
        put("aqu-sz", Some(self.aqu_sz));
        put("util", Some(self.util_pct));
        m
    }
}

#[cfg(test)]
mod tests;

pub mod aws;
pub mod blklat;
pub mod burst;
pub mod cgroups;
pub mod cgsource;
pub mod collect;
pub mod fields;
pub mod hindsight;
pub mod info;
pub mod interval;
pub mod judge;
pub mod observe;
pub mod procs;
pub mod record;
pub mod replay;
pub mod saturation;
pub mod select;
pub mod series;
pub mod watch;
