//! A `stat --record` recording as a page: a summary per device (peak await, time above 3× the
//! profile's baseline), then per device throughput (r/s, w/s, MB/s), request size, latency
//! (r_await, w_await), %util, load (aqu-sz) and saturation (await ÷ the device profile's baseline
//! latency) on a wall-clock axis, and the per-interval table its Markdown and CSV share. The series
//! come from monitor::series (the one replay and StatEngine of `iosat stat --replay`), or typed
//! from `stat --json` lines; no second parser. Pure (no IO).
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::html::{esc, html_table, page};
use super::svg::{LineChart, Series};
use super::Format;
use crate::monitor::record::{self, ParseError};
use crate::monitor::series::{is_partition, split_idle, Point, StatSeries};
use crate::profile::{DeviceProfile, Found};
use crate::report::table::Table;
use crate::sys::device::DevKind;
use crate::units::iso_utc;
use std::fmt::Write as _;
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

/// The recording page, Markdown or CSV of the series (busy devices, idle names).
pub fn render(devs: &[StatSeries], idle: &[String], format: Format) -> String {
    match format {
        Format::Html => page_html(devs, idle),
        Format::Markdown => markdown(devs, idle),
        _ => csv(devs),
    }
}

/// One `iosat stat --json` line, the part the page reads.
#[derive(serde::Deserialize)]
struct JsonLine {
    /// "stat" (schema_version 2 on); `schema` "iosat-stat" before.
    kind: Option<String>,
    schema: Option<String>,
    schema_version: Option<serde_json::Value>,
    wall_ns: Option<i64>,
    interval_s: Option<f64>,
    devices: Option<Vec<JsonDevice>>,
}

/// One device of a `stat --json` line (sysstat's keys).
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
    #[serde(rename = "r/s")]
    r_s: Option<f64>,
    #[serde(rename = "w/s")]
    w_s: Option<f64>,
    #[serde(rename = "rkB/s")]
    rkb_s: Option<f64>,
    #[serde(rename = "wkB/s")]
    wkb_s: Option<f64>,
    r_await: Option<f64>,
    w_await: Option<f64>,
    #[serde(rename = "aqu-sz")]
    aqu_sz: Option<f64>,
    util: Option<f64>,
    profile: Option<JsonProfile>,
}

