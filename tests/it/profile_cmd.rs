//! `iosat profile`: save a profile from an existing sweep result (with the trust checks and
//! `--force` of `sweep --save-profile`), import one for another device, list/show/export/rm;
//! `iosat info` naming the ids it looked for. Devices come from the sysfs fixture (sysroot1),
//! whose profile ids are known, so no test touches a real disk.

use crate::util::{assert_refusals, fixture, ok_json, ok_stdout, run_sub, stderr, SimSweep};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The fixture's nvme0n1 and loop0 profile ids (model + size; no wwid or serial there).
const NVME_ID: &str = "Samsung_SSD_970_EVO_Plus_1TB-1000204886016";
const LOOP_ID: &str = "loop0-268435456";

fn roots() -> Vec<String> {
    let s = fixture("sysroot1");
    vec![
        "--sys-root".into(),
        s.join("sys").display().to_string(),
        "--proc-root".into(),
        s.join("proc").display().to_string(),
    ]
}

fn profile(args: &[&str], dir: &Path) -> std::process::Output {
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push("--profile-dir".into());
    all.push(dir.display().to_string());
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    run_sub("profile", &all)
}

fn with_roots<'a>(args: &[&'a str], roots: &'a [String]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(roots.iter().map(String::as_str));
    v
}

/// A sim sweep's result saved as `dir/name`.
fn result(dir: &Path, name: &str) -> PathBuf {
    SimSweep::small().save(dir.join(name))
}

/// The result with its baseline made unstable (40 % between its windows): refused as a profile.
fn unstable(dir: &Path, good: &Path) -> PathBuf {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(good).unwrap()).unwrap();
    v["levels"][0]["spread"]["mean_ns_cv"] = 0.4.into();
    let p = dir.join("unstable.json");
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

#[test]
fn save_from_a_result_accepted_refused_and_forced() {
    let t = crate::util::tempdir().unwrap();
    let profiles = t.path().join("profiles");
    let good = result(t.path(), "r.json");
    let roots = roots();
    let p = profiles.display().to_string();

    // A sim result names no disk: --for is required, one line naming it, exit 2.
    let r = good.display().to_string();
    assert_refusals(&[(
        &["profile", "save", &r, "--profile-dir", &p],
        2,
        "'--for' is needed",
    )]);
    assert!(!profiles.exists(), "nothing saved");

    let out = profile(
        &with_roots(&["save", &r, "--for", "nvme0n1", "--json"], &roots),
        &profiles,
    );
    let v = ok_json(&out);
    assert_eq!(v["id"], NVME_ID);
    let saved = PathBuf::from(v["path"].as_str().unwrap());
    assert_eq!(saved, profiles.join(format!("{NVME_ID}.read.json")));
    // The stored file is the result whole, with the device it was saved for.
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let orig: Value = serde_json::from_str(&std::fs::read_to_string(&good).unwrap()).unwrap();
    assert_eq!(stored["levels"], orig["levels"]);
    assert_eq!(stored["verdict"], orig["verdict"]);
    assert_eq!(stored["saved_for"], "nvme0n1");
    assert!(stored["device_state"]["size_bytes"].is_u64(), "{stored}");

    // An unstable baseline: refused for safety (exit 4) as `sweep --save-profile` refuses it,
    // and nothing replaced; --force stores it.
    std::fs::remove_file(&saved).unwrap();
    let bad = unstable(t.path(), &good).display().to_string();
    let args = with_roots(&["save", &bad, "--for", "nvme0n1"], &roots);
    let out = profile(&args, &profiles);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("not storing this profile: baseline is unstable (mean latency varied 40 %")
            && e.contains("--force stores it anyway"),
        "{e}"
    );
    assert!(!saved.exists());
    let mut forced = args.clone();
    forced.push("--force");
    ok_stdout(&profile(&forced, &profiles));
    assert!(saved.exists());

    // A sweep that did not finish is refused too; not JSON and another kind are usage errors.
    let mut v = orig.clone();
    v["complete"] = false.into();
    let cut = t.path().join("cut.json");
    std::fs::write(&cut, v.to_string()).unwrap();
    let out = profile(
        &with_roots(&["save", cut.to_str().unwrap(), "--for", "nvme0n1"], &roots),
        &profiles,
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("did not finish"), "{}", stderr(&out));
    let junk = t.path().join("junk.json");
    std::fs::write(&junk, "{").unwrap();
    let j = junk.display().to_string();
    assert_refusals(&[
        (
            &[
                "profile",
                "save",
                &j,
                "--for",
                "nvme0n1",
                "--profile-dir",
                &p,
            ],
            2,
            "junk.json:1: not JSON",
        ),
        (
            &["profile", "save", &r, "--for", "sdq", "--profile-dir", &p],
            2,
            "'--for' is not a block device of this machine",
        ),
    ]);
}

