//! The profile file's format: a sweep report read leniently for the fields `stat` needs
//! ([`parse_profile`]; a field missing or of another type reads as None, so a file from an
//! older or newer iosat loads by the fields it has), and the report with what `iosat profile`
//! adds ([`Extras`], the device's state) as it is stored ([`profile_json`]).
//! Imports only: profile/, analysis/declared.rs.

use super::{DeviceProfile, DeviceState, Direction, Imported, ModelKey};
use crate::analysis::declared::{CapDim, DeclaredCap};

/// The sweep `report` with the device's state beside it (key `device_state`) and what `iosat
/// profile` adds ([`Extras`]), as [`save`](super::save) stores it: `stat` then says when the device changed
/// since the profile was measured.
pub fn profile_json<T: serde::Serialize>(
    report: &T,
    state: &DeviceState,
    extras: &Extras,
) -> String {
    #[derive(serde::Serialize)]
    struct WithState<'a, T> {
        #[serde(flatten)]
        report: &'a T,
        device_state: &'a DeviceState,
        #[serde(flatten)]
        extras: &'a Extras,
    }
    serde_json::to_string_pretty(&WithState {
        report,
        device_state: state,
        extras,
    })
    .expect("a sweep report serialises")
}

/// A profile file as `stat` reads it: the fields it needs from the saved sweep report, each
/// typed, every other field of the report ignored. A field that is missing or of another type
/// reads as None (the error then names it), so a file from an older or newer iosat loads by
/// the fields it has. Renaming one of these fields in the sweep report breaks
/// `profile::file::tests::a_profile_saved_by_iosat_0_1_still_loads`, not silently every saved profile.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct ProfileFile {
    #[serde(deserialize_with = "lenient")]
    verdict: Option<FileVerdict>,
    /// The levels, for the baseline level's device time (issue 40): only what that needs.
    #[serde(deserialize_with = "lenient")]
    levels: Option<Vec<FileLevel>>,
    #[serde(deserialize_with = "lenient")]
    workload: Option<FileWorkload>,
    /// When the sweep started, seconds since the epoch.
    #[serde(deserialize_with = "lenient")]
    started_unix_s: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    device_state: Option<DeviceState>,
    #[serde(deserialize_with = "lenient")]
    target: Option<FileTarget>,
    /// Set by `iosat profile import`: the device it was imported for, from which host.
    #[serde(deserialize_with = "lenient")]
    imported: Option<Imported>,
    /// Set by `iosat profile save/import`: the device here it was saved as the profile of.
    #[serde(deserialize_with = "lenient")]
    saved_for: Option<String>,
    /// The sweep report's host.
    #[serde(deserialize_with = "lenient")]
    host: Option<String>,
    /// Set by `iosat profile save/import --model`: a model profile and what it matches.
    #[serde(deserialize_with = "lenient")]
    model_profile: Option<ModelKey>,
    /// The cap declared for the device (issue 42): checked strictly ([`declared_cap`]), a
    /// file may have been planted by someone else.
    declared_cap: Option<serde_json::Value>,
}

/// What `iosat profile save/import` add to the sweep report they store ([`profile_json`]):
/// typed, so the stored file and [`ProfileFile`] agree on the names.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Extras {
    /// The device here the profile was saved for (None for a model profile: it is no one
    /// device's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_for: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_profile: Option<ModelKey>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileTarget {
    #[serde(deserialize_with = "lenient")]
    disk_device: Option<String>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileVerdict {
    #[serde(deserialize_with = "lenient")]
    baseline_latency_ns: Option<f64>,
    #[serde(deserialize_with = "lenient")]
    knee_concurrency: Option<f64>,
    #[serde(deserialize_with = "lenient")]
    max_useful_iops: Option<f64>,
    #[serde(deserialize_with = "lenient")]
    baseline_p95_ns: Option<f64>,
    #[serde(deserialize_with = "lenient")]
    overload_concurrency: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    knee_above: Option<u64>,
}

/// Split requests the baseline level needs for its device time to be kept: the verdict's own
/// floor for an interval (analysis::split::MIN_SPLIT_REQUESTS, not imported: profile/ stands
/// below analysis/).
const MIN_BASELINE_SPLIT: u64 = 50;

