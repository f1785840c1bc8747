//! A `stat --record` recording as a page: a summary per device (peak await, time overloaded
//! as its judgement says), then per device throughput (r/s, w/s, MB/s), request size, latency
//! (r_await, w_await), %util, load (aqu-sz) and saturation (await ÷ the device profile's
//! baseline latency) on a wall-clock axis, and the per-interval table its Markdown and CSV
//! share. The series come from monitor::series (the
//! one replay and StatEngine of `iosat stat --replay`), or typed from `stat --json` lines
//! (the one reader of them, which also gives their CSV). Pure (no IO). Imports monitor/,
//! report/ and report::table.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::doc::{self, Block, Doc, Item, List, TableBlock};
use super::svg::{LineChart, Series};
use super::Format;
use crate::monitor::record::{self, ParseError};
use crate::monitor::series::{is_partition, split_idle, Point, StatSeries};
use crate::profile::{DeviceProfile, Found};
use crate::report::table::Table;
use crate::sys::device::DevKind;
use crate::units::iso_utc;
use std::sync::Arc;

/// True when `text` is a recording: iosat's (by its header line) or a pt-diskstats/pt-stalk
/// sample file (its first line is a `TS <epoch>` stamp), both of which `stat --replay` reads.
pub fn is_recording(text: &str) -> bool {
    text.starts_with(record::HEADER.trim_end())
        || text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("TS "))
            .and_then(|r| r.split_ascii_whitespace().next())
            .is_some_and(|t| t.split('.').all(|p| p.bytes().all(|b| b.is_ascii_digit())))
}

/// The recording's document (busy devices, idle names) in `format`: the page, Markdown or
/// text. (Its CSV is `stat --csv`'s, written from the interval reports by report::stat_view.)
pub fn render(devs: &[StatSeries], idle: &[String], format: Format) -> String {
    doc::write(&document(devs, idle), format)
}

/// One `iosat stat --json` line, typed: what the page and the CSV read of it.
#[derive(serde::Deserialize)]
struct JsonLine {
    /// "stat" (schema_version 2 on); `schema` "iosat-stat" before.
    kind: Option<String>,
    schema: Option<String>,
    schema_version: Option<serde_json::Value>,
    #[serde(default)]
    timestamp: String,
    #[serde(default)]
    start_timestamp: String,
    wall_ns: Option<i64>,
    interval_s: Option<f64>,
    #[serde(default)]
    since_boot: bool,
    #[serde(rename = "avg-cpu")]
    avg_cpu: Option<JsonCpu>,
    devices: Option<Vec<JsonDevice>>,
}

/// iostat's avg-cpu object.
#[derive(serde::Deserialize)]
struct JsonCpu {
    user: Option<f64>,
    nice: Option<f64>,
    system: Option<f64>,
    iowait: Option<f64>,
    steal: Option<f64>,
    idle: Option<f64>,
}

/// A value of a device object that is not one of its named keys: a number (or null) under
/// one of the registry's keys (monitor::fields), or anything else (ignored).
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Cell {
    Num(Option<f64>),
    Other(serde::de::IgnoredAny),
}

/// The registry's values of an object, by JSON key.
#[derive(serde::Deserialize, Default)]
struct Values(std::collections::HashMap<String, Cell>);

impl Values {
    fn num(&self, key: &str) -> Option<f64> {
        match self.0.get(key) {
            Some(Cell::Num(v)) => *v,
            _ => None,
        }
    }
}

/// One device of a `stat --json` line: sysstat's keys (the registry's), then iosat's.
#[derive(serde::Deserialize)]
struct JsonDevice {
    #[serde(default)]
    kernel_name: String,
    #[serde(default)]
    major: u32,
    #[serde(default)]
    minor: u32,
    kind: Option<String>,
    disk_device: Option<String>,
    #[serde(default)]
    wrapped_ms_fields: u32,
    no_value: Option<String>,
    profile: Option<JsonProfile>,
    latency: Option<JsonLatency>,
    /// What stat learned of the device at that interval (null or absent: nothing).
    #[serde(default)]
    learned: Option<crate::learn::Learned>,
    /// The device's one judgement at that interval (monitor::judge; absent in older files).
    #[serde(default)]
    judgement: Option<crate::analysis::state::Judgement>,
    #[serde(flatten)]
    values: Values,
}

/// A device's block-layer latency, or why it has none (`{"none": "no_request_queue"}`).
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum JsonLatency {
    Measured(Box<crate::monitor::blklat::Measured>),
    None(serde::de::IgnoredAny),
}

/// The `profile` object of a `stat --json` device: the saturation stat judged.
#[derive(serde::Deserialize)]
struct JsonProfile {
    id: Option<String>,
    baseline_latency_ns: Option<f64>,
    knee_concurrency: Option<f64>,
    max_useful_iops: Option<f64>,
    /// A profile whose sweep did not reach the knee gives these instead.
    knee_at_least: Option<f64>,
    max_useful_iops_at_least: Option<f64>,
    baseline_pattern: Option<String>,
    baseline_block_size: Option<f64>,
    #[serde(flatten)]
    values: Values,
}

const STAT_SCHEMA: &str = "iosat-stat";

impl JsonLine {
    /// Kind "stat", or schema "iosat-stat" as version 1 lines said.
    fn is_stat(&self) -> bool {
        self.kind.as_deref() == Some("stat") || self.schema.as_deref() == Some(STAT_SCHEMA)
    }
}

/// True when `text` is `iosat stat --json` output: JSON lines, the first of kind "stat"
/// (schema "iosat-stat" before version 2).
pub fn is_stat_json(text: &str) -> bool {
    text.lines()
        .next()
        .and_then(|l| serde_json::from_str::<JsonLine>(l).ok())
        .is_some_and(|v| v.is_stat())
}

/// An interval line read and checked: its kind and version, its end, length and devices.
struct Interval {
    line: JsonLine,
    end_wall_ns: i64,
    interval_s: f64,
    devices: Vec<JsonDevice>,
}

