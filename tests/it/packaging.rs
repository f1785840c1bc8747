//! Packaging (issue 29, docs/deploy.md): the licence files Cargo.toml names; the systemd unit
//! with its sysusers and tmpfiles files (`systemd-analyze verify` and `security --offline`, and
//! an exporter run with the unit's user, capabilities and memory-lock limit whose system calls
//! are held against the unit's filter); the Debian package built by cargo-deb from this test's
//! binary, installed into a temporary root by dpkg (maintainer scripts included, under
//! $DPKG_ROOT), whose installed binary serves a scrape as its unit would run it, then purged; the
//! Kubernetes DaemonSet validated by kubernetes-validate and its container's command run; the
//! bare binary given file capabilities. (The static build is scripts/static-build.sh's, which
//! scripts/test.sh runs before the tests.) A peer tool that is missing skips its test with a line
//! saying which (scripts/test.sh installs them).
//! Nothing is installed on this machine's own system: every root is a temporary directory.

use crate::util::*;
use std::collections::BTreeSet;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

const UNIT: &str = "packaging/systemd/iosat-exporter.service";

/// Every `Key=value` of a unit file, in order (a key may repeat).
fn unit_settings(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The words of every setting `key` (repeated settings add up).
fn unit_words(text: &str, key: &str) -> Vec<String> {
    unit_settings(text)
        .into_iter()
        .filter(|(k, _)| k == key)
        .flat_map(|(_, v)| v.split_whitespace().map(String::from).collect::<Vec<_>>())
        .collect()
}

fn unit_value(text: &str, key: &str) -> String {
    let v: Vec<String> = unit_settings(text)
        .into_iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v)
        .collect();
    assert_eq!(v.len(), 1, "one {key}= in the unit: {v:?}");
    v[0].clone()
}

/// The unit's capabilities as setpriv names them (CAP_BPF → bpf).
fn unit_caps(unit: &str) -> Vec<String> {
    unit_words(unit, "AmbientCapabilities")
        .iter()
        .map(|c| c.trim_start_matches("CAP_").to_ascii_lowercase())
        .collect()
}

#[track_caller]
fn skip_unless(tool: &str, flag: &str, test: &str, how: &str) -> bool {
    if have(tool, flag) {
        return true;
    }
    crate::util::skip(&format!("{test}: {tool} not installed; {how}"));
    false
}

