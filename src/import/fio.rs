//! fio `--output-format=json` and `json+` (fio 2.x µs keys and 3.x ns keys) → levels. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, sys/.
//!
//! A level is a reporting group (`groupid`: a `stonewall` starts a new one), so one file per
//! iodepth or one file with several stonewalled jobs both work. Its concurrency is the sum
//! over the group's jobs of iodepth × numjobs, with iodepth counted as 1 for synchronous
//! engines (fio: "increasing iodepth beyond 1 will not affect synchronous ioengines").
//! Without `group_reporting`, each numjobs clone is its own entry with the same name and
//! counts once; with it, one entry stands for all clones.
//!
//! Latency: the mean, min and max are fio's `lat` (submission + completion, what the
//! application waited, the figure Little's law needs); the percentiles are `clat`'s (fio
//! computes percentiles for completion latency only, unless `lat_percentiles=1`, whose `lat`
//! percentiles are then preferred).

use super::{perr, FileImport, ImportedLevel, Tool};
use crate::analysis::{LatencyNs, LevelPoint};
use crate::error::Result;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Engines that complete each I/O inside the submitting call: one request in flight per job.
const SYNC_ENGINES: &[&str] = &[
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "mmap",
    "splice",
    "filecreate",
    "filestat",
    "filedelete",
    "ftruncate",
    "falloc",
    "e4defrag",
];

/// The first JSON value in `text` (fio may print `note:` lines before it) and the number of
/// lines before it.
fn first_json(path: &Path, text: &str) -> Result<(Value, usize)> {
    let mut offset = 0;
    let mut skipped = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('{') {
            break;
        }
        offset += line.len();
        skipped += 1;
    }
    let rest = &text[offset..];
    let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) => Ok((v, skipped)),
        Some(Err(e)) => {
            let line = skipped + e.line();
            let what = e.to_string();
            let what = what.split(" at line ").next().unwrap_or(&what).to_string();
            Err(if e.is_eof() {
                perr(
                    path,
                    line,
                    "truncated fio JSON: the file ends inside the JSON object (expected the \
                     rest of fio's output)",
                )
            } else {
                perr(path, line, format!("expected fio JSON: {what}"))
            })
        }
        None => Err(perr(path, skipped + 1, "expected fio JSON: no JSON object")),
    }
}

/// An option's value as a string, job options over global options.
fn opt<'a>(job: &'a Value, global: &'a Value, key: &str) -> Option<&'a str> {
    job.get("job options")
        .and_then(|o| o.get(key))
        .or_else(|| global.get(key))
        .and_then(Value::as_str)
}

/// fio's size notation: `4k`, `4K`, `4KiB`, `1m`, `512`; the first of `r,w` pairs.
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let s = s.split([',', ':']).next()?.trim().to_ascii_lowercase();
    let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    let n: u64 = digits.parse().ok()?;
    let unit = s[digits.len()..].trim_end_matches(['b', 'i']);
    let mult = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// A direction's latency statistics object (`lat_ns`, or `lat` in µs for fio 2.x), in ns.
fn lat_obj<'a>(dir: &'a Value, name: &str) -> Option<(&'a Value, f64)> {
    if let Some(v) = dir.get(format!("{name}_ns")) {
        Some((v, 1.0))
    } else {
        dir.get(name).map(|v| (v, 1000.0))
    }
}