/// The one reader of `iosat stat --json` output: every line typed, its kind and schema
/// version checked. Err names the line.
fn read_json(text: &str) -> Result<Vec<Interval>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| ParseError { line: n, reason };
        let mut v: JsonLine = serde_json::from_str(line)
            .map_err(|e| bad(format!("expected one iosat stat JSON object per line: {e}")))?;
        if !v.is_stat() {
            return Err(bad("expected kind \"stat\" (iosat stat --json)".into()));
        }
        super::check_version(
            v.schema_version.as_ref(),
            "stat",
            super::stat_view::SCHEMA_VERSION,
            false,
        )
        .map_err(bad)?;
        let (Some(end_wall_ns), Some(interval_s), Some(devices)) =
            (v.wall_ns, v.interval_s, v.devices.take())
        else {
            return Err(bad("expected wall_ns, interval_s and devices[]".into()));
        };
        out.push(Interval {
            line: v,
            end_wall_ns,
            interval_s,
            devices,
        });
    }
    Ok(out)
}

/// `iosat stat --json` output as series: one line per interval, the values as stat computed
/// them (nothing recomputed), partitions left out as for recordings, and saturation as stat
/// judged it: the line's `profile` object carries the baseline it used.
pub fn series_from_json(text: &str) -> Result<(Vec<StatSeries>, Vec<String>), ParseError> {
    let mut out: Vec<StatSeries> = Vec::new();
    // Per series, the latest learned object that judged by something learned: where the last
    // interval's does not (a few writes after minutes of reads), the page judges by it, as a
    // recording's page judges by the device at rest (Learned::for_summary). Forgotten once a
    // later object has learned fewer intervals: learning started again (a change confirmed
    // and learned anew, a re-created device), and the earlier curve is another device's.
    let mut judged: Vec<Option<Arc<crate::learn::Learned>>> = Vec::new();
    for iv in read_json(text)? {
        for d in iv.devices {
            let partition = match d.kind.as_deref() {
                Some(k) => k == DevKind::Partition.as_str(),
                None => is_partition(None, &d.kernel_name),
            };
            let v = &d.values;
            // An interval with no value (a counter went backwards) has no point.
            let (Some(r_s), Some(w_s), false) = (v.num("r/s"), v.num("w/s"), partition) else {
                continue;
            };
            let idx = match out
                .iter()
                .position(|s| s.name == d.kernel_name && s.major == d.major && s.minor == d.minor)
            {
                Some(i) => i,
                None => {
                    out.push(StatSeries {
                        name: d.kernel_name.clone(),
                        major: d.major,
                        minor: d.minor,
                        display_name: d
                            .disk_device
                            .clone()
                            .unwrap_or_else(|| d.kernel_name.clone()),
                        points: Vec::new(),
                        profile: profile_of_json(d.profile.as_ref()),
                        learned: None,
                    });
                    judged.push(None);
                    out.len() - 1
                }
            };
            if let Some(l) = &d.learned {
                let l = Arc::new(l.clone());
                if l.judged_by().is_some() {
                    judged[idx] = Some(Arc::clone(&l));
                } else if judged[idx]
                    .as_ref()
                    .is_some_and(|j| l.intervals < j.intervals)
                {
                    judged[idx] = None;
                }
                out[idx].learned = Some(l);
            }
            let sat = |k: &str| d.profile.as_ref().and_then(|p| p.values.num(k));
            out[idx].points.push(Point {
                end_wall_ns: iv.end_wall_ns,
                interval_s: iv.interval_s,
                r_s,
                w_s,
                rkb_s: v.num("rkB/s").unwrap_or(0.0),
                wkb_s: v.num("wkB/s").unwrap_or(0.0),
                r_await: v.num("r_await"),
                w_await: v.num("w_await"),
                aqu_sz: v.num("aqu-sz").unwrap_or(0.0),
                util_pct: v.num("util").unwrap_or(0.0),
                sat_r: sat("saturation_r"),
                sat_w: sat("saturation_w"),
                learned_refs: Default::default(),
                p95_ms: [None, None],
                split: match &d.latency {
                    Some(JsonLatency::Measured(m)) => {
                        [m.split(false).cloned(), m.split(true).cloned()]
                    }
                    _ => [None, None],
                },
                // As stat judged it (nothing recomputed).
                judgement: d.judgement.clone(),
                // Its judgement already carries the cap's share.
                cap: None,
                burst: None,
                // And what the CPUs said of it.
                cpus_busy: None,
                judged_rates: None,
            });
        }
    }
    for (s, j) in out.iter_mut().zip(judged) {
        s.learned =
            crate::analysis::learned::Learned::for_summary(s.learned.as_deref().cloned(), || {
                j.as_deref().cloned()
            })
            .map(Arc::new);
    }
    Ok(split_idle(out))
}

/// `iosat stat --json` output as `stat --csv` prints the same intervals: each column read
/// under its JSON key (the values as stat computed them), so `iosat report` of stat's JSON
/// lines writes the live command's CSV.
pub fn csv_from_json(text: &str) -> Result<String, ParseError> {
    use super::stat_view::{preamble, CsvRow};
    use crate::monitor::fields::{DISK, LATENCY, PROFILE};
    let mut s = preamble(Format::Csv, &[], false);
    for iv in read_json(text)? {
        let l = &iv.line;
        let cpu = l
            .avg_cpu
            .as_ref()
            .map(|c| [c.user, c.nice, c.system, c.iowait, c.steal, c.idle]);
        for d in &iv.devices {
            let p = d.profile.as_ref();
            let lat = match &d.latency {
                Some(JsonLatency::Measured(m)) => Some(m.as_ref()),
                _ => None,
            };
            let row = CsvRow {
                timestamp: l.timestamp.clone(),
                start_timestamp: l.start_timestamp.clone(),
                interval_s: iv.interval_s,
                since_boot: l.since_boot,
                disk_device: d.disk_device.clone().unwrap_or_default(),
                kernel_name: d.kernel_name.clone(),
                major: d.major,
                minor: d.minor,
                kind: d.kind.clone().unwrap_or_default(),
                disk: DISK.iter().map(|c| d.values.num(c.json)).collect(),
                wrapped_ms_fields: d.wrapped_ms_fields,
                no_value: d.no_value.clone().unwrap_or_default(),
                profile_id: p.and_then(|p| p.id.clone()).unwrap_or_default(),
                profile: PROFILE
                    .iter()
                    .map(|c| p.and_then(|p| p.values.num(c.json)))
                    .collect(),
                latency: LATENCY.iter().map(|c| lat.and_then(c.get)).collect(),
                cpu,
                judgement: d.judgement.clone(),
            };
            s.push_str(&row.line());
        }
    }
    Ok(s)
}

