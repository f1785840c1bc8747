//! What `iosat stat` prints: interval reports rendered as 80-column text, wide text, JSON
//! lines, CSV or Markdown. Returns strings, does no IO, reads no clock: the same reports give
//! the same bytes (replay is byte-identical). Must not import cmd/ or cli/.

use super::interval::{DeviceRow, IntervalReport};
use super::saturation::Saturation;
use super::DiskRates;
use crate::report::table::Table;

pub use crate::report::Format;

/// Version of the JSON and CSV layout; bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

type Get = fn(&DiskRates) -> Option<f64>;

/// Every value column: text header, JSON/CSV key (sysstat's where it has one), accessor.
const COLUMNS: &[(&str, &str, Get)] = &[
    ("r/s", "r/s", |r| Some(r.r_s)),
    ("w/s", "w/s", |r| Some(r.w_s)),
    ("d/s", "d/s", |r| r.d_s),
    ("f/s", "f/s", |r| r.f_s),
    ("rkB/s", "rkB/s", |r| Some(r.rkb_s)),
    ("wkB/s", "wkB/s", |r| Some(r.wkb_s)),
    ("dkB/s", "dkB/s", |r| r.dkb_s),
    ("rrqm/s", "rrqm/s", |r| Some(r.rrqm_s)),
    ("wrqm/s", "wrqm/s", |r| Some(r.wrqm_s)),
    ("drqm/s", "drqm/s", |r| r.drqm_s),
    ("%rrqm", "rrqm", |r| Some(r.rrqm_pct)),
    ("%wrqm", "wrqm", |r| Some(r.wrqm_pct)),
    ("%drqm", "drqm", |r| r.drqm_pct),
    ("r_await", "r_await", |r| r.r_await),
    ("w_await", "w_await", |r| r.w_await),
    ("d_await", "d_await", |r| r.d_await),
    ("f_await", "f_await", |r| r.f_await),
    ("rareq-sz", "rareq-sz", |r| r.rareq_sz),
    ("wareq-sz", "wareq-sz", |r| r.wareq_sz),
    ("dareq-sz", "dareq-sz", |r| r.dareq_sz),
    ("aqu-sz", "aqu-sz", |r| Some(r.aqu_sz)),
    ("%util", "util", |r| Some(r.util_pct)),
    ("r_conc", "read_concurrency", |r| Some(r.read_concurrency)),
    ("w_conc", "write_concurrency", |r| Some(r.write_concurrency)),
    ("d_conc", "discard_concurrency", |r| r.discard_concurrency),
    ("f_conc", "flush_concurrency", |r| r.flush_concurrency),
    ("inflight", "in_flight", |r| Some(r.in_flight as f64)),
];

/// The default text view: (header, width, decimals, column index), 80 columns in all with
/// the 9-character device column.
const NARROW: &[(&str, usize, usize, usize)] = &[
    ("r/s", 7, 1, 0),
    ("w/s", 7, 1, 1),
    ("rkB/s", 8, 1, 4),
    ("wkB/s", 8, 1, 5),
    ("r_await", 7, 2, 13),
    ("w_await", 7, 2, 14),
    ("r_conc", 6, 2, 22),
    ("w_conc", 6, 2, 23),
    ("%util", 6, 1, 21),
];

/// The default view when a shown device has a profile: `sat` and `load` (ratios to the
/// profile) take the place of r_conc/w_conc, still 80 columns.
const NARROW_PROFILED: &[(&str, usize, usize, usize)] = &[
    ("r/s", 7, 1, 0),
    ("w/s", 7, 1, 1),
    ("rkB/s", 8, 1, 4),
    ("wkB/s", 8, 1, 5),
    ("r_await", 7, 2, 13),
    ("w_await", 7, 2, 14),
    ("%util", 6, 1, 21),
    ("sat", 6, 2, SAT),
    ("load", 6, 2, LOAD),
];

/// Pseudo column indices of NARROW_PROFILED for the profile ratios.
const SAT: usize = usize::MAX;
const LOAD: usize = usize::MAX - 1;

type GetSat = fn(&Saturation) -> Option<f64>;