fn f(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// What one direction of one job entry contributes to a level.
struct DirStats {
    iops: f64,
    bytes_per_s: f64,
    ios: f64,
    mean_ns: f64,
    min_ns: Option<f64>,
    max_ns: Option<f64>,
    /// (percentile, ns) pairs as fio printed them.
    pcts: Vec<(f64, f64)>,
    /// json+ histogram: (latency ns, count).
    bins: Option<Vec<(f64, u64)>>,
}

fn dir_stats(dir: &Value) -> Option<DirStats> {
    let iops = f(dir, "iops")?;
    if iops <= 0.0 {
        return None;
    }
    let bytes_per_s = f(dir, "bw_bytes").or_else(|| f(dir, "bw").map(|kib| kib * 1024.0))?;
    let (lat, scale) = lat_obj(dir, "lat")?;
    let mean_ns = f(lat, "mean")? * scale;
    let ios = f(dir, "total_ios").unwrap_or(iops);
    // lat percentiles when fio computed them (lat_percentiles=1), else clat's.
    let pct_src = [("lat", true), ("clat", false)]
        .into_iter()
        .filter_map(|(n, _)| lat_obj(dir, n))
        .find(|(o, _)| o.get("percentile").is_some());
    let mut pcts = Vec::new();
    let mut bins = None;
    if let Some((o, sc)) = pct_src {
        if let Some(map) = o.get("percentile").and_then(Value::as_object) {
            for (k, v) in map {
                if let (Ok(p), Some(ns)) = (k.parse::<f64>(), v.as_f64()) {
                    // fio prints 0 for a percentile with no sample.
                    if ns > 0.0 {
                        pcts.push((p, ns * sc));
                    }
                }
            }
        }
        if let Some(map) = o.get("bins").and_then(Value::as_object) {
            let mut b: Vec<(f64, u64)> = map
                .iter()
                .filter_map(|(k, v)| Some((k.parse::<f64>().ok()? * sc, v.as_u64()?)))
                .collect();
            b.sort_by(|x, y| x.0.total_cmp(&y.0));
            bins = Some(b);
        }
    }
    Some(DirStats {
        iops,
        bytes_per_s,
        ios,
        mean_ns,
        min_ns: f(lat, "min").map(|v| v * scale).filter(|v| *v > 0.0),
        max_ns: f(lat, "max").map(|v| v * scale).filter(|v| *v > 0.0),
        pcts,
        bins,
    })
}

/// The percentile `q` (0–100) of a histogram of (value, count), fio's way: the first bin
/// whose cumulative count reaches ceil(q/100 × total).
fn bin_percentile(bins: &[(f64, u64)], q: f64) -> Option<f64> {
    let total = bins.iter().try_fold(0u64, |a, b| a.checked_add(b.1))?;
    if total == 0 {
        return None;
    }
    let rank = ((q / 100.0) * total as f64).ceil().max(1.0) as u64;
    let mut cum = 0;
    for &(v, c) in bins {
        cum += c;
        if cum >= rank {
            return Some(v);
        }
    }
    bins.last().map(|b| b.0)
}

/// One entry of fio's `jobs` array and the line of its `"jobname"`, for messages.
struct Entry<'a> {
    job: &'a Value,
    name: String,
    line: usize,
}

/// The job entries by reporting group (`groupid`: one level each), each checked: no fio error,
/// read/write statistics present.
fn groups<'a>(
    path: &Path,
    text: &str,
    skipped: usize,
    jobs: &'a [Value],
) -> Result<BTreeMap<u64, Vec<Entry<'a>>>> {
    // The line of each job entry: the n-th "jobname" key.
    let job_lines: Vec<usize> = (text.lines().enumerate())
        .filter(|(_, l)| l.contains("\"jobname\""))
        .map(|(i, _)| i + 1)
        .collect();
    let mut groups: BTreeMap<u64, Vec<Entry>> = BTreeMap::new();
    for (i, job) in jobs.iter().enumerate() {
        let line = job_lines.get(i).copied().unwrap_or(skipped + 1);
        let name = (job.get("jobname").and_then(Value::as_str))
            .unwrap_or("?")
            .to_string();
        if let Some(err) = job.get("error").and_then(Value::as_i64).filter(|e| *e != 0) {
            return Err(perr(
                path,
                line,
                format!("job '{name}' ended with error {err}: its numbers are not a measurement"),
            ));
        }
        if job.get("read").is_none() && job.get("write").is_none() {
            return Err(perr(
                path,
                line,
                format!("job '{name}': expected \"read\"/\"write\" statistics"),
            ));
        }
        let gid = (job.get("groupid").and_then(Value::as_u64)).unwrap_or(i as u64);
        groups
            .entry(gid)
            .or_default()
            .push(Entry { job, name, line });
    }
    Ok(groups)
}