/// The `profile` object of a `stat --json` device: the saturation stat judged.
#[derive(serde::Deserialize)]
struct JsonProfile {
    id: Option<String>,
    baseline_latency_ns: Option<f64>,
    knee_concurrency: Option<f64>,
    max_useful_iops: Option<f64>,
    baseline_pattern: Option<String>,
    baseline_block_size: Option<f64>,
    saturation_r: Option<f64>,
    saturation_w: Option<f64>,
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

/// `iosat stat --json` output as series: one line per interval, the values as stat computed
/// them (nothing recomputed), partitions left out as for recordings, and saturation as stat
/// judged it: the line's `profile` object carries the baseline it used.
pub fn series_from_json(text: &str) -> Result<(Vec<StatSeries>, Vec<String>), ParseError> {
    let mut out: Vec<StatSeries> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| ParseError { line: n, reason };
        let v: JsonLine = serde_json::from_str(line)
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
            (v.wall_ns, v.interval_s, v.devices)
        else {
            return Err(bad("expected wall_ns, interval_s and devices[]".into()));
        };
        for d in devices {
            let partition = match d.kind.as_deref() {
                Some(k) => k == DevKind::Partition.as_str(),
                None => is_partition(None, &d.kernel_name),
            };
            // An interval with no value (a counter went backwards) has no point.
            let (Some(r_s), Some(w_s), false) = (d.r_s, d.w_s, partition) else {
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
                    });
                    out.len() - 1
                }
            };
            out[idx].points.push(Point {
                end_wall_ns,
                interval_s,
                r_s,
                w_s,
                rkb_s: d.rkb_s.unwrap_or(0.0),
                wkb_s: d.wkb_s.unwrap_or(0.0),
                r_await: d.r_await,
                w_await: d.w_await,
                aqu_sz: d.aqu_sz.unwrap_or(0.0),
                util_pct: d.util.unwrap_or(0.0),
                sat_r: d.profile.as_ref().and_then(|p| p.saturation_r),
                sat_w: d.profile.as_ref().and_then(|p| p.saturation_w),
            });
        }
    }
    Ok(split_idle(out))
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
                knee_concurrency: p.knee_concurrency.unwrap_or(0.0) as u32,
                max_useful_iops: p.max_useful_iops.unwrap_or(0.0),
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
    t.right[0] = false;
    t.right[1] = false;
    let t0 = start_ns(devs);
    for d in devs {
        for p in &d.points {
            t.push([
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
            ]);
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
    match &d.profile {
        Ok(f) => format!(
            "{}: saturation = await ÷ {:.3} ms, the baseline (mean latency at concurrency 1, {} {} B) of the profile {}.",
            d.name,
            f.profile.baseline_latency_ns / 1e6,
            f.profile.pattern,
            f.profile.block_size,
            f.path
        ),
        Err(why) => format!("{}: no saturation: {why}", d.name),
    }
}

pub fn markdown(devs: &[StatSeries], idle: &[String]) -> String {
    let mut s = String::from("## iosat stat recording\n\nLatency in ms, rates per second.\n\n");
    for d in devs {
        let _ = writeln!(s, "- {}", baseline_line(d));
    }
    if !idle.is_empty() {
        let _ = writeln!(s, "- No I/O in the recording: {}", idle.join(", "));
    }
    s.push('\n');
    s.push_str(&table(devs).to_markdown());
    s
}

/// The series for machines: the units in the names (kB, ms, percent as `_pct`, seconds as
/// `_s`), numbers unrounded, an empty cell when missing.
pub fn csv(devs: &[StatSeries]) -> String {
    use super::levels::csv_num;
    // The table's columns, `%util` named for machines.
    let mut t = table(&[]);
    for h in &mut t.headers {
        if h == "%util" {
            *h = "util_pct".into();
        }
    }
    let t0 = start_ns(devs);
    for d in devs {
        for p in &d.points {
            let mut row = vec![
                d.name.clone(),
                iso_utc(p.end_wall_ns),
                csv_num(Some((p.end_wall_ns - t0) as f64 / 1e9)),
            ];
            row.extend(
                [
                    Some(p.interval_s),
                    Some(p.r_s),
                    Some(p.w_s),
                    Some(p.rkb_s),
                    Some(p.wkb_s),
                    p.r_await,
                    p.w_await,
                    Some(p.aqu_sz),
                    Some(p.util_pct),
                    p.sat_r,
                    p.sat_w,
                ]
                .map(csv_num),
            );
            t.push(row);
        }
    }
    t.to_csv()
}

/// Log scale when the positive values span more than a factor of 20.
fn spans_decades<'a>(pts: impl Iterator<Item = &'a (f64, f64)>) -> bool {
    let (lo, hi) = pts
        .map(|p| p.1)
        .filter(|v| *v > 0.0)
        .fold((f64::INFINITY, 0f64), |(a, b), v| (a.min(v), b.max(v)));
    hi > 0.0 && hi / lo > 20.0
}

/// The overload line of the saturation chart and the summary: await above this multiple of
/// the profile's baseline (the 3×-p95 overload rule applied to the mean, as `stat` judges).
const OVERLOAD_X: f64 = 3.0;