/// The profile a `stat --json` device object was judged against (its `profile` object).
fn profile_of_json(p: Option<&JsonProfile>) -> Result<Found, String> {
    let p = p.ok_or_else(|| "iosat stat had no profile for it.".to_string())?;
    match (&p.id, p.baseline_latency_ns) {
        (Some(id), Some(baseline_latency_ns)) => Ok(Found {
            path: id.clone(),
            profile: Arc::new(DeviceProfile {
                id: id.clone(),
                baseline_latency_ns,
                knee_concurrency: p.knee_concurrency.or(p.knee_at_least).unwrap_or(0.0) as u32,
                knee_at_least: p.knee_at_least.map(|k| k as u32),
                max_useful_iops: p
                    .max_useful_iops
                    .or(p.max_useful_iops_at_least)
                    .unwrap_or(0.0),
                pattern: p.baseline_pattern.clone().unwrap_or_default(),
                block_size: p.baseline_block_size.unwrap_or(0.0) as u64,
                ..Default::default()
            }),
        }),
        _ => Err("its profile object lacks id or baseline_latency_ns.".into()),
    }
}

fn f(v: Option<f64>, d: usize) -> String {
    v.map_or(String::new(), |x| format!("{x:.d$}"))
}

/// Per-interval rows of every device: what the charts show, as numbers.
pub fn table(devs: &[StatSeries]) -> Table {
    let mut t = Table::new([
        "device",
        "time_utc",
        "t_s",
        "interval_s",
        "r/s",
        "w/s",
        "rkB/s",
        "wkB/s",
        "r_await_ms",
        "w_await_ms",
        "aqu-sz",
        "%util",
        "r_saturation",
        "w_saturation",
    ]);
    // The block layer's split (issue 40), as stat --wide's columns, when the recording has it.
    let split = devs
        .iter()
        .flat_map(|d| &d.points)
        .any(|p| p.split.iter().flatten().any(|s| s.count > 0));
    if split {
        for h in ["rq%", "wq%", "r_dev95_ms", "w_dev95_ms"] {
            t.headers.push(h.into());
            t.right.push(true);
        }
    }
    t.right[0] = false;
    t.right[1] = false;
    let t0 = start_ns(devs);
    for d in devs {
        for p in &d.points {
            let sp = |i: usize, g: fn(&crate::monitor::blklat::OpSplit) -> Option<f64>| {
                f(p.split[i].as_ref().and_then(g), 1)
            };
            let extra = split.then(|| {
                [
                    sp(0, |s| s.queue_share_pct),
                    sp(1, |s| s.queue_share_pct),
                    f(p.split[0].as_ref().and_then(|s| s.device_p95_ms), 3),
                    f(p.split[1].as_ref().and_then(|s| s.device_p95_ms), 3),
                ]
            });
            t.push(
                [
                    d.name.clone(),
                    iso_utc(p.end_wall_ns),
                    format!("{:.3}", (p.end_wall_ns - t0) as f64 / 1e9),
                    format!("{:.3}", p.interval_s),
                    format!("{:.2}", p.r_s),
                    format!("{:.2}", p.w_s),
                    format!("{:.2}", p.rkb_s),
                    format!("{:.2}", p.wkb_s),
                    f(p.r_await, 3),
                    f(p.w_await, 3),
                    format!("{:.2}", p.aqu_sz),
                    format!("{:.2}", p.util_pct),
                    f(p.sat_r, 2),
                    f(p.sat_w, 2),
                ]
                .into_iter()
                .chain(extra.into_iter().flatten()),
            );
        }
    }
    t
}

/// Wall-clock start of the first interval of the recording (the charts' time zero).
fn start_ns(devs: &[StatSeries]) -> i64 {
    devs.iter()
        .filter_map(|d| d.points.first())
        .map(|p| p.end_wall_ns - (p.interval_s * 1e9) as i64)
        .min()
        .unwrap_or(0)
}

fn baseline_line(d: &StatSeries) -> String {
    // What learning judges by (Learned::judged_by): its baseline, else its estimate.
    let learned = d
        .learned
        .as_deref()
        .and_then(|l| Some((l, l.judged_by()?.1)));
    match (&d.profile, learned) {
        // No profile, a learned baseline (or estimate): the judgement of its own traffic,
        // and its diagnosis (the curve's summary: baseline, knee or its lower bound, ceiling).
        // The direction and size class the curve is of, as `analyze` says it: its ceiling is
        // of that class's requests.
        // Then every other size class learned, with its own baseline.
        (Err(_), Some((l, basis))) => format!(
            "{}: judged against the baseline {}{} from its own traffic ({}). {}.{}",
            d.name,
            crate::analysis::state::basis_adjective(basis),
            crate::learn::curve_of(l),
            crate::learn::basis_words(l),
            l.summary.as_ref().map_or("", |s| s.as_str()),
            crate::learn::other_classes_words(l)
                .iter()
                .map(|w| format!(" Learned too{w}."))
                .collect::<String>()
        ),
        _ => profile_line(d),
    }
}

/// The device's judgement (monitor::judge) at its last interval, in the words every view
/// uses, and how many intervals were in each state.
fn judgement_line(d: &StatSeries) -> Option<String> {
    use crate::analysis::state::{Basis, State};
    // Only a device judged against some baseline (swept or learned) at some interval, or
    // one learning flagged where it could not judge (a mix of sizes, a change learned again).
    d.points
        .iter()
        .filter_map(|p| p.judgement.as_ref())
        .find(|j| j.device.against_baseline() || j.device.flags.any())?;
    let last = d.points.iter().rev().find_map(|p| p.judgement.as_ref())?;
    let counts: Vec<String> = State::ALL
        .iter()
        .rev()
        .filter_map(|st| {
            let n = d
                .points
                .iter()
                .filter(|p| p.judgement.as_ref().is_some_and(|j| j.state() == *st))
                .count();
            (n > 0).then(|| format!("{} {n}", st.words()))
        })
        .collect();
    // A swept profile the traffic disagreed with at the last interval: the evidence.
    let disagreed: String = [&last.read, &last.write]
        .into_iter()
        .filter(|x| x.basis == Basis::Swept)
        .filter_map(|x| {
            Some(format!(
                " {}: {}.",
                x.dir.as_str(),
                x.flags.change.as_ref()?.evidence
            ))
        })
        .collect();
    Some(format!(
        "{}: {} at the last interval; intervals by state: {}.{disagreed}",
        d.name,
        last.words(),
        counts.join(", ")
    ))
}

