//! Every JSON output iosat prints, validated against its shipped JSON Schema
//! (`schemas/KIND.schema.json`, draft 2020-12): a sim sweep, fsync on a temp dir, analyze of
//! each input format, stat lines live and replayed, info live and on a fixture tree. The
//! schemas are strict where a consumer depends on them: the envelope (kind, versions, host,
//! kernel, cpus, start) must be there with its types.

use crate::util::{fixture, iosat, json_lines, ok_stdout};
use serde_json::Value;

fn schema(kind: &str) -> Value {
    let path = format!("{}/schemas/{kind}.schema.json", env!("CARGO_MANIFEST_DIR"));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::meta::validate(&s).unwrap_or_else(|e| panic!("{path} is not a schema: {e}"));
    s
}

/// Each error with where it is, or nothing.
fn errors(kind: &str, doc: &Value) -> Vec<String> {
    let v = jsonschema::validator_for(&schema(kind)).unwrap();
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

pub(crate) fn assert_valid(kind: &str, doc: &Value, what: &str) {
    let e = errors(kind, doc);
    assert!(e.is_empty(), "{what} fails {kind}.schema.json: {e:#?}");
    assert_eq!(doc["kind"], kind, "{what}");
}

fn run_json(args: &[&str]) -> Value {
    serde_json::from_str(&ok_stdout(&iosat().args(args).output().unwrap())).unwrap()
}

fn sim_sweep(extra: &[&str]) -> Value {
    crate::util::SimSweep::small().args(extra).json()
}

#[test]
fn sweep_json_matches_its_schema() {
    assert_valid("sweep", &sim_sweep(&[]), "sim sweep");
    let mixed = sim_sweep(&["--pattern", "randrw", "--repeat", "2"]);
    assert_valid("sweep", &mixed, "randrw sweep with repeats");
    // Issue 42: the declaration and the verdict's match to it.
    let capped = sim_sweep(&["--cap-iops", "1000", "--cap-mbps", "125"]);
    assert_valid("sweep", &capped, "sweep with a declared cap");
    assert_eq!(capped["declared_cap"]["bytes_per_s"], 125e6, "{capped}");
    assert!(
        capped["verdict"]["declared_cap"]["ratio"].is_number(),
        "{capped}"
    );
}

/// An open-loop sweep (`--rate` beside closed levels, and a `--target-p99` search) on a
/// small file in a temporary directory: open_loop and open_levels as the schema says.
#[test]
fn open_loop_sweep_json_matches_its_schema() {
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let quick = [
        "--size",
        "16m",
        "--duration",
        "0.2",
        "--ramp",
        "0.05",
        "--budget",
        "0",
        "--no-progress",
        "--json",
    ];
    let r = run_json(
        &[
            &["sweep", d, "--levels", "1,2", "--rate", "300,600"],
            &quick[..],
        ]
        .concat(),
    );
    assert_valid("sweep", &r, "open-loop sweep");
    assert_eq!(r["open_levels"].as_array().unwrap().len(), 2, "{r}");
    // The schema says each level carries its intervals; not null on a fresh run.
    assert!(
        r["open_levels"][0]["latency_ns_ci95"]["p99"].is_array(),
        "{r}"
    );
    let t = run_json(
        &[
            &["sweep", d, "--levels", "1,2", "--target-p99", "50ms"],
            &quick[..],
        ]
        .concat(),
    );
    assert_valid("sweep", &t, "--target-p99 sweep");
    let a = &t["open_loop"]["verdict"]["max_iops_at_target"];
    assert_eq!(a["estimate"], false, "{}", t["open_loop"]);
    assert!(a["low_iops"].as_f64().unwrap() > 0.0, "{}", t["open_loop"]);
}

#[test]
fn fsync_json_matches_its_schema() {
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let r = run_json(&[
        "fsync",
        d,
        "--methods",
        "fsync,odsync",
        "--sizes",
        "4k",
        "--duration",
        "0.1",
        "--committers",
        "1,2",
        "--target-tps",
        "100",
        "--json",
    ]);
    assert_valid("fsync", &r, "fsync on a temp dir");
    assert!(!r["group_commit"].is_null());
}

#[test]
fn analyze_json_of_every_input_format_matches_its_schema() {
    let sets: &[&[&str]] = &[
        &[
            "fio-qd1.json",
            "fio-qd4.json",
            "fio-qd16.json",
            "fio-qd64.json",
        ],
        &["fio-plus-qd8.json"],
        &["sysbench-t1.txt", "sysbench-t4.txt", "sysbench-t16.txt"],
        &["iostat-x.txt"],
        &["iostat.json"],
        &["pt-stalk-loop.diskstats"],
        &["iosat-loop.rec"],
    ];
    for files in sets {
        let mut a = vec!["analyze".to_string(), "--json".to_string()];
        a.extend(
            files
                .iter()
                .map(|f| fixture("import").join(f).display().to_string()),
        );
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        assert_valid("analyze", &run_json(&a), &format!("analyze {files:?}"));
        // Issue 42: with a declared cap, the declaration and the verdict's match to it.
        let capped = run_json(&[&a[..], &["--cap-iops", "70000"]].concat());
        assert_valid("analyze", &capped, &format!("analyze {files:?} --cap-iops"));
    }
}

#[test]
fn stat_lines_live_and_replayed_match_their_schema() {
    let live = ok_stdout(
        &iosat()
            .args(["stat", "--all", "-i", "0.1", "-c", "2", "--json"])
            .output()
            .unwrap(),
    );
    for rec in [
        "stat/pair.rec",
        "stat/profiled.rec",
        "stat/classes.rec",
        "stat/pt-stalk.diskstats",
    ] {
        let f = fixture(rec);
        let o = iosat()
            .args(["stat", "--all", "--json", "--replay"])
            .arg(&f)
            .output()
            .unwrap();
        let lines = json_lines(&ok_stdout(&o));
        assert!(!lines.is_empty(), "{rec}");
        for l in &lines {
            assert_valid("stat", l, rec);
        }
    }
    let lines = json_lines(&live);
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert_valid("stat", l, "live stat");
    }
    // One envelope per run: every line carries the same, the start of the run (the first
    // interval's start; with --since-boot the first sample, not the boot).
    assert_eq!(lines[0]["started"], lines[1]["started"]);
    assert_eq!(lines[0]["started"], lines[0]["start_timestamp"]);
    let o = iosat()
        .args(["stat", "--since-boot", "-i", "0.1", "-c", "2", "--json"])
        .output()
        .unwrap();
    let lines = json_lines(&ok_stdout(&o));
    assert_eq!(lines[0]["since_boot"], true);
    assert_eq!(lines[0]["started"], lines[0]["timestamp"]);
    assert_eq!(lines[1]["started"], lines[0]["timestamp"]);
    for l in &lines {
        assert_valid("stat", l, "stat --since-boot");
    }
    // Bursts (issue 41): windows of 20 ms within 0.2 s intervals, recorded and replayed.
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("b.rec");
    let o = iosat()
        .args([
            "stat",
            "--all",
            "--no-learn",
            "-i",
            "0.2",
            "-c",
            "2",
            "--json",
        ])
        .args(["--burst-window", "20ms", "--record"])
        .arg(&rec)
        .output()
        .unwrap();
    let live = json_lines(&ok_stdout(&o));
    let o = iosat()
        .args(["stat", "--all", "--no-learn", "--json", "--replay"])
        .arg(&rec)
        .output()
        .unwrap();
    let replayed = json_lines(&ok_stdout(&o));
    assert_eq!(live, replayed);
    let bursts = live
        .iter()
        .flat_map(|l| l["devices"].as_array().unwrap().iter())
        .filter(|d| d["burst"].is_object())
        .count();
    assert!(bursts > 0, "{live:?}");
    for l in &live {
        assert_valid("stat", l, "stat with bursts");
    }
}