#[test]
fn the_licence_files_are_those_cargo_toml_names() {
    let toml = read("Cargo.toml");
    let license = toml
        .lines()
        .find_map(|l| l.strip_prefix("license = "))
        .expect("a license field")
        .trim_matches('"');
    let file_of = |id: &str| match id {
        "MIT" => "LICENSE-MIT",
        "Apache-2.0" => "LICENSE-APACHE",
        other => panic!("no licence file known for {other}"),
    };
    let named: BTreeSet<&str> = license.split(" OR ").map(file_of).collect();
    let present: BTreeSet<String> = std::fs::read_dir(repo(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("LICENSE"))
        .collect();
    let named_owned: BTreeSet<String> = named.iter().map(|s| s.to_string()).collect();
    assert_eq!(present, named_owned, "license = {license:?}");
    let mit = read("LICENSE-MIT");
    assert!(mit.starts_with("MIT License"), "{mit}");
    assert!(mit.contains("Permission is hereby granted, free of charge"));
    assert!(mit.contains("Copyright (c) 2026 the iosat developers"));
    let apache = read("LICENSE-APACHE");
    assert!(apache.contains("Apache License\n                           Version 2.0, January 2004"));
    assert!(apache.contains("END OF TERMS AND CONDITIONS"));
    assert!(apache.contains("Copyright 2026 the iosat developers"));
}

/// The unit, sysusers and tmpfiles files agree with each other and with the exporter: its own
/// user, the capabilities BPF needs and no other, a read-only system with the state directory
/// writable and the profiles in it not, the documented port.
#[test]
fn the_unit_runs_as_its_own_user_with_the_bpf_capabilities_only() {
    let unit = read(UNIT);
    let sysusers = read("packaging/sysusers.d/iosat.conf");
    let tmpfiles = read("packaging/tmpfiles.d/iosat.conf");
    let user = unit_value(&unit, "User");
    assert_eq!(user, "iosat");
    assert_eq!(unit_value(&unit, "Group"), "iosat");
    let u: Vec<&str> = sysusers
        .lines()
        .filter(|l| l.starts_with("u "))
        .flat_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(u, [user.as_str()], "sysusers.d makes the unit's user");
    assert!(sysusers.contains("/usr/sbin/nologin"));
    for key in ["CapabilityBoundingSet", "AmbientCapabilities"] {
        let caps: BTreeSet<String> = unit_words(&unit, key).into_iter().collect();
        assert_eq!(
            caps,
            BTreeSet::from(["CAP_BPF".to_string(), "CAP_PERFMON".to_string()]),
            "{key}"
        );
    }
    for (key, want) in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateDevices", "yes"),
        ("PrivateTmp", "yes"),
        ("ReadOnlyPaths", "/var/lib/iosat/profiles"),
        ("SuccessExitStatus", "130"),
    ] {
        assert_eq!(unit_value(&unit, key), want, "{key}");
    }
    assert_eq!(
        unit_words(&unit, "StateDirectory"),
        ["iosat", "iosat/profiles"]
    );
    let exec: Vec<String> = unit_words(&unit, "ExecStart");
    let arg = |flag: &str| {
        let i = exec.iter().position(|a| a == flag).unwrap_or_else(|| {
            panic!("{flag} in ExecStart: {exec:?}");
        });
        exec[i + 1].clone()
    };
    assert_eq!(exec[0], "/usr/bin/iosat");
    assert_eq!(exec[1], "exporter");
    // The documented port: the exporter's own default, on every interface.
    let help = ok_stdout(&run(&["exporter", "--help"]));
    assert!(help.contains("[default: 127.0.0.1:9019]"), "{help}");
    assert_eq!(arg("--web.listen-address"), ":9019");
    assert_eq!(arg("--state-dir"), "/var/lib/iosat");
    assert_eq!(arg("--profile-dir"), "/var/lib/iosat/profiles");
    for dir in ["/var/lib/iosat ", "/var/lib/iosat/profiles "] {
        let line = tmpfiles
            .lines()
            .find(|l| l.starts_with(&format!("d {dir}")))
            .unwrap_or_else(|| panic!("tmpfiles makes {dir}: {tmpfiles}"));
        assert!(line.contains(" iosat iosat "), "{line}");
    }
}

#[test]
fn the_unit_passes_systemd_analyze_verify_and_security() {
    let test = "the_unit_passes_systemd_analyze_verify_and_security";
    if !skip_unless(
        "systemd-analyze",
        "--version",
        test,
        "Debian package systemd",
    ) {
        return;
    }
    // verify checks that ExecStart's program exists: point it at the binary under test.
    let dir = crate::util::tempdir().unwrap();
    let unit = read(UNIT).replace(
        "ExecStart=/usr/bin/iosat ",
        &format!("ExecStart={} ", env!("CARGO_BIN_EXE_iosat")),
    );
    let path = dir.path().join("iosat-exporter.service");
    std::fs::write(&path, &unit).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "systemd-analyze verify: {} {}",
        stdout(&out),
        stderr(&out)
    );
    // The check catches a wrong setting (so its silence above means something).
    let bad = dir.path().join("bad.service");
    std::fs::write(
        &bad,
        unit.replace("ProtectSystem=strict", "ProtectSystem=strikt"),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(stderr(&out).contains("strikt"), "{}", stderr(&out));

    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(&path)
        .output()
        .unwrap();
    let text = stdout(&out);
    let exposure: f64 = text
        .lines()
        .find_map(|l| l.split("Overall exposure level for ").nth(1))
        .and_then(|l| l.split(": ").nth(1))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in {text} {}", stderr(&out)));
    // 0 is a unit that can do nothing, 10 one that can do anything; the BPF capabilities and
    // the network alone keep it above 1.
    assert!(exposure <= 2.0, "exposure {exposure}:\n{text}");
    if Path::new("/run/systemd/system").exists() {
        eprintln!("{test}: systemd runs here, but the unit is verified, not started: starting it would install it on this machine");
    } else {
        eprintln!("{test}: verified only: systemd is not PID 1 here");
    }
}