#[test]
fn import_for_another_device_then_list_show_export_rm() {
    let t = crate::util::tempdir().unwrap();
    let profiles = t.path().join("profiles");
    let roots = roots();
    // Swept and saved for nvme0n1 (the twin), exported, imported for loop0.
    let r = result(t.path(), "r.json");
    ok_stdout(&profile(
        &with_roots(
            &["save", r.to_str().unwrap(), "--for", "/dev/nvme0n1"],
            &roots,
        ),
        &profiles,
    ));
    let exported = t.path().join("twin.json");
    ok_stdout(&profile(
        &["export", NVME_ID, "-o", exported.to_str().unwrap()],
        &profiles,
    ));
    let out = profile(
        &with_roots(
            &[
                "import",
                exported.to_str().unwrap(),
                "--for",
                "loop0",
                "--json",
            ],
            &roots,
        ),
        &profiles,
    );
    assert_eq!(ok_json(&out)["id"], LOOP_ID);

    let list = ok_json(&profile(&["list", "--json"], &profiles));
    let rows = list.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{list}");
    let loop_row = rows.iter().find(|r| r["id"] == LOOP_ID).unwrap();
    assert_eq!(loop_row["device"], "loop0");
    assert_eq!(loop_row["direction"], "read");
    assert_eq!(loop_row["pattern"], "randread");
    assert_eq!(loop_row["block_size"], 4096);
    assert_eq!(loop_row["source"], "swept");
    assert!(loop_row["measured_unix_s"].is_u64());
    // The import keeps the twin's device state (stat then says how this device differs) and
    // says where it came from.
    let imp = &loop_row["profile"]["imported"];
    assert_eq!(imp["for_device"], "loop0");
    assert!(imp["from_host"].is_string(), "{imp}");
    assert_eq!(
        loop_row["profile"]["device_state"]["size_bytes"],
        1_000_204_886_016u64
    );
    // Both carry the numbers of the one sweep.
    let nvme_row = rows.iter().find(|r| r["id"] == NVME_ID).unwrap();
    assert_eq!(
        nvme_row["profile"]["baseline_latency_ns"],
        loop_row["profile"]["baseline_latency_ns"]
    );

    let text = ok_stdout(&profile(&["list"], &profiles));
    let head = text.lines().next().unwrap();
    assert!(
        head.starts_with("ID") && head.contains("DEVICE") && head.ends_with("SOURCE"),
        "{text}"
    );
    assert!(
        text.contains(LOOP_ID) && text.contains("randread"),
        "{text}"
    );

    let show = ok_stdout(&profile(&["show", LOOP_ID], &profiles));
    assert!(show.contains("knee concurrency"), "{show}");
    assert!(
        show.contains("imported") && show.contains("for loop0"),
        "{show}"
    );
    let show = ok_json(&profile(&["show", LOOP_ID, "--json"], &profiles));
    assert_eq!(show[0]["id"], LOOP_ID);

    // Export to stdout is the file as stored.
    let e = ok_stdout(&profile(&["export", LOOP_ID], &profiles));
    let stored = std::fs::read_to_string(profiles.join(format!("{LOOP_ID}.read.json"))).unwrap();
    assert_eq!(e, stored);
    // -o never replaces a file without --force.
    let out = profile(
        &["export", LOOP_ID, "-o", exported.to_str().unwrap()],
        &profiles,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    // rm removes only iosat profiles: a foreign file of a profile's name stays.
    std::fs::write(profiles.join(format!("{LOOP_ID}.json")), "not a profile").unwrap();
    std::fs::write(profiles.join("notes.txt"), "keep").unwrap();
    let out = ok_json(&profile(&["rm", LOOP_ID, "--json"], &profiles));
    assert_eq!(out["removed"].as_array().unwrap().len(), 1, "{out}");
    assert!(!profiles.join(format!("{LOOP_ID}.read.json")).exists());
    assert!(profiles.join(format!("{LOOP_ID}.json")).exists());
    assert!(profiles.join("notes.txt").exists());
    let list = ok_json(&profile(&["list", "--json"], &profiles));
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");

    // Unknown ids and bad values: one line naming the argument and value, exit 2.
    let p = profiles.display().to_string();
    assert_refusals(&[
        (
            &["profile", "show", "nope", "--profile-dir", &p],
            2,
            "the profile id 'nope' is no profile in",
        ),
        (
            &["profile", "rm", LOOP_ID, "--profile-dir", &p],
            2,
            "'loop0-268435456'",
        ),
        (
            &[
                "profile",
                "show",
                NVME_ID,
                "--direction",
                "up",
                "--profile-dir",
                &p,
            ],
            2,
            "'--direction' must be read or write (got 'up')",
        ),
    ]);
}

#[test]
fn info_names_the_ids_it_looked_for_and_which_matched() {
    let t = crate::util::tempdir().unwrap();
    let profiles = t.path().join("profiles");
    let roots = roots();
    let r = result(t.path(), "r.json");
    ok_stdout(&profile(
        &with_roots(&["save", r.to_str().unwrap(), "--for", "nvme0n1"], &roots),
        &profiles,
    ));
    let mut args = vec!["info", "nvme0n1", "sda", "--profile-dir"];
    let p = profiles.display().to_string();
    args.push(&p);
    let args = with_roots(&args, &roots);
    let mut j = args.clone();
    j.push("--json");
    let v = ok_json(&run_sub(j[0], &j[1..]));
    let devs = v["devices"].as_array().unwrap();
    let nv = &devs[0]["profile_lookup"];
    assert_eq!(nv["ids"], serde_json::json!([NVME_ID]), "{nv}");
    assert_eq!(nv["matched_id"], NVME_ID);
    assert_eq!(
        nv["matched_file"],
        profiles
            .join(format!("{NVME_ID}.read.json"))
            .display()
            .to_string()
    );
    assert_eq!(nv["dir"], p);
    let sda = &devs[1]["profile_lookup"];
    let sda_id = devs[1]["profile_id"].as_str().unwrap();
    assert_eq!(sda["ids"], serde_json::json!([sda_id]));
    assert_eq!(sda["files"][0], format!("{sda_id}.read.json"));
    assert!(sda["matched_id"].is_null() && sda["matched_file"].is_null());
    assert!(sda["missing"].is_string(), "{sda}");

    let text = ok_stdout(&run_sub(args[0], &args[1..]));
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!(
            "profile ids looked for {NVME_ID} (.read.json, .write.json, .json): matched"
        )),
        "{text}"
    );
    assert!(
        flat.contains(&format!(
            "looked for {sda_id} (.read.json, .write.json, .json): none matched"
        )),
        "{text}"
    );
}

