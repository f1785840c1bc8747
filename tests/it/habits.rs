//! iostat and fio habits (issue 16): the flags their users type are accepted with iostat's or
//! fio's meaning, or answered with one line naming iosat's way — never with clap's "use
//! '-- -x'" tip. Also stat's positional INTERVAL [COUNT], -z, -o JSON, the avg-cpu line, -o
//! FILE with its refusal and --force, and the generated completions and man page.

use crate::util::{fixture, json_lines, run, stderr, stdout};
use std::process::Output;

/// One short fsync case (fdatasync, 4 KiB, overwrite, no group commit) in `dir`, as JSON;
/// `time` is the duration flag (`--duration` or fio's `--runtime`), `size` the size flag.
fn short_fsync(dir: &std::path::Path, time: &str, size: &str, extra: &[&str]) -> Output {
    let mut a = vec![
        "fsync",
        dir.to_str().unwrap(),
        time,
        "20ms",
        size,
        "4k",
        "--methods=fdatasync",
        "--mode=overwrite",
        "--committers=none",
        "--json",
    ];
    a.extend_from_slice(extra);
    run(&a)
}

fn cpu_rec() -> String {
    fixture("stat/cpu.rec").to_str().unwrap().to_string()
}

/// What a user sees of a refused flag: the exit code and stderr.
fn answer(args: &[&str]) -> String {
    let o = run(args);
    format!("exit {:?}\n{}", o.status.code(), stderr(&o))
}

const SUBCOMMANDS: [&str; 8] = [
    "stat", "info", "sweep", "fsync", "analyze", "report", "top", "exporter",
];

/// Every habit flag, with a value where it takes one.
const HABITS: [&[&str]; 18] = [
    &["-x"],
    &["-d"],
    &["-p"],
    &["-p", "ALL"],
    &["-y"],
    &["-t"],
    &["-z"],
    &["-k"],
    &["-m"],
    &["-N"],
    &["-o", "JSON"],
    &["--rw", "randread"],
    &["--runtime", "1"],
    &["--iodepth", "32"],
    &["--numjobs", "4"],
    &["--size", "1g"],
    &["--bs", "4k"],
    &["-xz"],
];

#[test]
fn no_habit_flag_gets_clap_s_dash_dash_tip_on_any_subcommand() {
    for sub in SUBCOMMANDS {
        for flag in HABITS {
            // `--help` after the flag: a flag clap accepts prints the help (exit 0), one it
            // does not is an error; either way never the "-- -x" tip.
            let mut args = vec![sub];
            args.extend_from_slice(flag);
            args.push("--help");
            let o = run(&args);
            let err = stderr(&o);
            assert!(
                !err.contains("as a value") && !err.contains("'-- -"),
                "iosat {}: {err}",
                args.join(" ")
            );
            assert!(
                o.status.code() == Some(0) || o.status.code() == Some(2),
                "iosat {}: {:?} {err}",
                args.join(" "),
                o.status.code()
            );
        }
    }
    // An unknown flag in general: no tip either.
    let err = stderr(&run(&["info", "-x"]));
    assert!(err.contains("unexpected argument '-x'"), "{err}");
    assert!(!err.contains("-- -x"), "{err}");
}

#[test]
fn iostat_flags_on_stat_are_accepted_or_answered() {
    let rec = cpu_rec();
    // Accepted no-ops (and -y, -t, -k, -N): the same bytes as without them.
    let plain = stdout(&run(&["stat", "--replay", &rec]));
    for f in ["-x", "-t", "-k", "-N", "-y", "-xtk"] {
        let o = run(&["stat", f, "--replay", &rec]);
        assert_eq!(o.status.code(), Some(0), "{f}: {}", stderr(&o));
        assert_eq!(stdout(&o), plain, "{f}");
    }
    let mut hints = String::new();
    for args in [
        &["stat", "-m"][..],
        &["stat", "-s"],
        &["stat", "--human"],
        &["stat", "-g", "all"],
        &["stat", "-j", "ID"],
        &["stat", "-y", "--since-boot"],
    ] {
        hints.push_str(&format!("$ iosat {}\n{}\n", args.join(" "), answer(args)));
    }
    insta::assert_snapshot!("iostat_hints", hints);
}