/// The profile columns of --wide, Markdown and CSV: text header, CSV key, accessor.
const PROFILE_COLUMNS: &[(&str, &str, GetSat)] = &[
    ("sat_r", "saturation_r", |s| s.saturation_r),
    ("sat_w", "saturation_w", |s| s.saturation_w),
    ("sat", "saturation", |s| s.saturation),
    ("load", "load_vs_knee", |s| s.load_vs_knee),
    ("headroom", "headroom_iops", |s| s.headroom_iops),
];

const DEVICE_WIDTH: usize = 9;

/// The device's interval judged against its profile, when it has one.
pub fn saturation(d: &DeviceRow) -> Option<Saturation> {
    d.profile
        .as_deref()
        .map(|p| Saturation::compute(p, d.rates.as_ref().ok()))
}

fn any_profile(r: &IntervalReport) -> bool {
    r.devices.iter().any(|d| d.profile.is_some())
}

/// UTC civil time of a wall-clock ns value: "2026-11-22T03:50:01.123Z". UTC so that a
/// replay elsewhere prints the same bytes.
pub use crate::units::iso_utc;

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

/// What comes before the first report (legend for text, header row for CSV). `profiled`:
/// some device has a profile, so the text legend explains sat and load.
pub fn preamble(format: Format, profiled: bool) -> String {
    match format {
        // stat's page is drawn by report/, never through this per-interval path.
        Format::Text { .. } | Format::Html => {
            let mut s = String::from(
                "\
# rates over the measured interval; r_conc/w_conc = mean reads/writes in flight
# %util = share of time with >=1 request in flight, not capacity (see --help)\n",
            );
            if profiled {
                s.push_str(
                    "\
# sat = await / profile baseline latency; load = aqu-sz / profile knee\n",
                );
            }
            s
        }
        Format::Csv => {
            let mut h = String::from(
                "timestamp,start_timestamp,interval_s,since_boot,disk_device,kernel_name,major,minor,kind",
            );
            for (_, key, _) in COLUMNS {
                h.push(',');
                h.push_str(key);
            }
            h.push_str(",wrapped_ms_fields,no_value,profile_id");
            for (_, key, _) in PROFILE_COLUMNS {
                h.push(',');
                h.push_str(key);
            }
            h.push('\n');
            h
        }
        Format::Json | Format::Markdown => String::new(),
    }
}

fn interval_title(r: &IntervalReport) -> String {
    if r.since_boot {
        format!(
            "{}  since boot ({:.3} s)",
            iso_utc(r.end_wall_ns),
            r.interval_s()
        )
    } else {
        format!(
            "{}  interval {:.3} s",
            iso_utc(r.end_wall_ns),
            r.interval_s()
        )
    }
}

/// One line per device without values, saying why (text views only).
fn no_value_notes(r: &IntervalReport) -> String {
    let mut s = String::new();
    for d in &r.devices {
        if let Err(e) = &d.rates {
            let why = match e {
                super::interval::NoValue::NewDevice => "new device, no earlier sample",
                super::interval::NoValue::CounterWentBackwards => {
                    "a counter went backwards (reset or re-created)"
                }
            };
            s.push_str(&format!("# {}: no value: {why}\n", d.meta.display_name));
        }
    }
    s
}

fn text_narrow(r: &IntervalReport) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(200 + r.devices.len() * 82);
    s.push_str(&interval_title(r));
    s.push('\n');
    let cols = if any_profile(r) {
        NARROW_PROFILED
    } else {
        NARROW
    };
    let _ = write!(s, "{:<DEVICE_WIDTH$}", "Device");
    for (h, w, _, _) in cols {
        let _ = write!(s, " {h:>w$}");
    }
    s.push('\n');
    for d in &r.devices {
        let name = &d.meta.display_name;
        if name.chars().count() > DEVICE_WIDTH {
            // Long names (dm) get their own line so the table stays within 80 columns.
            s.push_str(name);
            s.push('\n');
            s.push_str(&" ".repeat(DEVICE_WIDTH));
        } else {
            let _ = write!(s, "{name:<DEVICE_WIDTH$}");
        }
        let sat = saturation(d);
        for &(_, w, dec, idx) in cols {
            let v = match idx {
                SAT => sat.as_ref().and_then(|s| s.saturation),
                LOAD => sat.as_ref().and_then(|s| s.load_vs_knee),
                _ => d.rates.as_ref().ok().and_then(COLUMNS[idx].2),
            };
            let _ = match v {
                Some(v) => write!(s, " {v:>w$.dec$}"),
                None => write!(s, " {:>w$}", "-"),
            };
        }
        s.push('\n');
    }
    s.push_str(&no_value_notes(r));
    s.push('\n');
    s
}