/// A twin's profile imported for a loop device this test creates: saved under the loop
/// device's own id, and `info` then finds it for that device.
#[test]
fn import_for_a_loop_device_is_found_by_info() {
    if !crate::util::is_root() {
        crate::util::skip("needs root for a loop device");
        return;
    }
    let Some(dev) = crate::util::LoopDev::try_new(8 << 20, false, None) else {
        crate::util::skip_lacking("no loop device");
        return;
    };
    let t = crate::util::tempdir().unwrap();
    let profiles = t.path().join("profiles");
    let r = result(t.path(), "twin.json");
    let node = format!("/dev/{}", dev.name());
    let v = ok_json(&profile(
        &["import", r.to_str().unwrap(), "--for", &node, "--json"],
        &profiles,
    ));
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(v["device"], dev.name());
    let p = profiles.display().to_string();
    let info = ok_json(&run_sub(
        "info",
        &["--all", dev.name(), "--profile-dir", &p, "--json"],
    ));
    let d = &info["devices"][0];
    assert_eq!(d["profile_id"], id.as_str(), "{d}");
    assert_eq!(d["profile_lookup"]["matched_id"], id.as_str(), "{d}");
    assert_eq!(d["profile"]["imported"]["for_device"], dev.name());
}

/// Loop devices of `size` bytes, or None (and a note) when this test cannot make them.
fn loops(sizes: &[u64]) -> Option<Vec<crate::util::LoopDev>> {
    if !crate::util::is_root() {
        crate::util::skip("needs root for loop devices");
        return None;
    }
    let mut out = Vec::new();
    for &s in sizes {
        match crate::util::LoopDev::try_new(s, false, None) {
            Some(d) => out.push(d),
            None => {
                crate::util::skip_lacking("no loop device");
                return None;
            }
        }
    }
    Some(out)
}