/// The intervals against the cap the device was declared with (issue 42: on the command
/// line of the recorded run, or in its profile), in the words live `stat` printed under its
/// table: how many were at the cap, their median share, and the last one's words.
fn cap_line(d: &StatSeries) -> Option<String> {
    let uses: Vec<_> = d
        .points
        .iter()
        .filter_map(|p| p.judgement.as_ref()?.cap)
        .collect();
    let words = crate::analysis::declared::run_words(&uses)?;
    Some(format!("{}: {words}.", d.name))
}

fn profile_line(d: &StatSeries) -> String {
    match &d.profile {
        Ok(f) => format!(
            "{}: saturation = await ÷ {:.3} ms, the baseline (mean latency at concurrency 1, {} {} B) of {}{}.",
            d.name,
            f.profile.baseline_latency_ns / 1e6,
            f.profile.pattern,
            f.profile.block_size,
            f.profile.judged_against(),
            // The file, unless the profile came from a `stat --json` line (its id only).
            if f.path == f.profile.id {
                String::new()
            } else {
                format!(" ({})", f.path)
            }
        ),
        Err(why) => format!(
            "{}: saturation not judged: {why} {}",
            d.name,
            crate::profile::how_to_measure(&d.name)
        ),
    }
}

/// Log scale when the positive values span more than a factor of 20.
fn spans_decades<'a>(pts: impl Iterator<Item = &'a (f64, f64)>) -> bool {
    let (lo, hi) = pts
        .map(|p| p.1)
        .filter(|v| *v > 0.0)
        .fold((f64::INFINITY, 0f64), |(a, b), v| (a.min(v), b.max(v)));
    hi > 0.0 && hi / lo > 20.0
}

/// The overload line of the saturation chart: await above this multiple of
/// the profile's baseline (the 3×-p95 overload rule applied to the mean, as `stat` judges).
const OVERLOAD_X: f64 = 3.0;

/// One row per busy device: peak awaits and queue, mean %util, and the time it was
/// overloaded as its judgement says (monitor::judge: either direction, by the swept or the
/// learned baseline, the state the "intervals by state" line counts), when it was judged.
fn summary_table(devs: &[StatSeries]) -> Table {
    use crate::analysis::state::State;
    let mut t = Table::new([
        "device",
        "peak r_await (ms)",
        "peak w_await (ms)",
        "peak aqu-sz",
        "mean %util",
        "time overloaded",
    ]);
    t.right[0] = false;
    let peak = |v: &mut dyn Iterator<Item = f64>| {
        v.fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    };
    for d in devs {
        let total: f64 = d.points.iter().map(|p| p.interval_s).sum();
        let util = d
            .points
            .iter()
            .map(|p| p.util_pct * p.interval_s)
            .sum::<f64>()
            / total.max(1e-9);
        let judged = d.points.iter().filter_map(|p| p.judgement.as_ref());
        let time_in = |keep: &dyn Fn(State) -> bool| {
            d.points
                .iter()
                .filter(|p| p.judgement.as_ref().is_some_and(|j| keep(j.state())))
                .map(|p| p.interval_s)
                .fold(0.0, |a, b| a + b)
        };
        // Out of the time judged (an interval still learning, or a mix no curve judges, is
        // unknown: not "not overloaded"), and said so when that is not all of it.
        let above = (d.profile.is_ok() || judged.clone().any(|j| j.device.against_baseline()))
            .then(|| {
                let over = time_in(&|s| s == State::Overloaded);
                match time_in(&|s| s != State::Unknown) {
                    j if (total - j).abs() < 1e-6 => format!("{over:.1} s of {total:.1} s"),
                    j => format!("{over:.1} s of {j:.1} s judged ({total:.1} s recorded)"),
                }
            });
        t.push([
            d.name.clone(),
            f(peak(&mut d.points.iter().filter_map(|p| p.r_await)), 2),
            f(peak(&mut d.points.iter().filter_map(|p| p.w_await)), 2),
            f(peak(&mut d.points.iter().map(|p| p.aqu_sz)), 2),
            format!("{util:.1}"),
            above.unwrap_or_else(|| "no profile".into()),
        ]);
    }
    t
}

/// Under each device's charts.
const UTIL_NOTE: &str = "%util is the share of time with at least one request in flight: 100 % \
on a device that serves requests in parallel does not mean it is saturated.";

/// The recording as people read it: when and what was recorded, a summary per device, what
/// saturation is judged against (or why not), the idle devices, per device throughput and
/// request size first (as PMM's Disk Details), then latency, %util, load and saturation on a
/// wall-clock axis, and the intervals (folded on the page).
pub fn document(devs: &[StatSeries], idle: &[String]) -> Doc {
    document_with(devs, idle, &[], &[])
}

/// The recording's document with `iosat analyze`'s diagnosis of the same recording (its
/// lines, computed by the caller) under the saturation judgement: one page says both what
/// each interval was judged and what the recording as a whole shows.
pub fn render_with_diagnosis(
    devs: &[StatSeries],
    idle: &[String],
    diagnosis: &[String],
    format: Format,
) -> String {
    render_dump(devs, idle, diagnosis, &[], format)
}

/// [`render_with_diagnosis`] of a hindsight dump: its triggers (wall ns, label:
/// monitor::hindsight::triggers) said under the lead and marked on every chart.
pub fn render_dump(
    devs: &[StatSeries],
    idle: &[String],
    diagnosis: &[String],
    triggers: &[(i64, String)],
    format: Format,
) -> String {
    let mut d = document_with(devs, idle, diagnosis, triggers);
    if !triggers.is_empty() {
        say_triggers(&mut d, triggers);
    }
    doc::write(&d, format)
}