fn table(r: &IntervalReport) -> Table {
    let profiled = any_profile(r);
    let profile_headers = PROFILE_COLUMNS.iter().filter(|_| profiled).map(|c| c.0);
    let mut t = Table::new(
        std::iter::once("Device")
            .chain(COLUMNS.iter().map(|c| c.0))
            .chain(profile_headers),
    );
    for d in &r.devices {
        let mut row = vec![d.meta.display_name.clone()];
        for (_, key, get) in COLUMNS {
            let decimals = if *key == "in_flight" { 0 } else { 2 };
            row.push(num(d.rates.as_ref().ok().and_then(get), decimals));
        }
        if profiled {
            let sat = saturation(d);
            for (_, _, get) in PROFILE_COLUMNS {
                row.push(num(sat.as_ref().and_then(get), 2));
            }
        }
        t.push(row);
    }
    t
}

#[derive(serde::Serialize)]
struct JsonInterval<'a> {
    schema: &'static str,
    schema_version: u32,
    timestamp: String,
    start_timestamp: String,
    wall_ns: i64,
    start_wall_ns: i64,
    interval_s: f64,
    since_boot: bool,
    devices: Vec<JsonDevice<'a>>,
}

/// One device in the JSON: sysstat's keys in `iostat -x -o JSON` order, then iosat's.
#[derive(serde::Serialize)]
struct JsonDevice<'a> {
    disk_device: &'a str,
    #[serde(rename = "r/s")]
    r_s: Option<f64>,
    #[serde(rename = "w/s")]
    w_s: Option<f64>,
    #[serde(rename = "d/s")]
    d_s: Option<f64>,
    #[serde(rename = "f/s")]
    f_s: Option<f64>,
    #[serde(rename = "rkB/s")]
    rkb_s: Option<f64>,
    #[serde(rename = "wkB/s")]
    wkb_s: Option<f64>,
    #[serde(rename = "dkB/s")]
    dkb_s: Option<f64>,
    #[serde(rename = "rrqm/s")]
    rrqm_s: Option<f64>,
    #[serde(rename = "wrqm/s")]
    wrqm_s: Option<f64>,
    #[serde(rename = "drqm/s")]
    drqm_s: Option<f64>,
    rrqm: Option<f64>,
    wrqm: Option<f64>,
    drqm: Option<f64>,
    r_await: Option<f64>,
    w_await: Option<f64>,
    d_await: Option<f64>,
    f_await: Option<f64>,
    #[serde(rename = "rareq-sz")]
    rareq_sz: Option<f64>,
    #[serde(rename = "wareq-sz")]
    wareq_sz: Option<f64>,
    #[serde(rename = "dareq-sz")]
    dareq_sz: Option<f64>,
    #[serde(rename = "aqu-sz")]
    aqu_sz: Option<f64>,
    util: Option<f64>,
    read_concurrency: Option<f64>,
    write_concurrency: Option<f64>,
    discard_concurrency: Option<f64>,
    flush_concurrency: Option<f64>,
    in_flight: Option<u64>,
    kernel_name: &'a str,
    major: u32,
    minor: u32,
    kind: Option<&'static str>,
    wrapped_ms_fields: u32,
    no_value: Option<&'static str>,
    /// Saturation against the device's profile; absent when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<Saturation>,
}