#[test]
fn info_json_matches_its_schema() {
    assert_valid("info", &run_json(&["info", "--json"]), "info");
    let root = fixture("sysroot1");
    let r = run_json(&[
        "info",
        "--json",
        "--proc-root",
        root.join("proc").to_str().unwrap(),
        "--sys-root",
        root.join("sys").to_str().unwrap(),
    ]);
    assert_valid("info", &r, "info on a fixture tree");
}

#[test]
fn a_missing_envelope_field_or_a_wrong_type_fails() {
    let good = sim_sweep(&[]);
    assert!(errors("sweep", &good).is_empty());
    for key in [
        "host",
        "kernel",
        "cpus",
        "started",
        "started_unix_s",
        "kind",
    ] {
        let mut d = good.clone();
        d.as_object_mut().unwrap().remove(key);
        assert!(!errors("sweep", &d).is_empty(), "{key} missing passes");
    }
    let mut d = good.clone();
    d["cpus"] = "2".into();
    assert!(!errors("sweep", &d).is_empty(), "cpus as a string passes");
    let mut d = good.clone();
    d["kind"] = "fsync".into();
    assert!(
        !errors("sweep", &d).is_empty(),
        "a sweep of kind fsync passes"
    );
    let mut d = good;
    d["levels"][0]["iops"] = "fast".into();
    let e = errors("sweep", &d);
    assert!(e.iter().any(|e| e.contains("/levels/0/iops")), "{e:?}");
}