/// A hindsight dump's triggers: one line under the lead (the charts mark them).
fn say_triggers(d: &mut Doc, triggers: &[(i64, String)]) {
    let said: Vec<String> = triggers
        .iter()
        .map(|(w, l)| format!("{l} at {}", iso_utc(*w)))
        .collect();
    let at = d
        .blocks
        .iter()
        .position(|b| matches!(b, Block::Lead { .. }))
        .map_or(0, |i| i + 1);
    d.blocks.insert(
        at,
        Block::Para(format!(
            "A hindsight dump, written for: {}. The dotted line marked \"trigger\" on every \
             chart is that moment.",
            said.join("; ")
        )),
    );
}

/// [`document`] with the diagnosis lines (none: no such list).
fn document_with(
    devs: &[StatSeries],
    idle: &[String],
    diagnosis: &[String],
    triggers: &[(i64, String)],
) -> Doc {
    let t0 = start_ns(devs);
    let mut blocks = vec![
        Block::Context(context(devs, idle)),
        Block::Lead {
            text: format!(
                "Recorded from {} (times are UTC); latency in ms, rates per second. Every value \
is sysstat's formula over the measured interval, as `iosat stat --replay` prints it.",
                iso_utc(t0)
            ),
            hang: 2,
        },
    ];
    if devs.is_empty() {
        blocks.push(Block::Para(
            "No device did any I/O in this recording.".into(),
        ));
    } else {
        blocks.push(Block::Heading("Summary".into()));
        blocks.push(Block::Table(TableBlock::new(summary_table(devs))));
        blocks.push(Block::List(List::titled(
            "Saturation",
            devs.iter()
                .flat_map(|d| {
                    [baseline_line(d)]
                        .into_iter()
                        .chain(judgement_line(d))
                        .chain(cap_line(d))
                })
                .map(Item::plain),
        )));
        // Queue or device (issue 40): where the recording has the block layer's split.
        let split: Vec<String> = devs
            .iter()
            .flat_map(|d| {
                d.run_split()
                    .into_iter()
                    .map(move |r| format!("{}: {}", d.name, r.words()))
            })
            .collect();
        if !split.is_empty() {
            blocks.push(Block::List(List::titled(
                "Queue or device (the block layer's split of each request's latency)",
                split.iter().map(Item::plain),
            )));
        }
        if !diagnosis.is_empty() {
            blocks.push(Block::List(List::titled(
                "Diagnosis (as iosat analyze reads the recording)",
                diagnosis.iter().map(Item::plain),
            )));
        }
    }
    if !idle.is_empty() {
        blocks.push(Block::Details {
            summary: format!(
                "{} device{} without I/O in the recording (not drawn)",
                idle.len(),
                if idle.len() == 1 { "" } else { "s" }
            ),
            blocks: vec![Block::Para(format!(
                "No I/O in the recording: {}",
                idle.join(", ")
            ))],
        });
    }
    blocks.extend(device_charts(devs, triggers));
    let rows = devs.iter().map(|d| d.points.len()).sum::<usize>();
    blocks.push(Block::Heading("Intervals".into()));
    blocks.push(Block::Details {
        summary: format!("{rows} intervals, every device (the numbers the charts draw)"),
        blocks: vec![Block::Table(TableBlock::new(table(devs)))],
    });
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    Doc {
        title: if names.is_empty() {
            "iosat stat recording: no device did I/O".to_string()
        } else {
            format!("iosat stat recording: {}", names.join(", "))
        },
        md_title: None,
        md_level: 2,
        blocks,
    }
}