/// One row per busy device: peak awaits and queue, mean %util, and with a profile the time
/// spent above 3× its baseline.
fn summary_table(devs: &[StatSeries]) -> Table {
    let mut t = Table::new([
        "device",
        "peak r_await (ms)",
        "peak w_await (ms)",
        "peak aqu-sz",
        "mean %util",
        "time above 3x baseline",
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
        let above = d.profile.as_ref().ok().map(|_| {
            d.points
                .iter()
                .filter(|p| p.sat_r.into_iter().chain(p.sat_w).any(|x| x > OVERLOAD_X))
                .map(|p| p.interval_s)
                .fold(0.0, |a, b| a + b)
        });
        t.push([
            d.name.clone(),
            f(peak(&mut d.points.iter().filter_map(|p| p.r_await)), 2),
            f(peak(&mut d.points.iter().filter_map(|p| p.w_await)), 2),
            f(peak(&mut d.points.iter().map(|p| p.aqu_sz)), 2),
            format!("{util:.1}"),
            above.map_or("no profile".into(), |s| format!("{s:.1} s of {total:.1} s")),
        ]);
    }
    t
}

/// The page: per device, throughput and request size first (as PMM's Disk Details), then
/// latency, %util, load and saturation on a wall-clock axis, a gap where a direction had no
/// I/O; a summary per device first, idle devices folded, the table last.
pub fn page_html(devs: &[StatSeries], idle: &[String]) -> String {
    let t0 = start_ns(devs);
    let mut body = super::html::context_block(&super::html::stat_context(devs, idle));
    let _ = write!(
        body,
        "<p>Recorded from {} (times on the charts are UTC). Every value is sysstat's formula \
over the measured interval, as <code>iosat stat --replay</code> prints it.</p>",
        esc(&iso_utc(t0))
    );
    if devs.is_empty() {
        body.push_str("<p><strong>No device did any I/O in this recording.</strong></p>");
    } else {
        body.push_str("<h2>Summary</h2>");
        body.push_str(&html_table(&summary_table(devs)));
    }
    if !idle.is_empty() {
        let _ = write!(
            body,
            "<details class=\"idle\"><summary>{} device{} without I/O in the recording (not drawn)</summary><p>{}</p></details>",
            idle.len(),
            if idle.len() == 1 { "" } else { "s" },
            esc(&idle.join(", "))
        );
    }
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
        let _ = write!(body, "<h2>{}</h2>", esc(&title));
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
        tput.right = Some((
            "MB/s".into(),
            vec![Series::new(
                "MB/s (read + write)",
                ts(&|p| Some((p.rkb_s + p.wkb_s) * 1024.0 / 1e6)),
            )
            .dashed()],
        ));
        body.push_str(&tput.to_svg());

        let mut size = chart("reqsize", "request size", "kB per request");
        let per = |kb: f64, n: f64| (n > 0.0).then(|| kb / n);
        push(&mut size, "rareq-sz", ts(&|p| per(p.rkb_s, p.r_s)));
        push(&mut size, "wareq-sz", ts(&|p| per(p.wkb_s, p.w_s)));
        if !size.series.is_empty() {
            body.push_str(&size.to_svg());
        }

        let mut lat = chart("latency", "latency", "await (ms)");
        let r = ts(&|p| p.r_await);
        let w = ts(&|p| p.w_await);
        lat.y_log = spans_decades(r.iter().chain(&w));
        push(&mut lat, "r_await", r);
        push(&mut lat, "w_await", w);
        body.push_str(&lat.to_svg());

        let mut util = chart("util", "utilization", "%util");
        push(&mut util, "%util", ts(&|p| Some(p.util_pct)));
        body.push_str(&util.to_svg());
        body.push_str(
            "<p class=\"note\">%util is the share of time with at least one request in flight: \
100 % on a device that serves requests in parallel does not mean it is saturated.</p>",
        );

        let mut load = chart("load", "load", "aqu-sz (requests in flight)");
        push(&mut load, "aqu-sz", ts(&|p| Some(p.aqu_sz)));
        body.push_str(&load.to_svg());

        match &d.profile {
            Ok(_) => {
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
                    s.series.push(
                        Series::new(
                            "3x baseline: overload",
                            vec![(x0, OVERLOAD_X), (x1, OVERLOAD_X)],
                        )
                        .dashed(),
                    );
                }
                body.push_str(&s.to_svg());
                let _ = write!(body, "<p class=\"note\">{}</p>", esc(&baseline_line(d)));
            }
            Err(_) => {
                let _ = write!(
                    body,
                    "<p class=\"nosat\"><strong>Saturation:</strong> {} Run <code>iosat sweep \
--save-profile</code> on this device to get its baseline.</p>",
                    esc(&baseline_line(d))
                );
            }
        }
    }
    body.push_str("<h2>Intervals</h2>");
    body.push_str(&html_table(&table(devs)));
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    let title = if names.is_empty() {
        "iosat stat recording: no device did I/O".to_string()
    } else {
        format!("iosat stat recording: {}", names.join(", "))
    };
    page(&title, &body)
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
        Ok(SeriesStore::from_text(text)?.series(profiles))
    }

    const REC: &str = include_str!("../../tests/fixtures/stat/pair.rec");

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