/// A step into a JSON document: a key or an array index.
#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// The path of every value in `doc` (objects and arrays included), the first element of each
/// array standing for all of them.
fn paths(doc: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match doc {
        Value::Object(m) => {
            for (k, v) in m {
                at.push(Step::Key(k.clone()));
                out.push(at.clone());
                paths(v, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            if let Some(v) = a.first() {
                at.push(Step::Index(0));
                out.push(at.clone());
                paths(v, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn at_mut<'a>(doc: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(doc, |v, s| match s {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

fn show(path: &[Step]) -> String {
    path.iter()
        .map(|s| match s {
            Step::Key(k) => format!("/{k}"),
            Step::Index(i) => format!("/{i}"),
        })
        .collect()
}

/// Every value a result's own type lets be empty — a field its Rust type accepts as null (an
/// `Option`) or as an empty array — emptied one at a time, and every such leaf at once, then
/// written by that type as the program writes it: each document must match the schema. Run
/// on a quiet machine, a sweep fills every field; under load, or on another device, the
/// program writes the empty ones (a window with too few requests for a p95), and a schema
/// that only ever saw full documents rejects them. Returns how many fields could be empty.
fn empties_match<T: serde::de::DeserializeOwned + serde::Serialize>(
    kind: &str,
    doc: &Value,
) -> usize {
    let v = jsonschema::validator_for(&schema(kind)).unwrap();
    let written = |d: Value| -> Option<Value> {
        let t: T = serde_json::from_value(d).ok()?;
        Some(serde_json::to_value(&t).unwrap())
    };
    let mut all = Vec::new();
    paths(doc, &mut Vec::new(), &mut all);
    let (mut bad, mut nullable_leaves, mut empties) = (Vec::new(), Vec::new(), 0);
    for p in &all {
        let before = at_mut(&mut doc.clone(), p).clone();
        let mut tries = vec![Value::Null];
        if before.is_array() {
            tries.push(Value::Array(Vec::new()));
        }
        for empty in tries {
            let mut d = doc.clone();
            *at_mut(&mut d, p) = empty.clone();
            let Some(out) = written(d) else { continue };
            empties += 1;
            if empty.is_null() && !before.is_object() && !before.is_array() {
                nullable_leaves.push(p.clone());
            }
            let errs: Vec<String> = v
                .iter_errors(&out)
                .map(|e| format!("{e} at {}", e.instance_path))
                .collect();
            if !errs.is_empty() {
                bad.push(format!("{} = {empty}: {errs:?}", show(p)));
            }
        }
    }
    let mut d = doc.clone();
    for p in &nullable_leaves {
        *at_mut(&mut d, p) = Value::Null;
    }
    match written(d) {
        Some(out) => bad.extend(
            v.iter_errors(&out)
                .map(|e| format!("every optional leaf null: {e} at {}", e.instance_path)),
        ),
        None => bad.push("every optional leaf null: the type refuses it".into()),
    }
    assert!(
        bad.is_empty(),
        "{kind}.schema.json refuses what iosat writes: {bad:#?}"
    );
    empties
}

/// Sweeps (closed, mixed with repeats, open loop, a target search), fsync and analyze, every
/// optional field of each emptied as above.
#[test]
fn outputs_with_every_optional_field_empty_match_their_schemas() {
    use iosat::fsync::report::FsyncReport;
    use iosat::import::report::AnalyzeReport;
    use iosat::load::result::SweepReport;
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let quick = [
        "--size",
        "16m",
        "--duration",
        "0.2",
        "--ramp",
        "0.05",
        "--budget",
        "0",
        "--no-progress",
        "--json",
    ];
    let open = run_json(&[&["sweep", d, "--levels", "1", "--rate", "300"], &quick[..]].concat());
    let target = run_json(
        &[
            &["sweep", d, "--levels", "1", "--target-p99", "50ms"],
            &quick[..],
        ]
        .concat(),
    );
    let sweeps = [
        sim_sweep(&[]),
        sim_sweep(&["--pattern", "randrw", "--repeat", "2"]),
        open,
        target,
    ];
    for s in &sweeps {
        // A full sweep has dozens of optional fields; none found means the walk is broken.
        assert!(empties_match::<SweepReport>("sweep", s) > 20);
    }
    let f = run_json(&[
        "fsync",
        d,
        "--methods",
        "fsync",
        "--sizes",
        "4k",
        "--duration",
        "0.1",
        "--committers",
        "1,2",
        "--target-tps",
        "100",
        "--json",
    ]);
    assert!(empties_match::<FsyncReport>("fsync", &f) > 5);
    let fio: Vec<String> = ["fio-qd1.json", "fio-qd4.json"]
        .iter()
        .map(|f| fixture("import").join(f).display().to_string())
        .collect();
    let a = run_json(
        &[
            &["analyze", "--json"],
            &[fio[0].as_str(), fio[1].as_str()][..],
        ]
        .concat(),
    );
    assert!(empties_match::<AnalyzeReport>("analyze", &a) > 5);
}