/// Per device: throughput, request size, latency, %util, load and, with a profile,
/// saturation, on one wall-clock axis; a gap where a direction had no I/O.
fn device_charts(devs: &[StatSeries], triggers: &[(i64, String)]) -> Vec<Block> {
    let t0 = start_ns(devs);
    let mut body = Vec::new();
    let x_label = "time (UTC)";
    for d in devs {
        let ts = |f: &dyn Fn(&Point) -> Option<f64>| -> Vec<(f64, f64)> {
            d.points
                .iter()
                .filter_map(|p| Some((p.end_wall_ns as f64 / 1e9, f(p)?)))
                .collect()
        };
        // The charts of a device share one time axis; a gap longer than one and a half
        // intervals (a direction without I/O, a pause in the recording) breaks the line.
        let extent: Vec<f64> = match (d.points.first(), d.points.last()) {
            (Some(a), Some(b)) => vec![
                (a.end_wall_ns as f64 / 1e9 - a.interval_s).min(t0 as f64 / 1e9),
                b.end_wall_ns as f64 / 1e9,
            ],
            _ => Vec::new(),
        };
        let gap = d.points.iter().map(|p| p.interval_s).fold(0.0, f64::max) * 1.5;
        let id = d.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let title = if d.display_name != d.name && !d.display_name.is_empty() {
            format!("{} ({})", d.name, d.display_name)
        } else {
            d.name.clone()
        };
        let mut svgs: Vec<String> = Vec::new();
        let chart = |name: &str, what: &str, y: &str| {
            let mut c = LineChart::new(
                &format!("{id}-{name}"),
                &format!("{}: {what}", d.name),
                x_label,
                y,
            );
            c.x_extent = extent.clone();
            c.x_clock = true;
            c.x_gap = Some(gap);
            // A hindsight dump's triggers, on every chart.
            c.markers
                .extend(triggers.iter().map(|(w, l)| super::svg::Marker {
                    x: *w as f64 / 1e9,
                    label: format!("trigger: {l}"),
                }));
            c
        };
        let push = |c: &mut LineChart, name: &str, pts: Vec<(f64, f64)>| {
            if !pts.is_empty() {
                c.series.push(Series::new(name, pts));
            }
        };

        let mut tput = chart("throughput", "throughput", "requests/s");
        push(&mut tput, "r/s", ts(&|p| Some(p.r_s)));
        push(&mut tput, "w/s", ts(&|p| Some(p.w_s)));
        // The peak short window of each interval (issue 41), where the recording has them:
        // what the interval's rate averages away.
        let window = d.points.iter().find_map(|p| p.burst).map(|b| b.window_ms);
        if let Some(ms) = window {
            let peak = |f: fn(&crate::monitor::burst::Burst) -> f64| {
                ts(&|p| p.burst.as_ref().map(f).filter(|v| *v > 0.0))
            };
            for (name, pts) in [
                (format!("r/s peak ({ms:.0} ms)"), peak(|b| b.read.peak_iops)),
                (
                    format!("w/s peak ({ms:.0} ms)"),
                    peak(|b| b.write.peak_iops),
                ),
            ] {
                if !pts.is_empty() {
                    tput.series.push(Series::new(&name, pts).dashed());
                }
            }
        }
        tput.right = Some((
            "MB/s".into(),
            vec![Series::new(
                "MB/s (read + write)",
                ts(&|p| Some((p.rkb_s + p.wkb_s) * 1024.0 / 1e6)),
            )
            .dashed()],
        ));
        svgs.push(tput.to_svg());

        let mut size = chart("reqsize", "request size", "kB per request");
        let per = |kb: f64, n: f64| (n > 0.0).then(|| kb / n);
        push(&mut size, "rareq-sz", ts(&|p| per(p.rkb_s, p.r_s)));
        push(&mut size, "wareq-sz", ts(&|p| per(p.wkb_s, p.w_s)));
        if !size.series.is_empty() {
            svgs.push(size.to_svg());
        }

        let mut lat = chart("latency", "latency", "await (ms)");
        let r = ts(&|p| p.r_await);
        let w = ts(&|p| p.w_await);
        lat.y_log = spans_decades(r.iter().chain(&w));
        push(&mut lat, "r_await", r);
        push(&mut lat, "w_await", w);
        svgs.push(lat.to_svg());

        let mut util = chart("util", "utilization", "%util");
        push(&mut util, "%util", ts(&|p| Some(p.util_pct)));
        svgs.push(util.to_svg());

        let mut load = chart("load", "load", "aqu-sz (requests in flight)");
        push(&mut load, "aqu-sz", ts(&|p| Some(p.aqu_sz)));
        svgs.push(load.to_svg());

        if d.profile.is_ok() {
            let mut s = chart(
                "saturation",
                "saturation (await ÷ profile baseline)",
                "await ÷ baseline (x)",
            );
            let rs = ts(&|p| p.sat_r);
            let ws = ts(&|p| p.sat_w);
            s.y_log = spans_decades(rs.iter().chain(&ws).chain(&[(0.0, OVERLOAD_X)]));
            push(&mut s, "read saturation", rs);
            push(&mut s, "write saturation", ws);
            if let (Some(&x0), Some(&x1)) = (extent.first(), extent.last()) {
                // One line across the whole recording, whatever gaps the data has.
                let mut line = Series::new(
                    "3x baseline: overload",
                    vec![(x0, OVERLOAD_X), (x1, OVERLOAD_X)],
                )
                .dashed();
                line.unbroken = true;
                s.series.push(line);
            }
            svgs.push(s.to_svg());
        }
        let n = svgs.len();
        for (i, svg) in svgs.into_iter().enumerate() {
            body.push(Block::Chart {
                heading: (i == 0).then(|| title.clone()),
                svg,
                note: (i + 1 == n).then(|| UTIL_NOTE.to_string()),
            });
        }
    }
    body
}