fn json_device(d: &DeviceRow) -> JsonDevice<'_> {
    let r = d.rates.as_ref().ok();
    let g = |f: fn(&DiskRates) -> Option<f64>| r.and_then(f);
    JsonDevice {
        disk_device: &d.meta.display_name,
        r_s: r.map(|r| r.r_s),
        w_s: r.map(|r| r.w_s),
        d_s: g(|r| r.d_s),
        f_s: g(|r| r.f_s),
        rkb_s: r.map(|r| r.rkb_s),
        wkb_s: r.map(|r| r.wkb_s),
        dkb_s: g(|r| r.dkb_s),
        rrqm_s: r.map(|r| r.rrqm_s),
        wrqm_s: r.map(|r| r.wrqm_s),
        drqm_s: g(|r| r.drqm_s),
        rrqm: r.map(|r| r.rrqm_pct),
        wrqm: r.map(|r| r.wrqm_pct),
        drqm: g(|r| r.drqm_pct),
        r_await: g(|r| r.r_await),
        w_await: g(|r| r.w_await),
        d_await: g(|r| r.d_await),
        f_await: g(|r| r.f_await),
        rareq_sz: g(|r| r.rareq_sz),
        wareq_sz: g(|r| r.wareq_sz),
        dareq_sz: g(|r| r.dareq_sz),
        aqu_sz: r.map(|r| r.aqu_sz),
        util: r.map(|r| r.util_pct),
        read_concurrency: r.map(|r| r.read_concurrency),
        write_concurrency: r.map(|r| r.write_concurrency),
        discard_concurrency: g(|r| r.discard_concurrency),
        flush_concurrency: g(|r| r.flush_concurrency),
        in_flight: r.map(|r| r.in_flight),
        kernel_name: &d.kernel_name,
        major: d.major,
        minor: d.minor,
        kind: d.meta.kind.map(|k| k.as_str()),
        wrapped_ms_fields: d.wrapped_ms_fields,
        no_value: d.rates.as_ref().err().map(|e| e.as_str()),
        profile: saturation(d),
    }
}

/// One JSON object (a single line) for an interval.
pub fn json(r: &IntervalReport) -> String {
    let obj = JsonInterval {
        schema: "iosat-stat",
        schema_version: SCHEMA_VERSION,
        timestamp: iso_utc(r.end_wall_ns),
        start_timestamp: iso_utc(r.start_wall_ns),
        wall_ns: r.end_wall_ns,
        start_wall_ns: r.start_wall_ns,
        interval_s: r.interval_s(),
        since_boot: r.since_boot,
        devices: r.devices.iter().map(json_device).collect(),
    };
    let mut s = serde_json::to_string(&obj).expect("interval report serialises");
    s.push('\n');
    s
}

fn csv(r: &IntervalReport) -> String {
    let mut s = String::new();
    let ts = iso_utc(r.end_wall_ns);
    let start = iso_utc(r.start_wall_ns);
    for d in &r.devices {
        let field = |v: &str| {
            if v.contains([',', '"', '\n']) {
                format!("\"{}\"", v.replace('"', "\"\""))
            } else {
                v.to_string()
            }
        };
        s.push_str(&format!(
            "{ts},{start},{},{},{},{},{},{},{}",
            r.interval_s(),
            r.since_boot,
            field(&d.meta.display_name),
            field(&d.kernel_name),
            d.major,
            d.minor,
            d.meta.kind.map_or("", |k| k.as_str())
        ));
        for (_, _, get) in COLUMNS {
            s.push(',');
            if let Some(v) = d.rates.as_ref().ok().and_then(get) {
                s.push_str(&v.to_string());
            }
        }
        let sat = saturation(d);
        s.push_str(&format!(
            ",{},{},{}",
            d.wrapped_ms_fields,
            d.rates.as_ref().err().map_or("", |e| e.as_str()),
            sat.as_ref().map_or("", |s| s.id.as_str())
        ));
        for (_, _, get) in PROFILE_COLUMNS {
            s.push(',');
            if let Some(v) = sat.as_ref().and_then(get) {
                s.push_str(&v.to_string());
            }
        }
        s.push('\n');
    }
    s
}