/// `iosat info DEV --json` with the profile directories `dirs`, its one device.
fn info_of(dev: &str, dirs: &[&Path]) -> Value {
    let mut args: Vec<String> = vec!["--all".into(), dev.into(), "--json".into()];
    for d in dirs {
        args.push("--profile-dir".into());
        args.push(d.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok_json(&run_sub("info", &args))["devices"][0].clone()
}

/// A model profile saved from one loop device judges a second one of the same size and
/// settings (no profile of its own), and says so in `info` and in `stat`'s judgement; a loop
/// device of another size is not matched, and `info` says how it differs.
#[test]
fn a_model_profile_applies_to_a_second_device_of_the_same_model_only() {
    let Some(devs) = loops(&[8 << 20, 8 << 20, 16 << 20]) else {
        return;
    };
    let (a, b, c) = (&devs[0], &devs[1], &devs[2]);
    let t = crate::util::tempdir().unwrap();
    let (own, shared) = (t.path().join("own"), t.path().join("shared"));
    std::fs::create_dir(&own).unwrap();
    let r = result(t.path(), "twin.json");
    let v = ok_json(&profile(
        &[
            "save",
            r.to_str().unwrap(),
            "--model",
            "--for",
            &format!("/dev/{}", a.name()),
            "--json",
        ],
        &shared,
    ));
    let model_id = v["id"].as_str().unwrap().to_string();
    assert!(model_id.starts_with("model-"), "{v}");
    assert!(v["model"].as_str().unwrap().ends_with(" 8 MiB"), "{v}");

    // The twin's sibling: no profile of its own, judged against the model profile.
    let d = info_of(b.name(), &[&own, &shared]);
    let l = &d["profile_lookup"];
    assert_eq!(l["matched_by"], "model", "{d}");
    assert_eq!(l["matched_id"], model_id.as_str(), "{d}");
    assert_eq!(
        l["ids"],
        serde_json::json!([d["profile_id"], model_id]),
        "{d}"
    );
    assert_eq!(l["dirs"][1]["role"], "shared", "{d}");
    let judged = l["judged_against"].as_str().unwrap();
    assert!(
        judged.starts_with("the model profile of 'unnamed model 8 MiB', swept on "),
        "{judged}"
    );
    // stat names it beside its judgement.
    let out = crate::util::iosat()
        .args(["stat", b.name(), "-i", "0.2", "-c", "1"])
        .args(["--profile-dir", own.to_str().unwrap()])
        .args(["--profile-dir", shared.to_str().unwrap()])
        .output()
        .unwrap();
    let text = ok_stdout(&out);
    assert!(
        text.contains(&format!("# {}: judged against {judged}", b.name())),
        "{text}"
    );
    let out = crate::util::iosat()
        .args(["stat", b.name(), "-i", "0.2", "-c", "1", "--json"])
        .args(["--profile-dir", own.to_str().unwrap()])
        .args(["--profile-dir", shared.to_str().unwrap()])
        .output()
        .unwrap();
    let line = ok_stdout(&out);
    let v: Value = serde_json::from_str(line.lines().last().unwrap()).unwrap();
    let dev = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kernel_name"] == b.name())
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(dev["profile"]["judged_against"], judged, "{dev}");

    // An own profile wins over the model profile.
    ok_stdout(&profile(
        &[
            "import",
            r.to_str().unwrap(),
            "--for",
            &format!("/dev/{}", b.name()),
        ],
        &own,
    ));
    let d = info_of(b.name(), &[&own, &shared]);
    assert_eq!(d["profile_lookup"]["matched_by"], "device", "{d}");
    assert_eq!(d["profile_lookup"]["matched_id"], d["profile_id"], "{d}");

    // Another size: not matched, and why.
    let d = info_of(c.name(), &[&own, &shared]);
    let l = &d["profile_lookup"];
    assert!(l["matched_id"].is_null(), "{d}");
    let why = l["model_misses"][0]["differences"].to_string();
    assert!(
        why.contains(&format!(
            "size {} here, {} in the profile",
            16 << 20,
            8 << 20
        )),
        "{why}"
    );
}

/// The IosatDiskProfileMissing runbook (docs/exporter.md) as written, on loop devices: TWIN
/// and DEVICE two of the same size, /etc/iosat/profiles a temporary directory (the one
/// substitution: `$IOSAT_PROFILE_DIRS` names it, so the default search finds it as it finds
/// /etc/iosat/profiles). Step 1, the sweep, runs on the sim engine: a real sweep of a loop
/// device on a busy test machine is refused as unstable, rightly, and the steps after it are
/// what the runbook adds.
#[test]
fn runbook_profile_missing_steps_work_as_written() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/exporter.md")).unwrap();
    let after = doc
        .split("### Runbook: IosatDiskProfileMissing")
        .nth(1)
        .expect("the runbook section");
    let block = after
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the runbook's steps");
    let steps: Vec<&str> = block
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(steps.len(), 4, "{steps:?}");
    assert!(steps[0].starts_with("iosat sweep /dev/TWIN"), "{steps:?}");
    assert!(!steps[0].contains("--pattern"), "read-only: {steps:?}");

    let Some(devs) = loops(&[8 << 20, 8 << 20]) else {
        return;
    };
    let t = crate::util::tempdir().unwrap();
    let etc = t.path().join("etc-iosat-profiles");
    let own = t.path().join("own");
    let subst = |s: &str| {
        s.replace("/dev/TWIN", &format!("/dev/{}", devs[0].name()))
            .replace("DEVICE", devs[1].name())
            .replace("/etc/iosat/profiles", etc.to_str().unwrap())
    };
    // Step 1 (sim engine, see above): twin.json in the working directory.
    SimSweep::small().save(t.path().join("twin.json"));
    let mut last = String::new();
    for step in &steps[1..] {
        let line = subst(step);
        let out = if let Some(args) = line.strip_prefix("iosat ") {
            crate::util::iosat()
                .current_dir(t.path())
                .env("IOSAT_PROFILE_DIR", &own)
                .env("IOSAT_PROFILE_DIRS", &etc)
                .args(args.split_whitespace())
                .output()
                .unwrap()
        } else {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(&line)
                .current_dir(t.path())
                .output()
                .unwrap()
        };
        assert!(
            out.status.success(),
            "{line}: {}{}",
            stderr(&out),
            String::from_utf8_lossy(&out.stdout)
        );
        last = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    // Step 4's answer: DEVICE (not the twin) judged against the model profile shipped.
    let flat = last.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("the model profile of '"), "{last}");
    assert!(
        flat.contains(etc.to_str().unwrap()),
        "from the shipped directory: {last}"
    );
    assert!(
        std::fs::read_dir(&etc).unwrap().count() == 1,
        "one model profile shipped"
    );
}

/// The advice of every notice that points at a sweep is the sweep's actual default: a sweep
/// without --pattern reads (randread), and the advice calls it read-only and adds no pattern.
#[test]
fn the_advice_to_sweep_matches_the_sweep_default() {
    let t = crate::util::tempdir().unwrap();
    let r = SimSweep::small().save(t.path().join("r.json"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(r).unwrap()).unwrap();
    let pattern = v["workload"]["pattern"].as_str().unwrap();
    assert_eq!(
        iosat::profile::Direction::of_pattern(pattern),
        iosat::profile::Direction::Read,
        "{pattern}"
    );
    let advice = iosat::profile::how_to_measure("sdb");
    assert!(
        advice.contains("(read-only): `iosat sweep /dev/sdb --save-profile`"),
        "{advice}"
    );
    assert!(!advice.contains("--pattern"), "{advice}");
}

/// The exporter judges a device by a model profile that matches it (its model key read from
/// its sysfs), and names the model profile's id in `iosat_profile_info`.
#[test]
fn the_exporter_uses_a_matching_model_profile() {
    use iosat::exporter::{metrics, scrape::Devices, scrape::Scraper};
    let root = crate::exporter::fixture_root();
    let t = crate::util::tempdir().unwrap();
    let dir = t.path().join("profiles");
    let r = result(t.path(), "twin.json");
    let v = ok_json(&profile(
        &[
            "save",
            r.to_str().unwrap(),
            "--model",
            "--for",
            "nvme0n1",
            "--sys-root",
            root.sys.to_str().unwrap(),
            "--json",
        ],
        &dir,
    ));
    let model_id = v["id"].as_str().unwrap().to_string();
    let mut s = Scraper::new(root, Devices::default(), Some(dir)).with_profile_refresh(0);
    let text = metrics::render(&s.scrape());
    assert!(
        text.contains(&format!(
            "iosat_profile_info{{device=\"nvme0n1\",op=\"read\",profile_id=\"{model_id}\""
        )),
        "{text}"
    );
}

/// A sweep that did not reach the knee (gentle: `--max-concurrency 2` on a device whose knee
/// is at 4) saved as a profile: `stat --json` gives the bound (`knee_at_least`,
/// `max_useful_iops_at_least`, the headroom marked as a lower bound) and no knee, and says so
/// in words; `profile show` too. The same device swept past its knee judges as before (a
/// knee, max useful IOPS, load vs knee).
#[test]
fn a_gentle_profile_is_never_read_as_having_a_knee() {
    let t = crate::util::tempdir().unwrap();
    let roots = roots();
    let sweep = |name: &str, extra: &[&str]| -> (PathBuf, Value) {
        let path = SimSweep::quick("sim:units=4,service=1ms", "1,2,4,8,16")
            .args(extra)
            .save(t.path().join(name));
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        v["started_unix_s"] = 1_795_568_400u64.into(); // 2026-11-25 01:00 UTC
        std::fs::write(&path, v.to_string()).unwrap();
        (path, v)
    };
    let (gentle, gv) = sweep("gentle.json", &["--max-concurrency", "2"]);
    let knee = gv["verdict"]["knee_above"]
        .as_u64()
        .expect("a gentle sweep stops below the knee");
    let max = gv["verdict"]["max_useful_iops"].as_f64().unwrap();
    let (plain, pv) = sweep("plain.json", &[]);
    assert!(
        pv["verdict"].get("knee_above").is_none(),
        "{}",
        pv["verdict"]
    );
    let (pknee, pmax) = (
        pv["verdict"]["knee_concurrency"].as_u64().unwrap(),
        pv["verdict"]["max_useful_iops"].as_f64().unwrap(),
    );

    let stat = |file: &Path, dir: &Path| -> Value {
        let d = dir.display().to_string();
        ok_stdout(&profile(
            &with_roots(
                &["save", file.to_str().unwrap(), "--for", "nvme0n1"],
                &roots,
            ),
            dir,
        ));
        let args = with_roots(
            &[
                "nvme0n1",
                "--since-boot",
                "-c",
                "1",
                "--json",
                "--profile-dir",
                &d,
            ],
            &roots,
        );
        let out = run_sub("stat", &args);
        let line = ok_stdout(&out);
        let rep: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
        let dev = rep["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["disk_device"] == "nvme0n1")
            .unwrap()
            .clone();
        dev["profile"].clone()
    };

    let g = stat(&gentle, &t.path().join("g"));
    assert_eq!(g["knee_at_least"], knee, "{g}");
    assert!(g.get("knee_concurrency").is_none(), "no knee claim: {g}");
    assert!(g.get("max_useful_iops").is_none(), "{g}");
    assert_eq!(g["max_useful_iops_at_least"].as_f64(), Some(max), "{g}");
    assert!(g["load_vs_knee"].is_null(), "{g}");
    assert!(g["headroom_iops"].is_number(), "{g}");
    assert_eq!(g["headroom_at_least"], true, "{g}");
    let notes = g["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "swept gently on 2026-11-25: the knee is above {knee} in flight"
        )),
        "{notes}"
    );
    assert!(notes.contains("lower bounds"), "{notes}");

    let shown = ok_stdout(&profile(&["show", NVME_ID], &t.path().join("g")));
    assert!(
        shown.contains(&format!("knee concurrency > {knee} (not reached)")),
        "{shown}"
    );
    assert!(shown.contains("swept gently on 2026-11-25"), "{shown}");
    let shown = ok_json(&profile(&["show", NVME_ID, "--json"], &t.path().join("g")));
    assert_eq!(shown[0]["knee_at_least"], knee, "{shown}");

    // An ordinary profile: a knee, max useful IOPS, load vs knee; no bound.
    let p = stat(&plain, &t.path().join("p"));
    assert_eq!(p["knee_concurrency"], pknee, "{p}");
    assert_eq!(p["max_useful_iops"].as_f64(), Some(pmax), "{p}");
    assert!(p["load_vs_knee"].is_number(), "{p}");
    for k in [
        "knee_at_least",
        "max_useful_iops_at_least",
        "headroom_at_least",
    ] {
        assert!(p.get(k).is_none(), "{k}: {p}");
    }
    assert!(!p["notes"].to_string().contains("lower bound"), "{p}");
}

/// `iosat analyze RECORDING` names the profile of each recorded device (found by the id its
/// `I` line holds, in the profile directories), and, when a device has none of its own but a
/// model profile exists, says in one line that a recording holds no model facts to match by.
#[test]
fn analyze_names_the_profile_of_a_recorded_device() {
    let t = crate::util::tempdir().unwrap();
    let rec = fixture("stat/profiled.rec");
    let analyze = |dir: &Path| -> Value {
        let out = crate::util::iosat()
            .args(["analyze", rec.to_str().unwrap(), "--json"])
            .env("IOSAT_PROFILE_DIR", dir)
            .env("IOSAT_PROFILE_DIRS", "")
            .output()
            .unwrap();
        let v = ok_json(&out);
        let d = v["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["device"] == "nvme0n1")
            .unwrap()
            .clone();
        d["diagnosis"].clone()
    };
    let mut r: Value =
        serde_json::from_str(&std::fs::read_to_string(result(t.path(), "r.json")).unwrap())
            .unwrap();
    r["host"] = "host-a".into();
    r["started_unix_s"] = 1_795_568_400u64.into(); // 2026-11-25 01:00 UTC
    let own = t.path().join("own");
    std::fs::create_dir(&own).unwrap();
    std::fs::write(own.join("eui.0025385b71b0a1f2.read.json"), r.to_string()).unwrap();
    let d = analyze(&own).to_string();
    assert!(
        d.contains(
            "nvme0n1: its profile is the profile eui.0025385b71b0a1f2, swept on host-a 2026-11-25"
        ),
        "{d}"
    );
    assert!(!d.contains("model facts"), "{d}");

    // Only a model profile: not matched, and said so.
    let models = t.path().join("models");
    std::fs::create_dir(&models).unwrap();
    r["model_profile"] = serde_json::json!({"model": "Samsung SSD 970 EVO Plus 1TB"});
    std::fs::write(models.join("model-x.read.json"), r.to_string()).unwrap();
    let d = analyze(&models).to_string();
    assert!(!d.contains("its profile is"), "{d}");
    assert!(
        d.contains(
            "nvme0n1: no profile eui.0025385b71b0a1f2; the recording holds the device's id only"
        ),
        "{d}"
    );
    assert!(d.contains("model facts"), "{d}");

    // No profiles at all: nothing said.
    let d = analyze(&t.path().join("none")).to_string();
    assert!(!d.contains("profile"), "{d}");
}

/// `stat --replay`: a recording holds device ids, not model facts, so a model profile can't
/// judge a recorded device; the replay says so once per device instead of staying silent, and
/// not when the device has its own profile.
#[test]
fn replay_says_a_model_profile_cannot_match_a_recording() {
    let t = crate::util::tempdir().unwrap();
    let rec = fixture("stat/profiled.rec");
    let mut r: Value =
        serde_json::from_str(&std::fs::read_to_string(result(t.path(), "r.json")).unwrap())
            .unwrap();
    r["model_profile"] = serde_json::json!({"model": "Samsung SSD 970 EVO Plus 1TB"});
    let dir = t.path().join("p");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("model-x.read.json"), r.to_string()).unwrap();
    let replay = || {
        crate::util::iosat()
            .args(["stat", "--replay", rec.to_str().unwrap(), "--json"])
            .args(["--profile-dir", dir.to_str().unwrap()])
            .env("IOSAT_PROFILE_DIRS", "")
            .output()
            .unwrap()
    };
    let out = replay();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let line = "no profile eui.0025385b71b0a1f2; the recording holds the device's id only";
    assert_eq!(err.matches(line).count(), 1, "{err}");
    assert!(
        !ok_stdout(&out).contains("\"judged_against\""),
        "no judgement"
    );

    // With the device's own profile: judged by it, nothing said of models for it.
    r.as_object_mut().unwrap().remove("model_profile");
    std::fs::write(dir.join("eui.0025385b71b0a1f2.read.json"), r.to_string()).unwrap();
    let out = replay();
    let err = stderr(&out);
    assert!(!err.contains("eui.0025385b71b0a1f2"), "{err}");
    assert!(ok_stdout(&out).contains("\"judged_against\""));
}