/// A running exporter: its address (from the line it prints when listening), stopped with
/// SIGTERM on drop.
struct Running {
    child: std::process::Child,
    addr: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Running {
    /// `cmd` (an exporter listening on 127.0.0.1:0) started; its stderr kept.
    fn start(mut cmd: Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the exporter");
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let addr = loop {
            let mut line = String::new();
            if err.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the exporter ended before listening: {:?}",
                    log.lock().unwrap()
                );
            }
            log.lock().unwrap().push(line.clone());
            if let Some(a) = line.split("listening on http://").nth(1) {
                break a.trim().trim_end_matches("/metrics").to_string();
            }
        };
        let keep = log.clone();
        std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                keep.lock().unwrap().push(line);
            }
        });
        Running { child, addr, log }
    }

    /// GET /metrics with curl: (content type, body).
    fn scrape(&self) -> (String, String) {
        let out = Command::new("curl")
            .args([
                "-sS",
                "--fail",
                "--max-time",
                "20",
                "-o",
                "-",
                "-w",
                "\n%{content_type}",
            ])
            .arg(format!("http://{}/metrics", self.addr))
            .output()
            .expect("curl");
        assert!(out.status.success(), "curl: {}", stderr(&out));
        let text = stdout(&out);
        let (body, ctype) = text.rsplit_once('\n').unwrap();
        (ctype.to_string(), body.to_string())
    }

    /// SIGTERM to the exporter (under strace, the tracer's child), then the exit code
    /// (strace's is its tracee's; killed after 20 s).
    fn stop(mut self) -> Option<i32> {
        let mut pid = self.child.id();
        while let Some(c) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|p| p.parse().ok()))
        {
            pid = c;
        }
        // SAFETY: kill(2) on our child or its descendant, still running (not reaped).
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                panic!("the exporter did not stop on SIGTERM: {:?}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The exporter's arguments of a deployment file, made to run here: listening on a loopback
/// port the kernel picks, paths under `root` instead of /var/lib/iosat.
fn args_here(args: &[String], root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, value) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        if flag == "--web.listen-address" {
            if value.is_none() {
                it.next();
            }
            out.extend(["--web.listen-address".into(), "127.0.0.1:0".into()]);
            continue;
        }
        let map = |v: &str| match v.strip_prefix("/var/lib/iosat") {
            Some(rest) => format!("{}/var/lib/iosat{rest}", root.display()),
            None => v.to_string(),
        };
        match value {
            Some(v) => out.push(format!("{flag}={}", map(&v))),
            None => out.push(map(&flag)),
        }
    }
    out
}

/// Can this process run another as a given user with only given capabilities (root, setpriv)?
fn can_drop_privileges(test: &str) -> bool {
    if !is_root() {
        crate::util::skip(&format!(
            "{test}: needs root to run the exporter as another user"
        ));
        return false;
    }
    skip_unless("setpriv", "--version", test, "Debian package util-linux")
}

/// `setpriv` running `bin` as uid:gid with exactly `caps` (setpriv names: bpf, perfmon) in
/// every set, ambient included so they survive the exec as they do under systemd.
fn as_user(uid: u32, gid: u32, caps: &[String], bin: &Path) -> Command {
    as_user_with(uid, gid, caps, caps, bin)
}