/// The bytes for one interval.
pub fn render(r: &IntervalReport, format: Format) -> String {
    match format {
        Format::Text { wide: false } | Format::Html => text_narrow(r),
        Format::Text { wide: true } => {
            let mut s = interval_title(r);
            s.push('\n');
            s.push_str(&table(r).to_text());
            s.push_str(&no_value_notes(r));
            s.push('\n');
            s
        }
        Format::Json => json(r),
        Format::Csv => csv(r),
        Format::Markdown => format!("### {}\n\n{}\n", interval_title(r), table(r).to_markdown()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::interval::{NoValue, StatEngine};
    use crate::monitor::select::{DeviceMeta, Selection};
    use crate::monitor::DiskSample;
    use crate::sys::device::DevKind;
    use crate::sys::diskstats::parse;

    #[test]
    fn iso_dates() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(951_782_400_500_000_000), "2000-02-29T00:00:00.500Z");
        assert_eq!(
            iso_utc(1_344_561_790_012_145_298),
            "2012-08-10T01:23:10.012Z"
        );
    }

    fn report() -> IntervalReport {
        let mut e = StatEngine::new(Selection::default(), false);
        let s = |m: u64, t: &str| DiskSample {
            mono_ns: m,
            wall_ns: 1_763_783_400_000_000_000 + m as i64,
            lines: parse(t).lines,
        };
        e.set_meta(
            253,
            0,
            "dm-0",
            DeviceMeta {
                kind: Some(DevKind::Dm),
                display_name: "vg0-root-long".into(),
            },
        );
        e.set_meta(
            254,
            0,
            "vda",
            DeviceMeta {
                kind: Some(DevKind::Disk),
                display_name: "vda".into(),
            },
        );
        e.push(s(1_000_000_000, "254 0 vda 100 0 800 50 10 0 80 20 0 60 70 0 0 0 0 0 0\n253 0 dm-0 5 0 8 1 1 0 8 1 0 1 2\n"));
        e.push(s(2_000_000_000, "254 0 vda 99100 0 1600800 50050 10010 0 80080 20020 3 1059 70070 0 0 0 0 0 0\n253 0 dm-0 4 0 8 1 1 0 8 1 0 1 2\n"))
            .unwrap()
    }

    #[test]
    fn narrow_text_fits_80_columns_and_marks_no_value() {
        let r = report();
        assert_eq!(r.devices[1].rates, Err(NoValue::CounterWentBackwards));
        let t = render(&r, Format::Text { wide: false });
        for l in t
            .lines()
            .chain(preamble(Format::Text { wide: false }, true).lines())
        {
            assert!(l.chars().count() <= 80, "{} > 80: {l}", l.len());
        }
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "2025-11-22T03:50:02.000Z  interval 1.000 s");
        assert!(
            lines[2].starts_with(
                "vda       99000.0 10000.0 800000.0  40000.0    0.51    2.00  50.00  20.00   99.9"
            ),
            "{}",
            lines[2]
        );
        assert_eq!(lines[3], "vg0-root-long");
        assert!(lines[4].trim_start().starts_with("- "), "{}", lines[4]);
    }

    #[test]
    fn json_has_sysstat_keys_and_interval() {
        let v: serde_json::Value = serde_json::from_str(&json(&report())).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["interval_s"], 1.0);
        let d = &v["devices"][0];
        assert_eq!(d["disk_device"], "vda");
        assert_eq!(d["r/s"], 99000.0);
        assert_eq!(d["rkB/s"], 800000.0);
        assert_eq!(d["util"], 99.9);
        assert_eq!(d["in_flight"], 3);
        assert!(d["d/s"].is_number());
        assert!(v["devices"][1]["r/s"].is_null());
        assert_eq!(v["devices"][1]["no_value"], "counter_went_backwards");
    }

    #[test]
    fn csv_rows_match_header() {
        let r = report();
        let h = preamble(Format::Csv, false);
        let body = render(&r, Format::Csv);
        let n = h.trim_end().split(',').count();
        for l in body.lines() {
            assert_eq!(l.split(',').count(), n, "{l}");
        }
    }
}