#[test]
fn fio_flags_on_sweep_and_fsync_are_mapped_or_answered() {
    let mut hints = String::new();
    for args in [
        &["sweep", "--iodepth", "32"][..],
        &["sweep", "--numjobs", "4"],
        &["sweep", "--ioengine", "libaio"],
        &["sweep", "--filename", "/dev/sdb"],
        &["sweep", "--output-format", "json"],
        &["fsync", "--iodepth", "8"],
        &["fsync", "--numjobs", "4"],
        &["fsync", "--rw", "randwrite"],
        &["fsync", "--size", "1g"],
        &["fsync", "--fsync", "1"],
        &["fsync", "--direct", "1"],
    ] {
        hints.push_str(&format!("$ iosat {}\n{}\n", args.join(" "), answer(args)));
    }
    insta::assert_snapshot!("fio_hints", hints);
    // The ones that map: --rw is --pattern, --runtime is --duration (sweep's sim engine, one
    // level, so that the run is short and needs no disk).
    let dir = crate::util::tempdir().unwrap();
    let o = run(&[
        "sweep",
        dir.path().to_str().unwrap(),
        "--engine",
        "sim:units=4,service=1ms",
        "--rw",
        "randwrite",
        "--runtime",
        "50ms",
        "--ramp",
        "0",
        "--levels",
        "1,2",
        "--size",
        "1m",
        "--bs",
        "4k",
        "--json",
        "--no-progress",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = v.to_string();
    assert!(text.contains("randwrite"), "{text}");
    // fsync: --runtime and --bs (write size) map to --duration and --sizes.
    let o = short_fsync(dir.path(), "--runtime", "--bs", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "{v}");
    assert_eq!(cases[0]["size"], 4096);
}

#[test]
fn positional_interval_and_count() {
    // iostat's `iosat stat 1 5`: interval 1 s, 5 reports; the devices before them.
    let rec = cpu_rec();
    let o = run(&["stat", "--replay", &rec, "sda", "1"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the interval '1'") && err.contains("--replay"),
        "{err}"
    );
    // Count alone after the devices is not possible (one number is the interval), so take
    // a live run on a fixture proc tree: 2 reports 0.05 s apart.
    let root = fixture("sysroot1/proc");
    let o = run(&[
        "stat",
        "--proc-root",
        root.to_str().unwrap(),
        "--json",
        "0.05",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = json_lines(&stdout(&o));
    assert_eq!(lines.len(), 2);
    let iv = lines[1]["interval_s"].as_f64().unwrap();
    assert!((0.04..1.0).contains(&iv), "{iv}");
    // `-p` takes an optional value: `-p 0.05 2` is -p (ALL) then interval and count.
    let o = run(&[
        "stat",
        "--proc-root",
        root.to_str().unwrap(),
        "--json",
        "-p",
        "0.05",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_lines(&stdout(&o)).len(), 2);
    // `iosat stat sda 2 3` names sda as a DEVICE (the fixture has none: the DEVICE error,
    // not a number error).
    let e = stderr(&run(&[
        "stat",
        "--proc-root",
        root.to_str().unwrap(),
        "nosuchdisk",
        "2",
        "3",
    ]));
    assert!(e.contains("the device 'nosuchdisk'"), "{e}");
    // Given twice.
    let e = answer(&["stat", "-i", "1", "2"]);
    assert!(e.contains("given twice"), "{e}");
    let e = answer(&["stat", "1", "0"]);
    assert!(e.contains("the count '0'"), "{e}");
}

#[test]
fn avg_cpu_line_in_text_json_csv_and_off() {
    let rec = cpu_rec();
    let text = stdout(&run(&["stat", "--replay", &rec]));
    insta::assert_snapshot!("avg_cpu_text", text);
    let o = run(&["stat", "--replay", &rec, "-o", "JSON"]);
    let v = &json_lines(&stdout(&o))[0];
    assert_eq!(
        v["avg-cpu"],
        serde_json::json!({"user": 25.0, "nice": 0.0, "system": 12.5, "iowait": 20.0,
            "steal": 2.5, "idle": 40.0})
    );
    // -o JSON is --json: the same bytes.
    assert_eq!(
        stdout(&o),
        stdout(&run(&["stat", "--replay", &rec, "--json"]))
    );
    let csv = stdout(&run(&["stat", "--replay", &rec, "--csv"]));
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = head.iter().position(|h| *h == "cpu_iowait").unwrap();
    assert_eq!(row[at], "20");
    // Off: --no-cpu, and iostat's -d.
    for off in ["--no-cpu", "-d"] {
        let t = stdout(&run(&["stat", "--replay", &rec, off]));
        assert!(!t.contains("avg-cpu"), "{off}: {t}");
        let j = stdout(&run(&["stat", "--replay", &rec, off, "--json"]));
        assert!(!j.contains("avg-cpu"), "{off}: {j}");
    }
}

#[test]
fn omit_idle_devices_with_z() {
    let rec = cpu_rec();
    let all = json_lines(&stdout(&run(&["stat", "--replay", &rec, "--json"])));
    assert_eq!(all[0]["devices"].as_array().unwrap().len(), 2);
    let busy = json_lines(&stdout(&run(&["stat", "-z", "--replay", &rec, "--json"])));
    let devs = busy[0]["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 1);
    assert_eq!(devs[0]["disk_device"], "sda");
    insta::assert_snapshot!(
        "omit_idle_text",
        stdout(&run(&["stat", "-xz", "--replay", &rec, "--no-cpu"]))
    );
}

#[test]
fn output_file_refused_when_it_exists_unless_force() {
    let dir = crate::util::tempdir().unwrap();
    let out = dir.path().join("out.txt");
    let out_s = out.to_str().unwrap();
    let rec = cpu_rec();
    let iostat_log = fixture("import/iostat-x.txt");
    let analyze_in = iostat_log.to_str().unwrap();
    let sysroot = fixture("sysroot1");
    let (proc_root, sys_root) = (
        sysroot.join("proc").to_str().unwrap().to_string(),
        sysroot.join("sys").to_str().unwrap().to_string(),
    );
    let cmds: [Vec<&str>; 3] = [
        vec!["stat", "--replay", &rec, "--json"],
        vec!["analyze", analyze_in, "--json"],
        vec!["info", "--proc-root", &proc_root, "--sys-root", &sys_root],
    ];
    for cmd in &cmds {
        std::fs::write(&out, "the user's file\n").unwrap();
        let mut args = cmd.clone();
        args.extend(["-o", out_s]);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "the user's file\n");
        args.push("--force");
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            stdout(&o),
            "{cmd:?}"
        );
        std::fs::remove_file(&out).unwrap();
        let o = run(&args[..args.len() - 1]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            stdout(&o),
            "{cmd:?}"
        );
    }
    // fsync: refused before it runs (no test files laid out), then written.
    std::fs::write(&out, "x").unwrap();
    let work = crate::util::tempdir().unwrap();
    let fs = |extra: &[&str]| {
        let mut a = vec!["-o", out_s];
        a.extend_from_slice(extra);
        short_fsync(work.path(), "--duration", "--sizes", &a)
    };
    let o = fs(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = fs(&["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), stdout(&o));
    // analyze --html: the page `iosat report` draws, refused when it exists.
    let page = dir.path().join("a.html");
    let fio: Vec<String> = ["fio-qd1.json", "fio-qd4.json", "fio-qd16.json"]
        .iter()
        .map(|f| {
            fixture(&format!("import/{f}"))
                .to_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut args: Vec<&str> = vec!["analyze"];
    args.extend(fio.iter().map(String::as_str));
    args.extend(["--html", page.to_str().unwrap()]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&page).unwrap().contains("<svg"));
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn completions_load_in_bash_and_the_man_page_names_every_subcommand() {
    let o = run(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let dir = crate::util::tempdir().unwrap();
    let script = dir.path().join("iosat.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -e; bash -n '{0}'; source '{0}'; complete -p iosat",
            script.display()
        ))
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
    assert!(stdout(&check).contains("iosat"), "{}", stdout(&check));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = run(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        assert!(stdout(&o).contains("sweep"), "{shell}");
    }
    let o = run(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));

    let man = stdout(&run(&["man"]));
    assert!(man.contains(".TH iosat 1"), "{man}");
    for sub in SUBCOMMANDS.iter().chain(&["completions", "man"]) {
        assert!(
            man.contains(&format!("iosat\\-{sub}")) || man.contains(sub),
            "{sub}"
        );
        let page = run(&["man", sub]);
        assert_eq!(page.status.code(), Some(0), "{sub}");
        assert!(
            stdout(&page).contains(&format!(".TH iosat-{sub} 1")),
            "{sub}"
        );
    }
    assert_eq!(run(&["man", "nosuch"]).status.code(), Some(2));
    // It renders: man(1) formats it without warnings, when man is installed.
    if crate::util::have("man", "--version") {
        let page = dir.path().join("iosat.1");
        std::fs::write(&page, &man).unwrap();
        let r = std::process::Command::new("man")
            .args(["-l", page.to_str().unwrap()])
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", stderr(&r));
        let text = stdout(&r);
        for sub in SUBCOMMANDS {
            assert!(text.contains(sub), "{sub} not in the rendered page");
        }
    } else {
        crate::util::skip("man(1) not installed");
    }
}