/// The requests one entry keeps in flight: iodepth (1 for a synchronous engine) × the clones
/// it stands for (one entry per clone without group_reporting; one for all with it).
fn entry_concurrency(e: &Entry, entries: &[Entry], global: &Value) -> Option<u32> {
    let engine = opt(e.job, global, "ioengine").unwrap_or("psync");
    let iodepth: u32 = (opt(e.job, global, "iodepth").and_then(|s| s.parse().ok()))
        .unwrap_or(1)
        .max(1);
    let depth = if SYNC_ENGINES.contains(&engine) {
        1
    } else {
        iodepth
    };
    let numjobs: u32 = (opt(e.job, global, "numjobs").and_then(|s| s.parse().ok()))
        .unwrap_or(1)
        .max(1);
    let clones_listed = entries.iter().filter(|x| x.name == e.name).count() as u32;
    let clones = if clones_listed >= numjobs { 1 } else { numjobs };
    depth.checked_mul(clones)
}

/// fio's "sync" block: fsync/fdatasync latency (--fsync=N). Not data I/O, so not in the
/// level's IOPS; a note beside it.
fn sync_note(path: &Path, e: &Entry) -> Option<String> {
    let sync = e.job.get("sync")?;
    let n = sync.get("total_ios").and_then(Value::as_u64).unwrap_or(0);
    let (lat, sc) = lat_obj(sync, "lat").filter(|_| n > 0)?;
    let p95 = (lat.get("percentile"))
        .and_then(|p| p.get("95.000000"))
        .and_then(Value::as_f64);
    Some(format!(
        "{}: job '{}' also made {n} syncs (fsync/fdatasync): mean {:.3} ms{}.",
        path.display(),
        e.name,
        f(lat, "mean").unwrap_or(0.0) * sc / 1e6,
        p95.map(|v| format!(", p95 {:.3} ms", v * sc / 1e6))
            .unwrap_or_default()
    ))
}

/// A level's latency from its directions: the I/O-weighted mean, min and max, and the
/// percentiles (exact from merged json+ histograms, as printed for one direction, else
/// I/O-weighted means, which sets `averaged`).
fn level_latency(dirs: &[DirStats], averaged: &mut bool) -> LatencyNs {
    let ios: f64 = dirs.iter().map(|d| d.ios).sum();
    let mut lat = LatencyNs {
        mean: dirs.iter().map(|d| d.mean_ns * d.ios).sum::<f64>() / ios,
        min: dirs.iter().filter_map(|d| d.min_ns).reduce(f64::min),
        max: dirs.iter().filter_map(|d| d.max_ns).reduce(f64::max),
        ..Default::default()
    };
    if dirs.iter().all(|d| d.bins.is_some()) {
        // json+: merge the histograms, exact percentiles of the whole level.
        let mut all: Vec<(f64, u64)> = (dirs.iter())
            .flat_map(|d| d.bins.clone().unwrap_or_default())
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        for q in [50.0, 90.0, 95.0, 99.0, 99.9] {
            if let Some(v) = bin_percentile(&all, q) {
                lat.set_percentile(q, v);
            }
        }
    } else if dirs.len() == 1 {
        for &(p, ns) in &dirs[0].pcts {
            lat.set_percentile(p, ns);
        }
    } else {
        // Several jobs or directions and no histograms: an I/O-weighted mean of each
        // percentile. Not exact; said so in the notes.
        *averaged = true;
        for q in [50.0, 90.0, 95.0, 99.0, 99.9] {
            let mut w = 0.0;
            let mut sum = 0.0;
            for d in dirs {
                if let Some(&(_, ns)) = d.pcts.iter().find(|(p, _)| (p - q).abs() < 1e-6) {
                    w += d.ios;
                    sum += d.ios * ns;
                }
            }
            if w > 0.0 {
                lat.set_percentile(q, sum / w);
            }
        }
    }
    lat
}