/// `setpriv` running `bin` as uid:gid with `ambient` passed through the exec and at most
/// `bounding` (what file capabilities can grant).
fn as_user_with(
    uid: u32,
    gid: u32,
    ambient: &[String],
    bounding: &[String],
    bin: &Path,
) -> Command {
    let set = |caps: &[String]| {
        std::iter::once("-all".to_string())
            .chain(caps.iter().map(|c| format!("+{c}")))
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={gid}"))
        .arg("--clear-groups")
        .arg(format!("--inh-caps={}", set(ambient)))
        .arg(format!("--ambient-caps={}", set(ambient)))
        .arg(format!("--bounding-set={}", set(bounding)))
        .arg(bin)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", "/nonexistent");
    c
}

fn bpf_loadable() -> bool {
    Path::new("/sys/kernel/btf/vmlinux").exists()
}

/// The kernel's (major, minor).
fn kernel_version() -> (u32, u32) {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut n = r
        .split(|c: char| !c.is_ascii_digit())
        .map(|s| s.parse().unwrap_or(0));
    (n.next().unwrap_or(0), n.next().unwrap_or(0))
}

/// Every system call the unit's SystemCallFilter= allows (its groups expanded by
/// `systemd-analyze syscall-filter`).
fn allowed_syscalls(unit: &str) -> BTreeSet<String> {
    fn expand(name: &str, into: &mut BTreeSet<String>) {
        if !name.starts_with('@') {
            into.insert(name.to_string());
            return;
        }
        let out = Command::new("systemd-analyze")
            .args(["syscall-filter", "--no-pager", name])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        for line in stdout(&out).lines().skip(1) {
            let w = line.trim();
            if line.starts_with(' ') && !w.is_empty() && !w.starts_with('#') {
                expand(w.split_whitespace().next().unwrap(), into);
            }
        }
    }
    let words = unit_words(unit, "SystemCallFilter");
    assert!(
        words.iter().all(|w| !w.starts_with('~')),
        "an allow list: {words:?}"
    );
    let mut set = BTreeSet::new();
    for w in &words {
        expand(w, &mut set);
    }
    set
}

/// The system calls and socket families in an `strace -f -o` log, from the exec of `bin` on.
fn traced(log: &str, bin: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let exec = format!("execve(\"{}\"", bin.display());
    let mut started = false;
    let (mut calls, mut families) = (BTreeSet::new(), BTreeSet::new());
    for line in log.lines() {
        let rest = line
            .split_once(' ')
            .map(|(_, r)| r.trim_start())
            .unwrap_or("");
        if !started {
            started = rest.starts_with(&exec) && rest.trim_end().ends_with("= 0");
            continue;
        }
        let Some((name, args)) = rest.split_once('(') else {
            continue;
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            continue;
        }
        if name == "socket" {
            families.insert(args.split(',').next().unwrap_or("").to_string());
        }
        calls.insert(name.to_string());
    }
    assert!(started, "no execve of {} in the trace", bin.display());
    (calls, families)
}

/// What the unit grants is what the exporter needs: run as an unprivileged user with only the
/// unit's capabilities (and, from 5.11 where BPF memory is charged to the memory cgroup, no
/// locked memory at all, so neither LimitMEMLOCK nor CAP_SYS_RESOURCE matters), it loads the
/// block-latency program and serves the histograms; traced, every system call it makes is in
/// the unit's SystemCallFilter and every socket in RestrictAddressFamilies.
#[test]
fn the_units_capabilities_and_filters_are_enough_for_the_latency_histograms() {
    let test = "the_units_capabilities_and_filters_are_enough_for_the_latency_histograms";
    if !can_drop_privileges(test)
        || !skip_unless("strace", "-V", test, "Debian package strace")
        || !skip_unless(
            "systemd-analyze",
            "--version",
            test,
            "Debian package systemd",
        )
        || !skip_unless("curl", "--version", test, "Debian package curl")
    {
        return;
    }
    if !bpf_loadable() {
        crate::util::skip_lacking(&format!(
            "{test}: kernel without BTF: no block-latency program to load"
        ));
        return;
    }
    let unit = read(UNIT);
    let dir = crate::util::tempdir().unwrap();
    // A copy the unprivileged user can execute wherever the build tree is.
    let bin = dir.path().join("iosat");
    std::fs::copy(env!("CARGO_BIN_EXE_iosat"), &bin).unwrap();
    let state = dir.path().join("var/lib/iosat");
    std::fs::create_dir_all(state.join("profiles")).unwrap();
    let (uid, gid) = (61_019, 61_019);
    std::os::unix::fs::chown(&state, Some(uid), Some(gid)).unwrap();
    for p in [
        dir.path(),
        &dir.path().join("var"),
        &dir.path().join("var/lib"),
    ] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let memlock = if kernel_version() >= (5, 11) {
        "0:0".to_string()
    } else {
        assert_eq!(unit_value(&unit, "LimitMEMLOCK"), "infinity");
        "unlimited:unlimited".to_string()
    };
    let trace = dir.path().join("strace.log");
    let exec = unit_words(&unit, "ExecStart");
    let args = args_here(&exec[1..], dir.path());
    let args: Vec<&String> = args.iter().filter(|a| !a.starts_with('$')).collect();
    let inner = as_user(uid, gid, &unit_caps(&unit), &bin);
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-o"])
        .arg(&trace)
        .args(["prlimit", &format!("--memlock={memlock}")])
        .arg(inner.get_program())
        .args(inner.get_args())
        .args(&args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .env("HOME", "/nonexistent");
    let e = Running::start(cmd);
    // Under strace -f a debug build's first collection can outlast the collector's 5 s
    // deadline on a busy machine (the scrape then says so, with no family of it): scrape
    // again, a bounded number of times, until the collector answered. What is tested is what
    // the unit allows, not how fast.
    let answered = "iosat_scrape_collector_success{collector=\"diskstats\"} 1";
    let (mut ctype, mut body) = e.scrape();
    for _ in 0..5 {
        if body.contains(answered) {
            break;
        }
        (ctype, body) = e.scrape();
    }
    assert_eq!(ctype, "text/plain; version=0.0.4; charset=utf-8");
    let (_, body2) = e.scrape();
    let log = e.log();
    let code = e.stop();
    assert_eq!(code, Some(130), "{log:?}");
    assert!(
        body.contains("# TYPE iosat_block_latency_dropped_completions_total counter"),
        "the block-latency program loaded with the unit's capabilities only: {log:?}\n{body}"
    );
    assert!(
        body2.contains("iosat_disk_requests_completed_total{"),
        "{body2}"
    );

    let (calls, families) = traced(&std::fs::read_to_string(&trace).unwrap(), &bin);
    assert!(calls.contains("bpf"), "{calls:?}");
    let allowed = allowed_syscalls(&unit);
    let refused: Vec<&String> = calls.iter().filter(|c| !allowed.contains(*c)).collect();
    assert!(refused.is_empty(), "not in SystemCallFilter: {refused:?}");
    let families_allowed: BTreeSet<String> = unit_words(&unit, "RestrictAddressFamilies")
        .into_iter()
        .collect();
    assert!(
        families.is_subset(&families_allowed),
        "sockets {families:?}, RestrictAddressFamilies {families_allowed:?}"
    );
}

/// `name:x:uid:gid:...` of a passwd file.
fn passwd_ids(passwd: &str, name: &str) -> Option<(u32, u32, String)> {
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&name) && f.len() >= 7).then(|| {
            (
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
                f[6].to_string(),
            )
        })
    })
}