/// What was recorded: the page's context table (compare sets them side by side).
pub fn context(
    devs: &[crate::monitor::series::StatSeries],
    idle: &[String],
) -> Vec<(&'static str, String)> {
    let mut v = vec![("measured", "device statistics over time (stat)".to_string())];
    // TODO(issue 16 envelope): host, kernel, cpus once recordings carry them.
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    if !names.is_empty() {
        v.push(("device", names.join(", ")));
    }
    if !idle.is_empty() {
        v.push(("idle devices", idle.join(", ")));
    }
    let ends = devs.iter().flat_map(|d| d.points.iter());
    let first = ends
        .clone()
        .map(|p| p.end_wall_ns - (p.interval_s * 1e9) as i64)
        .min();
    let last = ends.clone().map(|p| p.end_wall_ns).max();
    if let (Some(a), Some(b)) = (first, last) {
        v.push(("date", format!("{} to {}", iso_utc(a), iso_utc(b))));
        v.push(("duration", format!("{:.1} s", (b - a) as f64 / 1e9)));
    }
    if let Some(p) = devs.iter().find_map(|d| d.points.first()) {
        v.push(("interval", format!("{:.2} s", p.interval_s)));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::series::SeriesStore;
    use crate::profile::{NoProfiles, ProfileLookup};

    fn series(
        text: &str,
        profiles: &mut dyn ProfileLookup,
    ) -> Result<(Vec<StatSeries>, Vec<String>), ParseError> {
        Ok(SeriesStore::from_text(text, Some(crate::learn::in_memory()))?.series(profiles))
    }

    const REC: &str = include_str!("../../tests/fixtures/stat/pair.rec");

    /// A recording of sda (idle) and sdb: 1,000 reads a second at 1 ms (one in flight) for
    /// 40 s, then 4 in flight at 4 ms.
    fn learned_rec() -> String {
        let mut t = String::from(
            "#iosat-record 1\nR 1795333826000000000 1000000000\nD 8:0 sda disk sda\nD 8:16 sdb disk sdb\n",
        );
        let (mut n, mut ms) = (0u64, 0u64);
        for i in 0..45u64 {
            t.push_str(&format!(
                "T {} {}\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n 8 16 sdb {n} 0 {} {ms} 0 0 0 0 0 {} {ms}\n",
                (i + 1) * 1_000_000_000,
                1_795_333_826_000_000_000 + i * 1_000_000_000,
                n * 8,
                i * 1000
            ));
            n += 1000;
            ms += if i < 40 { 1000 } else { 4000 };
        }
        t
    }

    /// [`learned_rec`] with one more second in which sdb did 2 writes and no read (a
    /// journal's flush at the end of a recording).
    fn learned_rec_ending_on_writes() -> String {
        let mut t = learned_rec();
        // sdb's counters as learned_rec's last sample left them (44,000 reads, 56 s of their
        // time, 44 s busy), but for 2 writes of 1 ms in all.
        let (n, ms) = (44_000u64, 56_000u64);
        t.push_str(&format!(
            "T {} {}\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\n 8 16 sdb {n} 0 {} {ms} 2 0 16 1 0 44001 {}\n",
            46_000_000_000u64,
            1_795_333_826_000_000_000u64 + 45_000_000_000,
            n * 8,
            ms + 1
        ));
        t
    }

    #[test]
    fn a_recording_that_ends_on_a_few_writes_keeps_its_learned_baseline() {
        // The last interval's learned judgement is the writes' (nothing learned of them): the
        // page said "saturation not judged … or let iosat learn the baseline from the
        // traffic" of a device learned for 40 s. It judges by the reads' baseline, at rest.
        let (devs, _) = series(
            &learned_rec_ending_on_writes(),
            &mut NoProfiles("none".into()),
        )
        .unwrap();
        let sdb = devs.iter().find(|d| d.name == "sdb").unwrap();
        let l = sdb.learned.as_deref().expect("learned");
        assert_eq!(
            l.direction,
            Some(crate::analysis::state::Dir::Read),
            "{l:?}"
        );
        assert!(l.judged_by().is_some(), "{l:?}");
        let text = render(&devs, &[], Format::Markdown);
        assert!(
            text.contains(
                "sdb: judged against the baseline learned (read, <=8KiB) from its own traffic"
            ),
            "{text}"
        );
        assert!(!text.contains("sdb: saturation not judged"), "{text}");
        // analyze of the same file: the same learned object.
        let f = crate::import::diskstats::parse(
            std::path::Path::new("r.rec"),
            &learned_rec_ending_on_writes(),
        )
        .unwrap();
        let a = f.devices.iter().find(|d| d.device == "sdb").unwrap();
        assert_eq!(a.learned.as_ref(), Some(l));
    }

    #[test]
    fn the_page_judges_by_the_learned_baseline_and_draws_the_named_devices_first() {
        let (mut devs, idle) = series(&learned_rec(), &mut NoProfiles("none".into())).unwrap();
        assert_eq!(idle, ["sda"]);
        let text = render(&devs, &idle, Format::Markdown);
        assert!(
            text.contains(
                "sdb: judged against the baseline learned (read, <=8KiB) from its own traffic"
            ),
            "{text}"
        );
        assert!(
            text.contains("sdb: overloaded (read 4.0x learned baseline), headroom 0"),
            "{text}"
        );
        assert!(!text.contains("sdb: saturation not judged"), "{text}");
        // The devices named first, the others after them in their order.
        let mk = |name: &str| StatSeries {
            name: name.into(),
            display_name: name.into(),
            ..devs[0].clone()
        };
        devs = vec![mk("sda"), mk("sdb"), mk("nvme0n1"), mk("sdc")];
        crate::monitor::series::selected_first(&mut devs, &["nvme*".into(), "sdc".into()]);
        let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["nvme0n1", "sdc", "sda", "sdb"]);
    }

    #[test]
    fn the_page_shows_the_partitions_its_run_showed() {
        // sda and its partition sda1, both with traffic; `#S` as `stat` records it.
        let rec = |sel: Option<&str>| {
            let mut t = String::from("#iosat-record 1\nR 1795333826000000000 1000000000\n");
            if let Some(s) = sel {
                t.push_str(&format!("#S {s}\n"));
            }
            t.push_str("D 8:0 sda disk sda\nD 8:1 sda1 partition sda1\n");
            for i in 0..3u64 {
                let (n, ms) = (i * 100, i * 100);
                t.push_str(&format!(
                    "T {} {}\n 8 0 sda {n} 0 {} {ms} 0 0 0 0 0 {ms} {ms}\n 8 1 sda1 {n} 0 {} {ms} 0 0 0 0 0 {ms} {ms}\n",
                    (i + 1) * 1_000_000_000,
                    1_795_333_826_000_000_000 + i * 1_000_000_000,
                    n * 8,
                    n * 8,
                ));
            }
            t
        };
        let names = |sel: Option<&str>| {
            let (devs, _) = series(&rec(sel), &mut NoProfiles("none".into())).unwrap();
            devs.iter().map(|d| d.name.clone()).collect::<Vec<_>>()
        };
        // A run that selected partitions, or named one: shown as it showed them.
        let parts = r#"{"patterns":[],"partitions":true,"all":false}"#;
        assert_eq!(names(Some(parts)), ["sda", "sda1"]);
        // `stat sda1` showed the partition alone.
        let named = r#"{"patterns":["sda1"],"partitions":false,"all":false}"#;
        assert_eq!(names(Some(named)), ["sda1"]);
        let all = r#"{"patterns":[],"partitions":false,"all":true}"#;
        assert_eq!(names(Some(all)), ["sda", "sda1"]);
        // The default selection, recorded or not (an older recording): the disk alone.
        let default = r#"{"patterns":[],"partitions":false,"all":false}"#;
        assert_eq!(names(Some(default)), ["sda"]);
        assert_eq!(names(None), ["sda"]);
    }

    #[test]
    fn the_page_shows_the_devices_its_runs_showed() {
        // sda and loop0 with traffic in each interval, zram0 idle; each run's `#S` as `stat`
        // records it (None: a run from before `#S`).
        let rec = |runs: &[Option<&str>]| {
            let mut t = String::from("#iosat-record 1\n");
            for (k, sel) in runs.iter().enumerate() {
                let k = k as u64;
                let start = 1_795_333_826_000_000_000 + k * 100_000_000_000;
                t.push_str(&format!("R {start} 1000000000\n"));
                if let Some(s) = sel {
                    t.push_str(&format!("#S {s}\n"));
                }
                t.push_str(
                    "D 7:0 loop0 loop loop0\nD 8:0 sda disk sda\nD 253:0 zram0 zram zram0\n",
                );
                for i in 0..3u64 {
                    let (n, ms) = (i * 100, i * 100);
                    t.push_str(&format!(
                        "T {} {}\n 7 0 loop0 {n} 0 {} {ms} 0 0 0 0 0 {ms} {ms}\n 8 0 sda {n} 0 {} {ms} 0 0 0 0 0 {ms} {ms}\n 253 0 zram0 0 0 0 0 0 0 0 0 0 0 0\n",
                        (k * 100 + i + 1) * 1_000_000_000,
                        start + i * 1_000_000_000,
                        n * 8,
                        n * 8,
                    ));
                }
            }
            t
        };
        let shown = |runs: &[Option<&str>]| {
            let (devs, idle) = series(&rec(runs), &mut NoProfiles("none".into())).unwrap();
            let names = devs.iter().map(|d| d.name.clone()).collect::<Vec<_>>();
            (names, idle)
        };
        let sda = r#"{"patterns":["sda"],"partitions":false,"all":false}"#;
        let default = r#"{"patterns":[],"partitions":false,"all":false}"#;
        let all = r#"{"patterns":[],"partitions":false,"all":true}"#;
        // `stat sda`: sda alone, no other device charted or named idle (loop0 had traffic).
        assert_eq!(shown(&[Some(sda)]), (vec!["sda".to_string()], vec![]));
        // The default selection shows no loop or zram device: stat's default.
        assert_eq!(shown(&[Some(default)]), (vec!["sda".to_string()], vec![]));
        // `--all`: every device, the idle one named.
        assert_eq!(
            shown(&[Some(all)]),
            (
                vec!["loop0".to_string(), "sda".to_string()],
                vec!["zram0".to_string()]
            )
        );
        // Runs that selected differently: every device (as the file's replay shows).
        assert_eq!(shown(&[Some(sda), Some(all)]).0, ["loop0", "sda"]);
        // A run from before `#S` beside a recorded one: that run's default selection.
        assert_eq!(shown(&[None, Some(default)]).0, ["sda"]);
        // An older recording (no `#S` at all): every device but partitions, as before.
        assert_eq!(
            shown(&[None]),
            (
                vec!["loop0".to_string(), "sda".to_string()],
                vec!["zram0".to_string()]
            )
        );
        // `stat --record --html` (the default selection) appending to that older file: the
        // page, fed line by line (the file's part first, which kept loop0), shows what the
        // replay of the whole file would: sda alone.
        let mut store = crate::monitor::series::SeriesStore::new(None);
        store.feed_text(&rec(&[None])).unwrap();
        let (events, _) = crate::monitor::record::parse(&rec(&[Some(default)])).unwrap();
        for ev in events {
            store.feed(ev);
        }
        let (devs, idle) = store.series(&mut NoProfiles("none".into()));
        let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!((names, idle), (vec!["sda"], vec![]));
        // `stat --replay r.rec --all --html p.html` (or loop0 named): what the replay shows.
        for (sel, want) in [
            (all, vec!["loop0", "sda"]),
            (
                r#"{"patterns":["loop0"],"partitions":false,"all":false}"#,
                vec!["loop0"],
            ),
        ] {
            let mut store = crate::monitor::series::SeriesStore::new(None);
            store.choose(serde_json::from_str(sel).unwrap());
            store.feed_text(&rec(&[Some(sda)])).unwrap();
            let (devs, _) = store.series(&mut NoProfiles("none".into()));
            let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
            assert_eq!(names, want, "{sel}");
        }
    }

    #[test]
    fn recording_is_replayed_through_the_stat_engine() {
        assert!(is_recording(REC));
        let (devs, idle) = series(REC, &mut NoProfiles("none".into())).unwrap();
        let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
        // Partitions are left out; devices without I/O are listed as idle.
        assert!(!names.contains(&"nvme0n1p1"));
        assert!(names.contains(&"nvme0n1"));
        assert!(idle.contains(&"loop0".to_string()));
        let nv = devs.iter().find(|d| d.name == "nvme0n1").unwrap();
        // First interval of the fixture: 2005 reads in 2.005 s, 1002 ms of read time.
        let p = &nv.points[0];
        assert!((p.r_s - 1000.0).abs() < 1e-9, "{}", p.r_s);
        assert!((p.r_await.unwrap() - 1002.0 / 2005.0).abs() < 1e-9);
        assert_eq!((p.sat_r, p.sat_w), (None, None));
        // pair.rec has no `I` lines and NoProfiles identifies nothing live.
        assert!(nv.profile.as_ref().unwrap_err().contains("no profile ids"));
    }

    #[test]
    fn pt_stalk_samples_are_a_recording_too() {
        let text = include_str!("../../tests/fixtures/stat/pt-stalk.diskstats");
        assert!(is_recording(text));
        assert!(!is_recording("{\"levels\": []}"));
        assert!(!is_recording("TS abc\n"));
        let (devs, _) = series(text, &mut NoProfiles("none".into())).unwrap();
        let x = devs.iter().find(|d| d.name == "xvda").unwrap();
        assert!(devs.iter().all(|d| d.name != "xvda1"), "partition left out");
        // 250 reads in 1.25 s taking 1000 ms.
        assert!((x.points[0].r_s - 200.0).abs() < 1e-9);
        assert!((x.points[0].r_await.unwrap() - 4.0).abs() < 1e-9);
    }

    struct One(Arc<DeviceProfile>);
    impl ProfileLookup for One {
        fn by_id(&mut self, id: &str) -> Result<Found, String> {
            Ok(Found {
                profile: self.0.clone(),
                path: id.to_string(),
            })
        }
        fn live_id(&mut self, _: u32, _: u32, name: &str) -> Option<String> {
            Some(name.to_string())
        }
    }

    #[test]
    fn saturation_is_await_over_the_baseline() {
        let prof = Arc::new(DeviceProfile {
            id: "p".into(),
            baseline_latency_ns: 250_000.0,
            knee_concurrency: 4,
            max_useful_iops: 1000.0,
            pattern: "randread".into(),
            block_size: 4096,
            ..Default::default()
        });
        let (devs, _) = series(REC, &mut One(prof)).unwrap();
        let nv = devs.iter().find(|d| d.name == "nvme0n1").unwrap();
        let p = &nv.points[0];
        let want = p.r_await.unwrap() / 0.25;
        assert!((p.sat_r.unwrap() - want).abs() < 1e-9);
        assert_eq!(nv.profile.as_ref().unwrap().path, "nvme0n1");
    }
}