/// Builds the levels of a fio file from its reporting groups.
struct Assembler<'a> {
    path: &'a Path,
    global: Value,
    out: FileImport,
    patterns: Vec<String>,
    averaged_pcts: bool,
}

impl Assembler<'_> {
    /// One reporting group's level.
    fn group(&mut self, entries: &[Entry]) -> Result<()> {
        let path = self.path;
        let mut concurrency: u32 = 0;
        let mut dirs = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for e in entries {
            concurrency = entry_concurrency(e, entries, &self.global)
                .and_then(|c| c.checked_add(concurrency))
                .ok_or_else(|| perr(path, e.line, "iodepth × numjobs overflows: no concurrency"))?;
            if !names.contains(&e.name.as_str()) {
                names.push(&e.name);
            }
            let global = &self.global;
            if let Some(rw) = opt(e.job, global, "rw").or(opt(e.job, global, "readwrite")) {
                if !self.patterns.iter().any(|p: &String| p == rw) {
                    self.patterns.push(rw.to_string());
                }
            }
            if self.out.block_size.is_none() {
                self.out.block_size = (opt(e.job, global, "bs"))
                    .or(opt(e.job, global, "blocksize"))
                    .and_then(parse_size);
            }
            for d in ["read", "write", "trim"] {
                if let Some(s) = e.job.get(d).and_then(dir_stats) {
                    dirs.push(s);
                }
            }
            self.out.notes.extend(sync_note(path, e));
        }
        let first = &entries[0];
        if dirs.is_empty() {
            return Err(perr(
                path,
                first.line,
                format!("job '{}': no I/O completed (iops 0)", first.name),
            ));
        }
        let lat = level_latency(&dirs, &mut self.averaged_pcts);
        self.out.levels.push(ImportedLevel {
            point: LevelPoint {
                concurrency,
                iops: dirs.iter().map(|d| d.iops).sum(),
                bytes_per_s: dirs.iter().map(|d| d.bytes_per_s).sum(),
                latency_ns: lat,
                kernel_util_pct: None,
                kernel_aqu_sz: None,
                ..Default::default()
            },
            label: names.join("+"),
            line: first.line,
        });
        Ok(())
    }

    /// The notes about the whole file, and the device's %util when it belongs to a level.
    fn finish(mut self, root: &Value) -> FileImport {
        let (path, out) = (self.path, &mut self.out);
        if self.averaged_pcts {
            out.notes.push(format!(
                "{}: percentiles of several jobs or directions are I/O-weighted means, not \
                 exact; fio --output-format=json+ gives histograms that merge exactly.",
                path.display()
            ));
        }
        out.pattern = self.patterns.first().cloned();
        if self.patterns.len() > 1 {
            out.notes.push(format!(
                "{}: jobs mix patterns ({}): a concurrency analysis compares like with like.",
                path.display(),
                self.patterns.join(", ")
            ));
        }
        // The device's %util over the run: fio's disk_util, the busiest device listed. It
        // covers the whole run, so it belongs to a level only when the file holds one level.
        let disk = (root.get("disk_util").and_then(Value::as_array)).and_then(|d| {
            d.iter().max_by_key(|x| {
                x.get("read_ios").and_then(Value::as_u64).unwrap_or(0) as u128
                    + x.get("write_ios").and_then(Value::as_u64).unwrap_or(0) as u128
            })
        });
        if let Some(util) = disk.and_then(|d| f(d, "util")) {
            if out.levels.len() == 1 {
                out.levels[0].point.kernel_util_pct = Some(util);
            } else {
                out.notes.push(format!(
                    "{}: fio's disk_util covers the whole run of {} levels, so no level gets a \
                     %util.",
                    path.display(),
                    out.levels.len()
                ));
            }
        }
        self.out
    }
}