/// The Debian package, built by cargo-deb from this test's binary (no second build), installed
/// by dpkg into a temporary root with its maintainer scripts (the user, the directories, the
/// unit enabled); the installed binary, run as the installed unit runs it, serves a scrape and
/// stops with the exit code the unit counts as success; a purge takes it all away again.
#[test]
fn the_debian_package_installs_into_a_temporary_root_and_serves_a_scrape() {
    let test = "the_debian_package_installs_into_a_temporary_root_and_serves_a_scrape";
    if !is_root() {
        crate::util::skip(&format!("{test}: dpkg --root needs root"));
        return;
    }
    let deb_ok = Command::new("cargo")
        .args(["deb", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !deb_ok {
        crate::util::skip(&format!(
            "{test}: cargo-deb not installed: cargo install cargo-deb --locked"
        ));
        return;
    }
    if !skip_unless("dpkg", "--version", test, "a Debian system")
        || !skip_unless(
            "systemd-sysusers",
            "--version",
            test,
            "Debian package systemd",
        )
        || !skip_unless("curl", "--version", test, "Debian package curl")
    {
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    {
        // The package's user must reach the installed binary and state inside it.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let target = dir.path().join("target");
    std::fs::create_dir_all(target.join("release")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_iosat"), target.join("release/iosat")).unwrap();
    let out = Command::new("cargo")
        .args(["deb", "--no-build", "--offline", "--fast", "-o"])
        .arg(dir.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo deb: {}", stderr(&out));
    let version = env!("CARGO_PKG_VERSION");
    let deb = dir.path().join(format!("iosat_{version}-1_amd64.deb"));
    assert!(deb.exists(), "{}", stdout(&out));

    let field = |f: &str| {
        let o = Command::new("dpkg-deb")
            .args(["-f"])
            .arg(&deb)
            .arg(f)
            .output()
            .unwrap();
        stdout(&o).trim().to_string()
    };
    assert_eq!(field("Package"), "iosat");
    assert_eq!(field("Version"), format!("{version}-1"));
    assert_eq!(field("Architecture"), "amd64");
    assert!(field("Depends").contains("libc6"), "{}", field("Depends"));
    let list = stdout(
        &Command::new("dpkg-deb")
            .arg("-c")
            .arg(&deb)
            .output()
            .unwrap(),
    );
    for f in [
        "./usr/bin/iosat",
        "./usr/lib/systemd/system/iosat-exporter.service",
        "./usr/lib/sysusers.d/iosat.conf",
        "./usr/lib/tmpfiles.d/iosat.conf",
        "./etc/default/iosat-exporter",
        "./usr/share/doc/iosat/examples/prometheus/recording.yml",
        "./usr/share/doc/iosat/examples/prometheus/alerts.yml",
        "./usr/share/doc/iosat/examples/grafana/grafana-dashboard.json",
        "./usr/share/doc/iosat/examples/kubernetes/iosat-exporter.yaml",
        "./usr/share/doc/iosat/LICENSE-MIT",
        "./usr/share/doc/iosat/LICENSE-APACHE",
        "./usr/share/doc/iosat/copyright",
        "./usr/share/doc/iosat/deploy.md",
        "./usr/share/doc/iosat/CHANGELOG.md",
    ] {
        assert!(
            list.lines().any(|l| l.ends_with(f)),
            "{f} in the package:\n{list}"
        );
    }

    // A fresh dpkg database in the temporary root; the maintainer scripts run here with
    // DPKG_ROOT set (--force-script-chrootless: the root has no shell), and libc6, which the
    // host has, is not in that database (--force-depends).
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("var/lib/dpkg/info")).unwrap();
    std::fs::create_dir_all(root.join("var/lib/dpkg/updates")).unwrap();
    std::fs::create_dir_all(root.join("var/log")).unwrap();
    std::fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    std::fs::write(root.join("var/lib/dpkg/available"), "").unwrap();
    let dpkg = |args: &[&str]| {
        let o = Command::new("dpkg")
            .arg(format!("--root={}", root.display()))
            // Its log too (dpkg writes the host's /var/log/dpkg.log otherwise).
            .arg(format!("--log={}", root.join("var/log/dpkg.log").display()))
            .args(["--force-script-chrootless", "--force-depends"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "dpkg {args:?}: {} {}",
            stdout(&o),
            stderr(&o)
        );
    };
    dpkg(&["-i", deb.to_str().unwrap()]);
    let installed = |p: &str| root.join(p.trim_start_matches('/'));
    let dpkg_log = std::fs::read_to_string(installed("/var/log/dpkg.log")).unwrap();
    assert!(dpkg_log.contains("install iosat:amd64"), "{dpkg_log}");
    assert_eq!(
        std::fs::read_to_string(installed("/usr/lib/systemd/system/iosat-exporter.service"))
            .unwrap(),
        read(UNIT)
    );
    let passwd = std::fs::read_to_string(installed("/etc/passwd")).unwrap();
    let (uid, gid, shell) = passwd_ids(&passwd, "iosat").expect("postinst made the user");
    assert_eq!(shell, "/usr/sbin/nologin");
    assert!(uid > 0 && uid < 1000, "a system user: {uid}");
    use std::os::unix::fs::MetadataExt;
    for d in ["/var/lib/iosat", "/var/lib/iosat/profiles"] {
        let m = std::fs::metadata(installed(d)).unwrap_or_else(|e| panic!("{d}: {e}"));
        assert!(m.is_dir() && m.uid() == uid && m.gid() == gid, "{d}");
    }
    assert!(
        installed("/etc/systemd/system/multi-user.target.wants/iosat-exporter.service")
            .symlink_metadata()
            .is_ok(),
        "the unit is enabled"
    );

    // The installed binary as the installed unit runs it (its arguments, user, capabilities).
    let unit = std::fs::read_to_string(installed("/usr/lib/systemd/system/iosat-exporter.service"))
        .unwrap();
    let exec = unit_words(&unit, "ExecStart");
    let bin = installed(&exec[0]);
    let args: Vec<String> = args_here(&exec[1..], &root)
        .into_iter()
        .filter(|a| !a.starts_with('$'))
        .collect();
    let cmd = if can_drop_privileges(test) {
        let mut c = as_user(uid, gid, &unit_caps(&unit), &bin);
        c.args(&args);
        c
    } else {
        let mut c = Command::new(&bin);
        c.args(&args);
        c
    };
    let e = Running::start(cmd);
    let (ctype, body) = e.scrape();
    assert_eq!(ctype, "text/plain; version=0.0.4; charset=utf-8");
    assert!(
        body.contains("# TYPE iosat_disk_requests_completed_total counter"),
        "{body}"
    );
    assert!(
        body.contains("iosat_scrape_collector_success{collector=\"diskstats\"} 1"),
        "{body}"
    );
    let log = e.log();
    assert_eq!(e.stop(), Some(130), "SuccessExitStatus=130: {log:?}");

    dpkg(&["--purge", "iosat"]);
    for gone in [
        "/usr/bin/iosat",
        "/var/lib/iosat",
        "/etc/systemd/system/multi-user.target.wants/iosat-exporter.service",
    ] {
        assert!(
            installed(gone).symlink_metadata().is_err(),
            "{gone} after purge"
        );
    }
}

/// A mapping's value by key (yaml-rust2).
fn get<'a>(y: &'a yaml_rust2::Yaml, key: &str) -> &'a yaml_rust2::Yaml {
    &y[key]
}

fn strings(y: &yaml_rust2::Yaml) -> Vec<String> {
    y.as_vec()
        .map(|v| {
            v.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_daemonset_validates_and_its_container_serves_a_scrape() {
    let test = "the_daemonset_validates_and_its_container_serves_a_scrape";
    // Through python3 -m: found wherever pip put it, whatever the scripts directory.
    let kv = || {
        let mut c = Command::new("python3");
        c.args(["-m", "kubernetes_validate"]);
        c
    };
    if !kv()
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        crate::util::skip(&format!(
            "{test}: kubernetes-validate not installed: pip install kubernetes-validate"
        ));
        return;
    }
    let path = repo("packaging/kubernetes/iosat-exporter.yaml");
    let validate = |p: &Path| kv().args(["--strict", "--quiet"]).arg(p).output().unwrap();
    let out = validate(&path);
    assert!(out.status.success(), "{} {}", stdout(&out), stderr(&out));
    // The validator does check the fields that matter here.
    let dir = crate::util::tempdir().unwrap();
    let text = read("packaging/kubernetes/iosat-exporter.yaml");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        text.replace("readOnlyRootFilesystem:", "readOnlyRootFS:"),
    )
    .unwrap();
    let out = validate(&bad);
    assert!(!out.status.success(), "a misspelt field is refused");
    assert!(stdout(&out).contains("readOnlyRootFS"), "{}", stdout(&out));

    let docs = yaml_rust2::YamlLoader::load_from_str(&text).unwrap();
    let kind = |k: &str| {
        docs.iter()
            .find(|d| d["kind"].as_str() == Some(k))
            .unwrap_or_else(|| panic!("a {k}"))
    };
    let ds = kind("DaemonSet");
    let pod = &ds["spec"]["template"]["spec"];
    for host in ["hostPID", "hostNetwork", "hostIPC"] {
        assert!(get(pod, host).is_badvalue(), "no {host}");
    }
    let c = &pod["containers"][0];
    let sc = &c["securityContext"];
    assert_eq!(strings(&sc["capabilities"]["add"]), ["BPF", "PERFMON"]);
    assert_eq!(strings(&sc["capabilities"]["drop"]), ["ALL"]);
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(sc["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(sc["privileged"].as_bool(), Some(false));
    assert!(c["resources"]["limits"]["memory"].as_str().is_some());
    let port = c["ports"][0]["containerPort"].as_i64().unwrap();
    assert_eq!(port, 9019);
    let annotations = &ds["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"].as_str(), Some("true"));
    assert_eq!(annotations["prometheus.io/port"].as_str(), Some("9019"));
    assert_eq!(
        kind("Service")["spec"]["ports"][0]["port"].as_i64(),
        Some(9019)
    );
    let mounts: Vec<(String, bool)> = c["volumeMounts"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["mountPath"].as_str().unwrap().to_string(),
                m["readOnly"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(
        mounts,
        [
            ("/var/lib/iosat".to_string(), false),
            ("/var/lib/iosat/profiles".to_string(), true)
        ]
    );

    // The container's command, run here as its securityContext runs it where that can be done
    // (user 0 with BPF and PERFMON only), on this machine's /proc and /sys as in a pod.
    let command = strings(&c["command"]);
    assert_eq!(command, ["/usr/bin/iosat"]);
    let args = strings(&c["args"]);
    assert!(
        args.iter().any(|a| a == "--web.listen-address=:9019"),
        "{args:?}"
    );
    assert!(
        !args
            .iter()
            .any(|a| a.starts_with("--proc-root") || a.starts_with("--sys-root")),
        "the real /proc and /sys: --proc-root would turn the BPF source off"
    );
    std::fs::create_dir_all(dir.path().join("var/lib/iosat/profiles")).unwrap();
    let args = args_here(&args, dir.path());
    let bin = Path::new(env!("CARGO_BIN_EXE_iosat"));
    let dropped = can_drop_privileges(test);
    let mut cmd = if dropped {
        let caps: Vec<String> = strings(&sc["capabilities"]["add"])
            .iter()
            .map(|c| c.to_ascii_lowercase())
            .collect();
        as_user(0, 0, &caps, bin)
    } else {
        Command::new(bin)
    };
    cmd.args(&args);
    if !skip_unless("curl", "--version", test, "Debian package curl") {
        return;
    }
    let e = Running::start(cmd);
    let (_, body) = e.scrape();
    let log = e.log();
    assert_eq!(e.stop(), Some(130), "{log:?}");
    assert!(
        body.contains("iosat_disk_requests_completed_total{"),
        "{body}"
    );
    if dropped && bpf_loadable() {
        assert!(
            body.contains("# TYPE iosat_block_latency_dropped_completions_total counter"),
            "BPF and PERFMON are enough in the container: {log:?}"
        );
    }
}

/// The bare binary, as docs/deploy.md runs it without a unit: file capabilities
/// (`setcap cap_bpf,cap_perfmon=ep`) give an unprivileged user the latency histograms.
#[test]
fn the_bare_binary_with_file_capabilities_serves_the_histograms_to_a_user() {
    let test = "the_bare_binary_with_file_capabilities_serves_the_histograms_to_a_user";
    if !can_drop_privileges(test)
        || !skip_unless("setcap", "-v", test, "Debian package libcap2-bin")
        || !skip_unless("curl", "--version", test, "Debian package curl")
    {
        return;
    }
    if !bpf_loadable() {
        crate::util::skip_lacking(&format!("{test}: kernel without BTF"));
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let bin = dir.path().join("iosat");
    std::fs::copy(env!("CARGO_BIN_EXE_iosat"), &bin).unwrap();
    let out = Command::new("setcap")
        .arg("cap_bpf,cap_perfmon=ep")
        .arg(&bin)
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!(
            "{test}: skipped (setcap refused here: {})",
            stderr(&out).trim()
        );
        return;
    }
    let caps = ["bpf".to_string(), "perfmon".to_string()];
    let mut cmd = as_user_with(61_020, 61_020, &[], &caps, &bin);
    cmd.args([
        "exporter",
        "--web.listen-address",
        "127.0.0.1:0",
        "--no-learn",
        "--no-profile",
    ]);
    let e = Running::start(cmd);
    let (_, body) = e.scrape();
    let log = e.log();
    assert_eq!(e.stop(), Some(130), "{log:?}");
    assert!(
        body.contains("# TYPE iosat_block_latency_dropped_completions_total counter"),
        "file capabilities are enough: {log:?}"
    );
}