/// A sweep level, as far as its block-layer split goes (`kernel.block_latency.read_split`).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileLevel {
    #[serde(deserialize_with = "lenient")]
    concurrency: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    kernel: Option<FileKernel>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileKernel {
    #[serde(deserialize_with = "lenient")]
    block_latency: Option<FileBlockLatency>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileBlockLatency {
    #[serde(deserialize_with = "lenient")]
    read_split: Option<FileSplit>,
    #[serde(deserialize_with = "lenient")]
    write_split: Option<FileSplit>,
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileSplit {
    #[serde(deserialize_with = "lenient")]
    count: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    device_mean_ms: Option<f64>,
}

/// The device's own mean time at one in flight (issue 40), ns: the split of the sweep's
/// levels at concurrency 1, of the swept direction (a mixed sweep's reads and writes
/// together), weighted by their split requests, when the block-latency source ran and split
/// at least [`MIN_BASELINE_SPLIT`] of them.
fn baseline_device_ns(levels: &[FileLevel], dir: Direction) -> Option<f64> {
    // Every measurement at one in flight (a sweep repeats its levels: `--repeat`, the
    // baseline measured again), weighted by its split requests as the sweep weights its
    // repeats' latencies by their completions (load::result::combined_point).
    let splits: Vec<&FileSplit> = levels
        .iter()
        .filter(|l| l.concurrency == Some(1))
        .filter_map(|l| l.kernel.as_ref()?.block_latency.as_ref())
        .flat_map(|b| match dir {
            Direction::Read => [b.read_split.as_ref(), None],
            Direction::Write => [b.write_split.as_ref(), None],
            Direction::Mixed => [b.read_split.as_ref(), b.write_split.as_ref()],
        })
        .flatten()
        .collect();
    let (mut n, mut sum) = (0u64, 0.0);
    for s in splits {
        let (Some(c), Some(m)) = (s.count, s.device_mean_ms) else {
            continue;
        };
        if m.is_finite() && m > 0.0 {
            n += c;
            sum += c as f64 * m;
        }
    }
    (n >= MIN_BASELINE_SPLIT).then(|| sum / n as f64 * 1e6)
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct FileWorkload {
    #[serde(deserialize_with = "lenient")]
    pattern: Option<String>,
    #[serde(deserialize_with = "lenient")]
    block_size: Option<u64>,
    /// A mixed sweep's share of reads, percent (what its ceiling is made of).
    #[serde(deserialize_with = "lenient")]
    read_pct: Option<u64>,
    /// The gentle mode's limits, when the sweep had any (an object; absent or null: none).
    #[serde(deserialize_with = "lenient")]
    limits: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A value of type T, or None when the file holds something else there (null, another type).
fn lenient<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Either<T> {
        Is(T),
        Other(serde::de::IgnoredAny),
    }
    Ok(match <Either<T> as serde::Deserialize>::deserialize(d)? {
        Either::Is(v) => Some(v),
        Either::Other(_) => None,
    })
}

/// Pure: the numbers `stat` needs from a saved sweep report (`verdict.baseline_latency_ns`,
/// `knee_concurrency`, `max_useful_iops`; `workload.pattern`, `block_size`).
pub fn parse_profile(id: &str, json: &str) -> std::result::Result<DeviceProfile, String> {
    let file: ProfileFile = serde_json::from_str(json).map_err(|e| {
        if e.is_data() {
            "expected a sweep report with a 'verdict' object".to_string()
        } else {
            format!("not JSON ({e})")
        }
    })?;
    let verdict = file
        .verdict
        .ok_or("expected a sweep report with a 'verdict' object")?;
    let positive = |v: Option<f64>, k: &str| {
        v.filter(|x| x.is_finite() && *x > 0.0)
            .ok_or(format!("expected a positive number at verdict.{k}"))
    };
    let baseline_latency_ns = positive(verdict.baseline_latency_ns, "baseline_latency_ns")?;
    let knee = positive(verdict.knee_concurrency, "knee_concurrency")?;
    let max_useful_iops = positive(verdict.max_useful_iops, "max_useful_iops")?;
    let declared_cap = declared_cap(file.declared_cap.as_ref())?;
    let w = file.workload.unwrap_or_default();
    let pattern = w.pattern.unwrap_or_else(|| "unknown".into());
    let baseline_device_ns = file
        .levels
        .as_deref()
        .and_then(|l| baseline_device_ns(l, Direction::of_pattern(&pattern)));
    Ok(DeviceProfile {
        baseline_device_ns,
        id: id.to_string(),
        baseline_latency_ns,
        knee_concurrency: knee as u32,
        max_useful_iops,
        direction: Direction::of_pattern(&pattern),
        write: None,
        legacy: false,
        device_state: file.device_state,
        changed_since: Vec::new(),
        device: file
            .saved_for
            .or_else(|| file.target.and_then(|t| t.disk_device)),
        imported: file.imported,
        host: file.host.filter(|h| !h.is_empty()),
        model_profile: file.model_profile,
        baseline_p95_ns: verdict
            .baseline_p95_ns
            .filter(|x| x.is_finite() && *x > 0.0),
        overload_concurrency: verdict.overload_concurrency.map(|c| c as u32),
        knee_at_least: verdict.knee_above.map(|c| c as u32),
        gentle: w.limits.as_ref().is_some_and(|l| !l.is_empty()),
        measured_unix_s: file.started_unix_s,
        declared_cap,
        read_pct: w
            .read_pct
            .filter(|p| *p <= 100 && Direction::of_pattern(&pattern) == Direction::Mixed)
            .map(|p| p as u8),
        pattern,
        block_size: w.block_size.unwrap_or(0),
    })
}

/// A profile's `declared_cap` object: absent or null is none; otherwise an object whose known
/// keys (`iops`, `read_iops`, `write_iops`, `bytes_per_s`, `read_bytes_per_s`,
/// `write_bytes_per_s`) are each a positive finite number. Anything else is an error naming the
/// key: a cap judges every interval, so a planted `-5` or `"abc"` must not judge silently (nor
/// be dropped silently).
fn declared_cap(v: Option<&serde_json::Value>) -> std::result::Result<Option<DeclaredCap>, String> {
    let obj = match v {
        None | Some(serde_json::Value::Null) => return Ok(None),
        Some(serde_json::Value::Object(o)) => o,
        Some(other) => return Err(format!("expected an object at declared_cap, not {other}")),
    };
    let mut cap = DeclaredCap::default();
    for dim in CapDim::ALL {
        let key = match dim {
            CapDim::Iops => "iops",
            CapDim::ReadIops => "read_iops",
            CapDim::WriteIops => "write_iops",
            CapDim::BytesPerS => "bytes_per_s",
            CapDim::ReadBytesPerS => "read_bytes_per_s",
            CapDim::WriteBytesPerS => "write_bytes_per_s",
        };
        match obj.get(key) {
            None | Some(serde_json::Value::Null) => {}
            Some(x) => match x.as_f64().filter(|f| f.is_finite() && *f > 0.0) {
                Some(f) => cap.set(dim, f),
                None => {
                    return Err(format!(
                        "expected a positive number at declared_cap.{key}, not {x}"
                    ))
                }
            },
        }
    }
    Ok((!cap.is_empty()).then_some(cap))
}

/// The pattern a sweep report `json` was swept with, as [`save`](super::save) files it (empty
/// when the report says none).
pub(super) fn swept_pattern(json: &str) -> String {
    serde_json::from_str::<ProfileFile>(json)
        .ok()
        .and_then(|f| f.workload?.pattern)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::load;

    #[test]
    fn the_baseline_levels_device_time_is_kept_from_its_split() {
        let report = |split: &str| {
            format!(
                r#"{{"verdict":{{"baseline_latency_ns":2000000.0,"knee_concurrency":4,
                "max_useful_iops":900.0}},"workload":{{"pattern":"randread","block_size":4096}},
                "levels":[{{"concurrency":2,"kernel":{{"block_latency":{{"read_split":
                {{"count":900,"device_mean_ms":9.0}}}}}}}},
                {{"concurrency":1,"kernel":{{"block_latency":{split}}}}}]}}"#
            )
        };
        let p = parse_profile(
            "x",
            &report(r#"{"read_split":{"count":500,"device_mean_ms":1.8}}"#),
        )
        .unwrap();
        assert_eq!(p.baseline_device_ns, Some(1.8e6));
        // A repeated baseline: each measurement weighted by its split requests.
        let repeated = report(r#"{"read_split":{"count":300,"device_mean_ms":2.0}}"#).replace(
            r#""levels":["#,
            r#""levels":[{"concurrency":1,"kernel":{"block_latency":{"read_split":
                {"count":100,"device_mean_ms":1.0}}}},"#,
        );
        let p = parse_profile("x", &repeated).unwrap();
        assert!(
            (p.baseline_device_ns.unwrap() - 1.75e6).abs() < 1.0,
            "{p:?}"
        );
        // Too few split, the writes' split of a read sweep, none, or of another type: none,
        // and the profile still loads.
        for split in [
            r#"{"read_split":{"count":49,"device_mean_ms":1.8}}"#,
            r#"{"write_split":{"count":500,"device_mean_ms":1.8}}"#,
            r#"{}"#,
            r#""none""#,
        ] {
            let p = parse_profile("x", &report(split)).unwrap();
            assert_eq!(p.baseline_device_ns, None, "{split}");
        }
    }

    /// A mixed sweep's share of reads is kept (what its max useful IOPS are made of:
    /// monitor::judge's ceiling of each direction); one out of range, or of a one-direction
    /// sweep, is not.
    #[test]
    fn a_mixed_sweeps_share_of_reads_is_kept() {
        let report = |pattern: &str, pct: &str| {
            format!(
                r#"{{"workload":{{"pattern":"{pattern}","block_size":4096,"read_pct":{pct}}},
                "verdict":{{"baseline_latency_ns":1e6,"knee_concurrency":4,"max_useful_iops":2000}}}}"#
            )
        };
        let pct = |pattern: &str, pct: &str| parse_profile("x", &report(pattern, pct)).unwrap();
        assert_eq!(pct("randrw", "70").read_pct, Some(70));
        assert_eq!(pct("randrw", "0").read_pct, Some(0));
        assert_eq!(pct("randrw", "170").read_pct, None);
        assert_eq!(pct("randrw", "\"x\"").read_pct, None);
        assert_eq!(pct("randwrite", "0").read_pct, None);
        assert_eq!(pct("randread", "100").read_pct, None);
    }

    #[test]
    fn profile_from_a_sweep_report() {
        let json = r#"{"schema_version":1,"kind":"sweep",
            "workload":{"pattern":"randread","block_size":4096},
            "verdict":{"baseline_latency_ns":120500.5,"knee_concurrency":16,"max_useful_iops":98000.0}}"#;
        let p = parse_profile("dev", json).unwrap();
        assert_eq!(p.baseline_latency_ns, 120500.5);
        assert_eq!(p.knee_concurrency, 16);
        assert_eq!(p.max_useful_iops, 98000.0);
        assert_eq!((p.pattern.as_str(), p.block_size), ("randread", 4096));
        // A read sweep's share of reads (100) says nothing its direction does not.
        assert_eq!(p.read_pct, None);
        let e = parse_profile("dev", r#"{"verdict":null}"#).unwrap_err();
        assert!(e.contains("'verdict'"), "{e}");
        let e = parse_profile("dev", r#"{"verdict":{"baseline_latency_ns":0}}"#).unwrap_err();
        assert!(e.contains("verdict.baseline_latency_ns"), "{e}");

        let d = tempfile::tempdir().unwrap();
        assert_eq!(load(d.path(), "none").unwrap(), None);
        std::fs::write(d.path().join("bad.json"), "{").unwrap();
        let e = load(d.path(), "bad").unwrap_err().to_string();
        assert!(e.contains("bad.json:1: not JSON"), "{e}");
    }

    /// Issue 42: a profile's declared cap reads back; a planted one that is not a positive
    /// number (or not an object) refuses the file, naming the key, rather than judging by it.
    #[test]
    fn a_declared_cap_reads_back_and_a_planted_bad_one_is_refused() {
        let v = r#""verdict":{"baseline_latency_ns":1,"knee_concurrency":2,"max_useful_iops":3}"#;
        let with = |cap: &str| parse_profile("dev", &format!("{{{v},\"declared_cap\":{cap}}}"));
        let p = with(r#"{"iops":3000,"bytes_per_s":125000000.0,"newer_key":1}"#).unwrap();
        let c = p.declared_cap.unwrap();
        assert_eq!((c.iops, c.bytes_per_s), (Some(3000.0), Some(125e6)));
        assert_eq!(with("null").unwrap().declared_cap, None);
        assert_eq!(with("{}").unwrap().declared_cap, None);
        for (bad, says) in [
            (r#"{"iops":-5}"#, "declared_cap.iops, not -5"),
            (r#"{"iops":0}"#, "declared_cap.iops, not 0"),
            (
                r#"{"write_bytes_per_s":"abc"}"#,
                "declared_cap.write_bytes_per_s",
            ),
            (r#""3000""#, "expected an object at declared_cap"),
        ] {
            let e = with(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // What a sweep with a declaration saves reads back the same.
        let report = serde_json::json!({
            "verdict": {"baseline_latency_ns": 1, "knee_concurrency": 2, "max_useful_iops": 3},
            "declared_cap": crate::analysis::declared::DeclaredCap {
                read_iops: Some(16000.0),
                ..Default::default()
            },
        });
        let json = profile_json(&report, &DeviceState::default(), &Extras::default());
        let p = parse_profile("dev", &json).unwrap();
        assert_eq!(p.declared_cap.unwrap().read_iops, Some(16000.0));
    }

    /// A profile file as iosat 0.1 saved it (the sweep report pretty-printed with sorted keys,
    /// `device_state` among them): every field `stat` uses still loads from it, so renaming
    /// one in the typed reader (or the report) fails here instead of disabling saved profiles.
    #[test]
    fn a_profile_saved_by_iosat_0_1_still_loads() {
        let d = tempfile::tempdir().unwrap();
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/profile/saved-0.1.read.json"
        );
        std::fs::copy(fixture, d.path().join("dev.read.json")).unwrap();
        let p = load(d.path(), "dev").unwrap().unwrap();
        assert_eq!(p.baseline_latency_ns, 8_001_536.0);
        assert_eq!(p.baseline_p95_ns, Some(8_003_583.0));
        assert_eq!(p.knee_concurrency, 4);
        assert_eq!(p.overload_concurrency, Some(16));
        assert_eq!(p.max_useful_iops, 500.0);
        assert_eq!((p.pattern.as_str(), p.block_size), ("randread", 4096));
        assert_eq!(p.direction, Direction::Read);
        assert_eq!(p.measured_unix_s, Some(1_795_336_333));
        let state = p.device_state.unwrap();
        assert_eq!(state.size_bytes, Some(1_000_204_886_016));
        assert_eq!(state.scheduler.as_deref(), Some("none"));
        assert_eq!(state.model.as_deref(), Some("Samsung SSD 980 PRO 1TB"));
        // What this iosat saves reads back the same: the fixture's report, with its state.
        let mut report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
        report.as_object_mut().unwrap().remove("device_state");
        let again =
            parse_profile("dev", &profile_json(&report, &state, &Extras::default())).unwrap();
        assert_eq!(again.baseline_p95_ns, p.baseline_p95_ns);
        assert_eq!(again.device_state, Some(state));
        // A field of another type reads as missing and is named; an array is no report.
        let e = parse_profile("dev", r#"{"verdict":{"baseline_latency_ns":"1"}}"#).unwrap_err();
        assert!(e.contains("verdict.baseline_latency_ns"), "{e}");
        let e = parse_profile("dev", "[1]").unwrap_err();
        assert!(e.contains("'verdict'"), "{e}");
        let p = parse_profile(
            "dev",
            r#"{"verdict":{"baseline_latency_ns":1,"knee_concurrency":2,"max_useful_iops":3,
                "overload_concurrency":2.5},"workload":{"block_size":"4k"},"device_state":7}"#,
        )
        .unwrap();
        assert_eq!((p.overload_concurrency, p.block_size), (None, 0));
        assert_eq!((p.pattern.as_str(), p.device_state), ("unknown", None));
    }
}