/// Parse fio JSON text.
pub fn parse(path: &Path, text: &str) -> Result<FileImport> {
    let (root, skipped) = first_json(path, text)?;
    let mut out = FileImport::new(path, Tool::Fio);
    out.version = (root.get("fio version").and_then(Value::as_str)).map(str::to_string);
    let jobs = (root.get("jobs").and_then(Value::as_array))
        .filter(|j| !j.is_empty())
        .ok_or_else(|| {
            perr(
                path,
                skipped + 1,
                "expected a non-empty \"jobs\" array (fio --output-format=json)",
            )
        })?;
    let mut asm = Assembler {
        path,
        global: root.get("global options").cloned().unwrap_or(Value::Null),
        out,
        patterns: Vec::new(),
        averaged_pcts: false,
    };
    for entries in groups(path, text, skipped, jobs)?.values() {
        asm.group(entries)?;
    }
    Ok(asm.finish(&root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("16KiB"), Some(16384));
        assert_eq!(parse_size("1m"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("4k,8k"), Some(4096));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn histogram_percentiles() {
        let bins = [(100.0, 50), (200.0, 40), (1000.0, 10)];
        assert_eq!(bin_percentile(&bins, 50.0), Some(100.0));
        assert_eq!(bin_percentile(&bins, 90.0), Some(200.0));
        assert_eq!(bin_percentile(&bins, 95.0), Some(1000.0));
        assert_eq!(bin_percentile(&[], 95.0), None);
    }

    /// fio 2.x printed latencies in µs under `lat`/`clat` and bandwidth in KiB/s.
    #[test]
    fn fio2_microsecond_keys() {
        let text = r#"{
  "fio version" : "fio-2.2.10",
  "jobs" : [
    {
      "jobname" : "rr",
      "groupid" : 0,
      "error" : 0,
      "job options" : { "rw" : "randread", "bs" : "4k", "iodepth" : "8", "ioengine" : "libaio" },
      "read" : {
        "io_bytes" : 409600, "bw" : 40000, "iops" : 10000.0, "runtime" : 1000,
        "slat" : { "min" : 1, "max" : 10, "mean" : 2.0, "stdev" : 0.5 },
        "clat" : { "min" : 100, "max" : 9000, "mean" : 790.0, "stdev" : 40.0,
                   "percentile" : { "50.000000" : 700, "95.000000" : 1500, "99.000000" : 3000 } },
        "lat" : { "min" : 102, "max" : 9010, "mean" : 800.0, "stdev" : 41.0 }
      },
      "write" : { "io_bytes" : 0, "bw" : 0, "iops" : 0.0, "runtime" : 0 }
    }
  ]
}"#;
        let imp = parse(Path::new("old.json"), text).unwrap();
        assert_eq!(imp.levels.len(), 1);
        let p = &imp.levels[0].point;
        assert_eq!(p.concurrency, 8);
        assert_eq!(p.iops, 10000.0);
        assert_eq!(p.bytes_per_s, 40000.0 * 1024.0);
        assert_eq!(p.latency_ns.mean, 800_000.0);
        assert_eq!(p.latency_ns.p95, Some(1_500_000.0));
        assert_eq!(p.latency_ns.p90, None);
        assert_eq!(imp.block_size, Some(4096));
    }

    #[test]
    fn leading_notes_and_errors_keep_line_numbers() {
        let text =
            "note: both iodepth >= 1 and synchronous I/O engine are selected\n{\n  \"jobs\" : [\n";
        let e = parse(Path::new("t.json"), text).unwrap_err().to_string();
        assert!(e.starts_with("t.json:"), "{e}");
        assert!(e.contains("truncated fio JSON"), "{e}");
        let e = parse(Path::new("j.json"), "{ \"fio version\": \"x\" }")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "j.json:1: expected a non-empty \"jobs\" array (fio --output-format=json)"
        );
    }
}
