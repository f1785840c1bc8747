//! Issue 12: nothing lost, nothing overwritten, nothing left behind. Output files through
//! symlinks and full filesystems, test files after SIGKILL and leftovers of dead runs, space
//! reserved by concurrent sweeps, output directories checked before the run. Real files,
//! tmpfs mounts and processes the tests make and remove.

use crate::util::{entries, fixture, iosat, is_root, stderr, Tmpfs};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn report(args: &[&str]) -> Output {
    iosat().arg("report").args(args).output().unwrap()
}

/// A pid that belonged to a process that has exited (reaped, so no live process has it unless
/// the kernel reused it at once).
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn sim_json() -> String {
    fixture("report/sim_sweep.json")
        .to_str()
        .unwrap()
        .to_string()
}

/// Case 3: a dangling symlink at the destination is refused without --force (nothing is
/// created where it points); with --force too (issue 28 item 2: only regular files are
/// replaced), for safety and without advising --force; never written through.
#[test]
fn a_dangling_symlink_at_the_output_is_refused_and_never_followed() {
    let d = crate::util::tempdir().unwrap();
    let victim = d.path().join("victim");
    let link = d.path().join("out.md");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let src = sim_json();
    let dst = link.to_str().unwrap();
    let out = report(&[&src, "-o", dst, "--format", "markdown"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("dangling symlink") && err.contains("out.md"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!victim.exists(), "written through the symlink");
    let out = report(&[&src, "-o", dst, "--format", "markdown", "--force"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(!stderr(&out).contains("--force"), "{}", stderr(&out));
    assert!(!victim.exists(), "written through the symlink");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    // Only the link is left: no temporary file.
    assert_eq!(entries(d.path()).len(), 1, "{:?}", entries(d.path()));
}

/// Case 7: -o on a full filesystem fails with exit 1 naming the user's path and leaves no
/// partial temporary file.
#[test]
fn a_failed_output_write_leaves_nothing() {
    if !is_root() {
        crate::util::skip("mounting a tmpfs needs root");
        return;
    }
    let t = Tmpfs::mount("64k");
    std::fs::write(t.path().join("filler"), vec![1u8; 40 << 10]).unwrap();
    let dst = t.path().join("page.html");
    let src = fixture("report/fsync.json");
    let out = report(&[src.to_str().unwrap(), "-o", dst.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("page.html"), "{}", stderr(&out));
    let left: Vec<_> = entries(t.path());
    assert_eq!(left, [t.path().join("filler")], "{left:?}");
}

/// Case 16: -o and --html into a missing or unwritable directory are refused before any work,
/// naming the user's path.
#[test]
fn output_into_a_missing_directory_is_refused_before_the_run() {
    let d = crate::util::tempdir().unwrap();
    let missing = d.path().join("no/such/dir/out.json");
    let m = missing.to_str().unwrap();
    let start = Instant::now();
    let dir = d.path().to_str().unwrap();
    for (cmd, args) in [
        (
            "sweep",
            vec![dir, "--size", "16m", "-o", m, "--levels", "1"],
        ),
        (
            "sweep",
            vec![dir, "--size", "16m", "--html", m, "--levels", "1"],
        ),
        ("fsync", vec![dir, "--html", m]),
    ] {
        let out = iosat().arg(cmd).args(&args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{cmd} {args:?}: {}",
            stderr(&out)
        );
        let err = stderr(&out);
        assert!(err.contains(m) && err.contains("not a directory"), "{err}");
        assert!(!err.contains("iosat-tmp"), "{err}");
    }
    // Refused at start: nothing was laid out or measured.
    assert!(start.elapsed() < Duration::from_secs(20));
    assert!(entries(d.path()).is_empty(), "{:?}", entries(d.path()));
}

/// Case 6: a sweep's test file has no name where the filesystem supports O_TMPFILE, so a
/// SIGKILL leaves nothing; leftovers of dead runs (named files from filesystems without
/// O_TMPFILE, or older versions) are removed at start with a note, a live process's never.
#[test]
fn a_killed_sweep_leaves_nothing_and_old_leftovers_are_cleaned() {
    let d = crate::util::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    let mut child = iosat()
        .args(["sweep", dir, "--size", "32m", "--levels", "1,2,4,8"])
        .args(["--duration", "5", "--no-progress", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(entries(d.path()).is_empty(), "{:?}", entries(d.path()));

    let dead = d.path().join(format!(".iosat-sweep-{}-1.tmp", dead_pid()));
    let live = d
        .path()
        .join(format!(".iosat-sweep-{}-1.tmp", std::process::id()));
    let dead_fsync = d.path().join(format!(".iosat-fsync.{}.3", dead_pid()));
    for p in [&dead, &live, &dead_fsync] {
        std::fs::write(p, b"x").unwrap();
    }
    let out = iosat()
        .args(["sweep", dir, "--size", "16m", "--levels", "1"])
        .args(["--duration", "0.1", "--ramp", "0", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!dead.exists() && live.exists(), "{:?}", entries(d.path()));
    let name = dead.file_name().unwrap().to_str().unwrap();
    assert!(
        err.contains("removed 1 test file") && err.contains(name),
        "{err}"
    );
    // fsync cleans its own kind.
    let out = iosat()
        .args(["fsync", dir, "--duration", "0.05", "--sizes", "4096"])
        .args(["--committers", "1", "--methods", "fsync", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!dead_fsync.exists(), "{:?}", entries(d.path()));
    assert!(stderr(&out).contains(".iosat-fsync."), "{}", stderr(&out));
    assert_eq!(entries(d.path()), [live]);
}

/// Case 8: two sweeps started together on a filesystem with room for one each reserve their
/// file before judging the space: neither dies with ENOSPC (exit 1), at most one runs.
#[test]
fn concurrent_sweeps_reserve_their_space() {
    if !is_root() {
        crate::util::skip("mounting a tmpfs needs root");
        return;
    }
    let t = Tmpfs::mount("300m");
    let dir = t.path().to_str().unwrap();
    let start = || {
        iosat()
            .args([
                "sweep",
                dir,
                "--allow-tmpfs",
                "--size",
                "150m",
                "--levels",
                "1",
            ])
            .args([
                "--duration",
                "0.3",
                "--ramp",
                "0",
                "--json",
                "--direct",
                "false",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start(), start());
    let codes: Vec<(Option<i32>, String)> = [a, b]
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            )
        })
        .collect();
    for (c, err) in &codes {
        assert!(matches!(c, Some(0) | Some(4)), "{c:?}: {err}");
        if *c == Some(4) {
            assert!(err.contains("too little free space"), "{err}");
        }
    }
    assert!(
        codes.iter().filter(|(c, _)| *c == Some(0)).count() <= 1,
        "{codes:?}"
    );
    assert!(entries(t.path()).is_empty(), "{:?}", entries(t.path()));
}

/// Case 5, through the library: a name replaced during the run is left alone.
#[test]
fn a_replaced_file_is_not_removed() {
    let d = crate::util::tempdir().unwrap();
    let (_f, owned) = iosat::sys::fs::OwnedFile::create(d.path(), ".t-", ".tmp", 0, 0o600).unwrap();
    let p = owned.path.clone();
    let other = d.path().join("users-file");
    std::fs::write(&other, b"mine").unwrap();
    std::fs::rename(&other, &p).unwrap();
    drop(owned);
    assert_eq!(std::fs::read(&p).unwrap(), b"mine");
    assert!(Path::new(&p).exists());
}

/// Case 11: warnings on a stderr that cannot be written (/dev/full) never abort a run.
#[test]
fn a_failed_stderr_write_never_panics() {
    let d = crate::util::tempdir().unwrap();
    let dir = d.path().to_str().unwrap();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    // --direct false warns (page cache) on stderr.
    let out = iosat()
        .args([
            "sweep", dir, "--size", "16m", "--levels", "1", "--direct", "false",
        ])
        .args(["--duration", "0.1", "--ramp", "0", "--json"])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"levels\""));
    assert!(entries(d.path()).is_empty());
}

/// Case 4: `stat --record FILE` appends only to an iosat recording of this host: a user's
/// notes, a symlink, another host's recording are refused (exit 2) and left as they were.
#[test]
fn record_appends_only_to_a_recording_of_this_host() {
    let d = crate::util::tempdir().unwrap();
    let stat = |file: &Path| {
        iosat()
            .args(["stat", "-c", "1", "-i", "0.1", "--record"])
            .arg(file)
            .output()
            .unwrap()
    };
    let refused = |file: &Path, needle: &str| {
        let before = std::fs::read(file).ok();
        let out = stat(file);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("--record") && err.contains(needle), "{err}");
        assert_eq!(std::fs::read(file).ok(), before, "changed");
    };
    let notes = d.path().join("notes.txt");
    std::fs::write(&notes, "my notes\n").unwrap();
    refused(&notes, "not an iosat recording");
    // A recording of this host is appended to; its header names the host.
    let rec = d.path().join("r.rec");
    assert!(stat(&rec).status.success());
    assert!(stat(&rec).status.success());
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(text.lines().nth(1).unwrap().starts_with("#host "), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("R ")).count(), 2);
    // Through a symlink: refused, even to a recording.
    let link = d.path().join("link.rec");
    std::os::unix::fs::symlink(&rec, &link).unwrap();
    let out = stat(&link);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("symlink"));
    // Another host's recording.
    let other = d.path().join("other.rec");
    std::fs::write(
        &other,
        "#iosat-record 1\n#host elsewhere-xyz\nR 1 1000000000\n",
    )
    .unwrap();
    refused(&other, "elsewhere-xyz");
}

/// Case 12: one byte that is not UTF-8 in a recording no longer fails the whole file: the line
/// is skipped with a warning naming the file and line, in `stat --replay` and `report` alike.
#[test]
fn a_line_that_is_not_utf8_is_skipped_naming_it() {
    let d = crate::util::tempdir().unwrap();
    let text = std::fs::read(fixture("report/loop.rec")).unwrap();
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    // The 20th line is a diskstats line of the first sample.
    let n = lines
        .iter()
        .enumerate()
        .skip(15)
        .find(|(_, l)| l.first() == Some(&b' '))
        .map(|(i, _)| i)
        .unwrap();
    lines[n].extend_from_slice(b" \xff");
    let rec = d.path().join("bad.rec");
    std::fs::write(&rec, lines.join(&b'\n')).unwrap();
    let want = format!("bad.rec:{}: not UTF-8, line skipped", n + 1);
    for args in [
        vec!["stat", "--replay", rec.to_str().unwrap(), "--no-profile"],
        vec!["report", rec.to_str().unwrap(), "--format", "markdown"],
    ] {
        let out = iosat().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(&want), "{args:?}: {}", stderr(&out));
        assert!(!out.stdout.is_empty());
    }
}

/// Case 18: one clear line on stderr before the run: a read-only device, ramfs allowed with
/// --allow-tmpfs (no "0 B free"), --profile-dir naming a file, fsync's memory-fs warning.
#[test]
fn clear_lines_before_the_run() {
    if !is_root() {
        crate::util::skip("needs root (loop devices, mounts)");
        return;
    }
    // A read-only loop device given to --destructive.
    let img = crate::util::tempdir().unwrap();
    let f = img.path().join("ro.img");
    std::fs::File::create(&f)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let out = Command::new("losetup")
        .args(["--find", "--show", "--read-only"])
        .arg(&f)
        .output()
        .unwrap();
    if out.status.success() {
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let run = iosat()
            .args(["sweep", &dev, "--destructive", "--pattern", "randwrite"])
            .args(["--levels", "1"])
            .output()
            .unwrap();
        let _ = Command::new("losetup").args(["-d", &dev]).status();
        let err = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{err}");
        assert!(
            err.contains("read-only device") && err.contains(&dev),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    // ramfs with --allow-tmpfs runs (it reports no size: not "0 B free").
    let ram = Tmpfs::mount("ramfs");
    let out = iosat()
        .arg("sweep")
        .arg(ram.path())
        .args([
            "--allow-tmpfs",
            "--direct",
            "false",
            "--levels",
            "1",
            "--json",
        ])
        .args(["--duration", "0.1", "--ramp", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("ramfs"), "{}", stderr(&out));
    assert!(entries(ram.path()).is_empty());
    // --profile-dir naming a file: refused at start.
    let d = crate::util::tempdir().unwrap();
    let file = d.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let out = iosat()
        .arg("sweep")
        .arg(d.path())
        .args([
            "--size",
            "16m",
            "--levels",
            "1",
            "--save-profile",
            "--profile-dir",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--profile-dir"), "{}", stderr(&out));
    assert_eq!(entries(d.path()), [file]);
    // fsync on tmpfs: the warning is on stderr.
    let t = Tmpfs::mount("64m");
    let out = iosat()
        .arg("fsync")
        .arg(t.path())
        .args([
            "--duration",
            "0.02",
            "--sizes",
            "4096",
            "--committers",
            "none",
        ])
        .args(["--methods", "fsync", "--mode", "overwrite", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("is on tmpfs"), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------
// Cases that held before issue 12 but had no test.

/// Runs `iosat` as user nobody (root ignores permissions, so EACCES needs another user).
fn iosat_as_nobody() -> Command {
    let mut c = Command::new("setpriv");
    c.env("IOSAT_STATE_DIR", ""); // learned state in memory only
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_iosat"));
    c
}

#[test]
fn eacces_on_the_target_directory_and_on_output_is_one_line() {
    if !is_root() || !crate::util::have("setpriv", "--version") {
        crate::util::skip("needs root and setpriv to run as another user");
        return;
    }
    let d = crate::util::tempdir().unwrap();
    let locked = d.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = iosat_as_nobody()
        .arg("sweep")
        .arg(&locked)
        .args(["--size", "16m", "--levels", "1"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("Permission denied") && err.contains("locked"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let out = iosat_as_nobody()
        .arg("report")
        .arg(fixture("report/sim_sweep.json"))
        .arg("-o")
        .arg(locked.join("x.md"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'--output'") && err.contains("Permission denied"),
        "{err}"
    );
    assert!(entries(&locked).is_empty());
}

#[test]
fn a_read_only_filesystem_is_one_line_and_nothing_is_written() {
    if !is_root() {
        crate::util::skip("mounting needs root");
        return;
    }
    let t = Tmpfs::mount("256m");
    let ok = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(t.path())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "remount ro failed");
    let out = iosat()
        .arg("sweep")
        .arg(t.path())
        .args([
            "--allow-tmpfs",
            "--direct",
            "false",
            "--size",
            "16m",
            "--levels",
            "1",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Read-only file system"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let out = iosat().arg("fsync").arg(t.path()).output().unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(entries(t.path()).is_empty());
}

/// Whether process `pid` holds a file in `dir` open (a named or an O_TMPFILE one, which /proc
/// shows as `DIR/#INODE (deleted)`).
pub fn has_file_open_in(pid: u32, dir: &Path) -> bool {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"));
    fds.into_iter()
        .flatten()
        .flatten()
        .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.parent() == Some(dir)))
}

#[test]
fn sigterm_and_sighup_during_layout_and_measurement_clean_up() {
    for (sig, during_layout) in [
        (libc::SIGTERM, true),
        (libc::SIGHUP, true),
        (libc::SIGTERM, false),
        (libc::SIGHUP, false),
    ] {
        let d = crate::util::tempdir().unwrap();
        let size = if during_layout { "256m" } else { "16m" };
        let child = iosat()
            .arg("sweep")
            .arg(d.path())
            .args(["--engine", "sync", "--size", size, "--levels", "1,2"])
            .args(["--duration", "5", "--no-progress", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while !has_file_open_in(child.id(), d.path()) {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "layout never started"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        if !during_layout {
            // A 16 MiB layout is done well within a second; the level runs for 5 s.
            std::thread::sleep(Duration::from_millis(1500));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(130),
            "signal {sig}: {}",
            stderr(&out)
        );
        assert!(
            entries(d.path()).is_empty(),
            "signal {sig}: {:?}",
            entries(d.path())
        );
    }
}

#[test]
fn a_symlink_alias_of_a_mounted_device_and_a_dev_typo_are_refused() {
    let Some((lo, mnt)) = mounted_loop(16 << 20) else {
        return;
    };
    let dev = lo.path.clone();
    let d = crate::util::tempdir().unwrap();
    let alias = d.path().join("disk");
    std::os::unix::fs::symlink(&dev, &alias).unwrap();
    let out = iosat()
        .arg("sweep")
        .arg(&alias)
        .args(["--destructive", "--pattern", "randwrite", "--levels", "1"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!("mounted at {}", mnt.display())),
        "{err}"
    );
    // A typo'd /dev path is an error, never a new file.
    let typo = format!("{dev}-typo");
    let out = iosat()
        .args(["sweep", &typo, "--destructive", "--pattern", "randwrite"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    assert!(!Path::new(&typo).exists());
}

/// A loop device of `size` bytes with ext4 on it, mounted (both undone on drop); None, saying
/// why, when that cannot be set up (not root, no mkfs.ext4).
fn mounted_loop(size: u64) -> Option<(crate::util::LoopDev, std::path::PathBuf)> {
    let Some(mut lo) = crate::util::LoopDev::try_new(size, false, None) else {
        crate::util::skip("cannot set up a loop device (needs root)");
        return None;
    };
    let dev = lo.path.clone();
    let Some(mnt) = lo.mount(&dev) else {
        crate::util::skip_lacking("mkfs.ext4 or mount failed");
        return None;
    };
    Some((lo, mnt))
}

/// Thaws a frozen filesystem on drop, also when the test fails.
struct Frozen(
    std::path::PathBuf,
    #[allow(dead_code)] crate::support::reap::Held,
);

impl Frozen {
    /// The guard of `mnt`, thawing it also if the run is interrupted (support::reap).
    fn new(mnt: &Path) -> Frozen {
        let m = mnt.to_path_buf();
        let reap = crate::support::reap::on_interrupt("a frozen filesystem", move || {
            let _ = Command::new("fsfreeze").arg("-u").arg(&m).output();
        });
        Frozen(mnt.to_path_buf(), reap)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze").arg("-u").arg(&self.0).status();
    }
}

#[test]
fn a_frozen_filesystem_during_fsync_is_survived() {
    let Some((_lo, mnt)) = mounted_loop(64 << 20) else {
        return;
    };
    let child = iosat()
        .arg("fsync")
        .arg(&mnt)
        .args([
            "--duration",
            "0.3",
            "--sizes",
            "4096",
            "--committers",
            "none",
        ])
        .args([
            "--methods",
            "fsync,fdatasync",
            "--mode",
            "overwrite",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let frozen = Command::new("fsfreeze")
        .arg("-f")
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    let guard = Frozen::new(&mnt);
    if frozen {
        std::thread::sleep(Duration::from_millis(800));
    }
    drop(guard);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"cases\""));
    let left: Vec<_> = entries(&mnt)
        .into_iter()
        .filter(|p| !p.ends_with("lost+found"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Free bytes of the filesystem holding `dir` (statvfs), as an unprivileged writer sees them.
fn avail_bytes(dir: &Path) -> u64 {
    let c = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    // SAFETY: statvfs is plain data, zeroed is a valid value; the path is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    st.f_bavail as u64 * st.f_frsize as u64
}

/// Take every free byte of the filesystem holding `dir` with one allocated file.
fn fill(dir: &Path) {
    let f = std::fs::File::create(dir.join("filler")).unwrap();
    let mut want = avail_bytes(dir);
    // SAFETY: a valid fd; fallocate only allocates blocks for it.
    while want > 0
        && unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(&f), 0, 0, want as i64) } != 0
    {
        want = want.saturating_sub(64 << 10);
    }
}

/// Entries iosat may have left in an ext4 root (the filler and lost+found aside).
fn left_by_iosat(dir: &Path) -> Vec<std::path::PathBuf> {
    entries(dir)
        .into_iter()
        .filter(|p| !p.ends_with("lost+found") && !p.ends_with("filler"))
        .collect()
}

/// The filesystem fills up while fsync appends (another writer takes the space): the append's
/// ENOSPC is fatal, said in one line naming the file and the error, no result is printed as if
/// the run had succeeded, and the test file is removed.
#[test]
fn enospc_during_an_fsync_run_is_one_line_and_leaves_nothing() {
    let Some((_lo, mnt)) = mounted_loop(64 << 20) else {
        return;
    };
    let mut child = iosat()
        .arg("fsync")
        .arg(&mnt)
        .args(["--methods", "fsync", "--mode", "append", "--sizes", "16k"])
        .args(["--duration", "10", "--committers", "none"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while left_by_iosat(&mnt).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no test file appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    fill(&mnt);
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("fsync still running 30 s after the filesystem filled");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("No space left on device") && lines[0].contains(".iosat-fsync."),
        "{err}"
    );
    assert!(
        o.stdout.is_empty(),
        "no results printed as if it had succeeded"
    );
    assert!(left_by_iosat(&mnt).is_empty(), "{:?}", left_by_iosat(&mnt));
}

/// The filesystem fills up while a sweep lays out its file: the file's space is reserved
/// (allocated) before it is judged enough, so the layout either wins the space and runs, or
/// loses it and stops with one line naming ENOSPC or the lack of space; either way nothing of
/// iosat's is left.
#[test]
fn enospc_around_the_layout_leaves_nothing() {
    let Some((_lo, mnt)) = mounted_loop(200 << 20) else {
        return;
    };
    for delay_ms in [0u64, 5, 30] {
        let child = iosat()
            .arg("sweep")
            .arg(&mnt)
            .args([
                "--size",
                "64m",
                "--levels",
                "1",
                "--duration",
                "0.2",
                "--ramp",
                "0",
            ])
            .args(["--json", "--no-progress"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        fill(&mnt);
        let o = child.wait_with_output().unwrap();
        let err = stderr(&o);
        match o.status.code() {
            Some(0) => {
                let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
                assert!(j["levels"][0]["ios"].as_u64().unwrap() > 0, "{j}");
            }
            Some(1) => assert!(err.contains("No space left on device"), "{err}"),
            Some(4) => assert!(err.contains("too little free space"), "{err}"),
            c => panic!("exit {c:?}: {err}"),
        }
        assert!(
            left_by_iosat(&mnt).is_empty(),
            "after {delay_ms} ms: {:?}",
            left_by_iosat(&mnt)
        );
        std::fs::remove_file(mnt.join("filler")).unwrap();
    }
}

/// Issue 28 item 2: `-o`/`--html FILE --force` replaces only regular files. A FIFO and a
/// character device are written into (the reader gets the result, the node stays what it
/// was); a symlink to a user's file, a directory and a socket are refused for safety (exit 4)
/// with one line naming the flag and the path and not advising --force, the file behind the
/// link untouched. Without --force, a FIFO is refused with the advice.
#[test]
fn force_replaces_only_regular_files() {
    use std::os::unix::fs::FileTypeExt;
    let d = crate::util::tempdir().unwrap();
    let src = sim_json();
    let fifo = d.path().join("fifo");
    crate::util::mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    let out = report(&[&src, "-o", f, "--format", "markdown"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("FIFO") && err.contains("--force"), "{err}");
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = report(&[&src, "-o", f, "--format", "markdown", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = reader.join().unwrap();
    let md = report(&[&src, "--format", "markdown"]);
    assert_eq!(got.as_bytes(), &md.stdout[..]);
    assert!(got.contains('|'), "{got}");
    assert!(fifo.symlink_metadata().unwrap().file_type().is_fifo());

    // A character device node (1:3, the kernel's null device) made here.
    if is_root() {
        let null = d.path().join("null");
        let c = std::ffi::CString::new(null.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path inside the test's own directory.
        let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 3)) };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
        let n = null.to_str().unwrap();
        let out = report(&[&src, "-o", n, "--format", "markdown", "--force"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        // stat's -o is written as the run goes: into the device as well.
        let rec = fixture("stat/pair.rec");
        let out = iosat()
            .args([
                "stat",
                "--replay",
                rec.to_str().unwrap(),
                "-o",
                n,
                "--force",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let t = null.symlink_metadata().unwrap().file_type();
        assert!(t.is_char_device(), "{t:?}");
    } else {
        eprintln!("skipped the character device case: mknod needs root");
    }

    // A symlink to a user's file, a directory, a socket: refused for safety with --force.
    let mine = d.path().join("mine.md");
    std::fs::write(&mine, "mine\n").unwrap();
    let link = d.path().join("link.md");
    std::os::unix::fs::symlink(&mine, &link).unwrap();
    let dir = d.path().join("a-dir");
    std::fs::create_dir(&dir).unwrap();
    let sock = d.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    for (p, what) in [(&link, "symlink"), (&dir, "directory"), (&sock, "socket")] {
        let ps = p.to_str().unwrap();
        let out = report(&[&src, "-o", ps, "--format", "markdown", "--force"]);
        assert_eq!(out.status.code(), Some(4), "{what}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("--output") && err.contains(ps), "{err}");
        assert!(err.contains(what) && !err.contains("--force"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine\n");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    // The same rule for every command's -o: stat's stream and info's whole file.
    let rec = fixture("stat/pair.rec");
    let out = iosat()
        .args(["stat", "--replay", rec.to_str().unwrap(), "-o"])
        .arg(&link)
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(!stderr(&out).contains("--force"), "{}", stderr(&out));
    let root = fixture("sysroot1");
    let out = iosat()
        .arg("info")
        .arg("--proc-root")
        .arg(root.join("proc"))
        .arg("--sys-root")
        .arg(root.join("sys"))
        .arg("-o")
        .arg(&link)
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("'-o'"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine\n");
}

/// Issue 24 item 2: fsync writes through the one output sink, so a closed standard output
/// (`| head`) exits 0 as every other command does, and the -o file is written all the same.
#[test]
fn fsync_into_a_closed_pipe_exits_0_and_keeps_its_file() {
    let work = crate::util::tempdir().unwrap();
    let out = work.path().join("out.json");
    let (r, w) = std::io::pipe().unwrap();
    drop(r);
    let o = iosat()
        .arg("fsync")
        .arg(work.path())
        .args(["--duration", "20ms", "--sizes", "4k", "--methods=fdatasync"])
        .args(["--mode=overwrite", "--committers=none", "--json", "-o"])
        .arg(&out)
        .stdout(w)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(saved.get("cases").is_some(), "{saved}");
    assert_eq!(entries(work.path()), [out]);
}

/// GET /metrics from an exporter at `addr`: the body, or None when nothing answers.
fn metrics_at(addr: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    text.starts_with("HTTP/1.1 200").then_some(text)
}

/// Issue 28 item 1: a warning written to a stderr that is a closed pipe or a full device
/// never panics inside a scrape: the exporter keeps every metric (before, a warning's
/// eprintln! poisoned the scraper, and with stderr on /dev/full it exited 101 at start).
#[test]
fn the_exporter_keeps_its_metrics_when_stderr_is_gone() {
    use std::io::BufRead;
    for full in [false, true] {
        let root = crate::util::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("proc")).unwrap();
        std::fs::create_dir_all(root.path().join("sys")).unwrap();
        let stats = root.path().join("proc/diskstats");
        std::fs::write(&stats, "   8 0 sda 1 2 3 4 5 6 7 8 0 10 11 0 0 0 0 0 0\n").unwrap();
        // A free loopback port, for the run whose stderr says nothing.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut c = iosat();
        c.args(["exporter", "--all", "--no-bpf", "--web.listen-address"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--proc-root")
            .arg(root.path().join("proc"))
            .arg("--sys-root")
            .arg(root.path().join("sys"))
            .stdout(Stdio::null());
        if full {
            c.stderr(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            );
        } else {
            c.stderr(Stdio::piped());
        }
        let mut child = c.spawn().unwrap();
        if let Some(err) = child.stderr.take() {
            // The first line ("listening"), then the reader goes away: a broken pipe.
            let mut err = std::io::BufReader::new(err);
            let mut line = String::new();
            err.read_line(&mut line).unwrap();
            assert!(line.contains("listening"), "{line}");
        }
        let addr = format!("127.0.0.1:{port}");
        let start = Instant::now();
        let mut first = None;
        while first.is_none() && start.elapsed() < Duration::from_secs(20) {
            if let Some(code) = child.try_wait().unwrap() {
                panic!("exporter exited with {code:?} (stderr on /dev/full: {full})");
            }
            first = metrics_at(&addr);
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            first.is_some_and(|m| m.contains("iosat_disk_")),
            "no first scrape"
        );
        // A line the parser skips with a warning, then scrapes: the warning goes nowhere.
        let mut text = std::fs::read_to_string(&stats).unwrap();
        text.push_str("   8 1 sdb 1 2\n");
        std::fs::write(&stats, text).unwrap();
        for _ in 0..2 {
            let m = metrics_at(&addr).expect("a scrape after the warning");
            assert!(
                m.contains("iosat_scrape_collector_success{collector=\"diskstats\"} 1\n"),
                "{m}"
            );
            assert!(m.contains("iosat_disk_"), "{m}");
        }
        assert!(child.try_wait().unwrap().is_none(), "the exporter died");
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Issue 28, item 4 in `stat` and `top` (one collector): during a long run the block-latency
/// program's 64 device slots of devices gone from diskstats come back, so after 80 loop
/// devices have come, done I/O and gone, a new one still gets its latency percentiles. On the
/// old code the slots were freed only by the exporter: the new device had counters and no
/// histogram.
#[test]
fn a_long_stat_gives_the_slots_of_removed_devices_back() {
    use crate::ownloop::OwnLoop;
    use std::io::BufRead;
    if !is_root() || !Path::new("/sys/kernel/btf/vmlinux").exists() {
        crate::util::skip_lacking("needs root and BTF");
        return;
    }
    // One of ours present from the start, so the pattern names a device.
    let first = OwnLoop::from(3299);
    let mut child = crate::util::KillOnDrop(
        iosat()
            .args([
                "stat",
                "loop3*",
                "--all",
                "--json",
                "-i",
                "0.2",
                "--no-learn",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let reader = {
        let (lines, out) = (lines.clone(), child.0.stdout.take().unwrap());
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(l);
            }
        })
    };
    let ticks = |n: usize| {
        let start = lines.lock().unwrap().len();
        let t0 = Instant::now();
        while lines.lock().unwrap().len() < start + n && t0.elapsed() < Duration::from_secs(30) {
            assert!(!reader.is_finished(), "stat ended early");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    ticks(2);
    // 80 devices never seen before (numbers of their own), ten at a time: each reads, then
    // the ten leave diskstats and stat ticks twice.
    for batch in 0..8 {
        let devs: Vec<OwnLoop> = (0..10)
            .map(|i| OwnLoop::from(3300 + batch * 10 + i))
            .collect();
        for d in &devs {
            d.read(20);
        }
        drop(devs);
        ticks(2);
    }
    let last = OwnLoop::from(3390);
    let (major, minor) = last.number();
    ticks(1);
    last.read(100);
    ticks(3);
    let _ = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status();
    let status = child.0.wait().unwrap();
    reader.join().unwrap();
    drop(first);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(!err.contains("slots are taken"), "{err}");
    let counted: u64 = lines
        .lock()
        .unwrap()
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .flat_map(|v| v["devices"].as_array().cloned().unwrap_or_default())
        .filter(|d| d["major"] == major && d["minor"] == minor)
        .filter_map(|d| d["latency"]["read"]["count"].as_u64())
        .sum();
    assert!(
        counted >= 100,
        "the 81st device's reads in its latency histogram: {counted} of >= 100\n{err}"
    );
}

/// Issue 28, item 9: a web-config file that is a FIFO is refused at once (exit 2, naming the
/// flag and the file); the old code blocked in open() with the stop signals caught.
#[test]
fn a_fifo_as_the_web_config_file_is_refused_not_waited_on() {
    let d = crate::util::tempdir().unwrap();
    let fifo = d.path().join("web.yml");
    crate::util::mkfifo(&fifo);
    let out = crate::util::output_within(
        iosat()
            .args([
                "exporter",
                "--no-learn",
                "--web.listen-address",
                "127.0.0.1:0",
            ])
            .arg("--web.config.file")
            .arg(&fifo),
        Duration::from_secs(20),
    )
    .expect("the exporter blocked opening the FIFO");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--web.config.file") && err.contains(fifo.to_str().unwrap()),
        "{err}"
    );
    assert!(err.contains("not a regular file"), "{err}");
}

/// Issue 28, item 9: `fsync -o FIFO --force` with no process reading the FIFO ends with one
/// line naming -o and the file (exit 2) instead of blocking in open() for ever; with a
/// reader, the result goes into the FIFO.
#[test]
fn fsync_into_a_fifo_without_a_reader_ends() {
    let d = crate::util::tempdir().unwrap();
    let fifo = d.path().join("out.json");
    crate::util::mkfifo(&fifo);
    let run = || {
        let mut c = iosat();
        c.arg("fsync")
            .arg(d.path())
            .args([
                "--methods",
                "fdatasync",
                "--sizes",
                "4k",
                "--duration",
                "0.2",
            ])
            .args([
                "--committers",
                "none",
                "--no-verify",
                "--json",
                "--force",
                "-o",
            ])
            .arg(&fifo);
        c
    };
    let out = crate::util::output_within(&mut run(), Duration::from_secs(120))
        .expect("fsync blocked opening a FIFO nobody reads");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'-o'") && err.contains("no process reads") && err.contains("out.json"),
        "{err}"
    );
    // With a reader, the result arrives whole.
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = crate::util::output_within(&mut run(), Duration::from_secs(120)).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = reader.join().unwrap();
    let v: serde_json::Value = serde_json::from_str(&got).expect("the JSON result in the FIFO");
    assert_eq!(v["kind"], "fsync", "{got}");
    // Nothing was left beside the FIFO.
    assert_eq!(entries(d.path()), [fifo]);
}

/// Issue 28, item 10: on a filesystem that reports a write-back error at fsync or at close
/// (NFS, FUSE), `report -o` fails with exit 1 naming the user's file, and neither the file nor
/// a temporary one is left; the old code ignored close's error, renamed the temporary file
/// into place and exited 0.
#[test]
fn a_write_back_error_at_fsync_or_close_fails_report_o() {
    use crate::failfs::{FailAt, FailFs};
    let src = fixture("report/fsync.json");
    for at in [FailAt::Fsync, FailAt::Close] {
        let Some(fs) = FailFs::mount(at) else { return };
        let dst = fs.path().join("page.html");
        let out = report(&[src.to_str().unwrap(), "-o", dst.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{at:?}: {err}");
        assert!(
            err.contains("page.html") && err.contains("Input/output error"),
            "{at:?}: {err}"
        );
        assert!(fs.names().is_empty(), "{at:?}: left {:?}", fs.names());
    }
}

/// Issue 28, item 10, for the files written as a run goes: `stat -o FILE` and
/// `stat --record FILE` end with exit 1 naming the file when close (or fsync) fails, instead
/// of exit 0 over data the filesystem did not keep.
#[test]
fn a_write_back_error_fails_stat_o_and_record() {
    use crate::failfs::{FailAt, FailFs};
    for at in [FailAt::Fsync, FailAt::Close] {
        let Some(fs) = FailFs::mount(at) else { return };
        for (flag, name) in [("-o", "stat.txt"), ("--record", "disk.rec")] {
            let file = fs.path().join(name);
            let out = iosat()
                .args(["stat", "--no-bpf", "-i", "0.1", "-c", "2", flag])
                .arg(&file)
                .output()
                .unwrap();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{at:?} {flag}: {err}");
            assert!(
                err.contains(name) && err.contains("Input/output error"),
                "{at:?} {flag}: {err}"
            );
        }
    }
}

/// Issue 28, item 5, end to end: `stat --record` on a 64 MiB tmpfs that fills up stops with
/// exit 1 naming the recording; every good sample it wrote is still read by stat --replay,
/// analyze and report (the cut last line skipped with a warning), and once there is room again
/// a later --record cuts the partial line before appending, so the file reads whole.
#[test]
fn a_recording_cut_by_a_full_tmpfs_keeps_its_samples() {
    if !is_root() {
        crate::util::skip("mounting a tmpfs needs root");
        return;
    }
    let t = Tmpfs::mount("64m");
    // Room for a few dozen samples of every device.
    let filler = t.path().join("filler");
    std::fs::write(&filler, vec![7u8; (64 << 20) - (96 << 10)]).unwrap();
    let rec = t.path().join("disk.rec");
    let record = || {
        let mut c = iosat();
        c.args(["stat", "--all", "--no-bpf", "-i", "0.02", "--record"])
            .arg(&rec)
            .stdout(Stdio::null());
        c
    };
    let out = crate::util::output_within(&mut record(), Duration::from_secs(60))
        .expect("stat --record kept running on a full filesystem");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("disk.rec") && err.contains("No space left on device"),
        "{err}"
    );
    let text = std::fs::read(&rec).unwrap();
    let whole = text.iter().filter(|&&b| b == b'\n').count();
    assert!(whole > 20, "only {whole} lines recorded");
    // Every reader takes the good samples; a partial last line is skipped with one warning.
    // A partial line of blanks alone says nothing and is dropped silently (replay.rs's
    // cut_partial_last_line): diskstats lines begin with spaces, so ENOSPC can leave just
    // those (the suite at a1f6491 did, once).
    let tail = &text[text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)..];
    let cut = !tail.iter().all(u8::is_ascii_whitespace);
    eprintln!("recorded {whole} lines before ENOSPC; last line cut: {cut}");
    for args in [vec!["stat", "--replay"], vec!["analyze"], vec!["report"]] {
        let out = iosat().args(&args).arg(&rec).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!out.stdout.is_empty(), "{args:?}");
        assert_eq!(
            err.contains("has no newline"),
            cut,
            "{args:?} (last line cut: {cut}): {err}"
        );
    }
    // Room again: the next --record continues the file, and it reads whole.
    std::fs::remove_file(&filler).unwrap();
    let out = iosat()
        .args([
            "stat", "--all", "--no-bpf", "-i", "0.02", "-c", "3", "--record",
        ])
        .arg(&rec)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read(&rec).unwrap();
    assert!(text.ends_with(b"\n"));
    let out = iosat()
        .args(["stat", "--replay"])
        .arg(&rec)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("has no newline"), "{err}");
}

/// A disk of a fake /proc (`diskstats`, `uptime`) with steady traffic (about one read in
/// flight), the file replaced atomically every 20 ms by a thread, so that every interval a
/// `stat --proc-root` reads has traffic to learn. The sysfs root is empty: the state key is
/// the kernel name, `sda`.
struct FakeDisk {
    dir: tempfile::TempDir,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeDisk {
    fn start() -> FakeDisk {
        FakeDisk::disks(&["sda"])
    }

    /// [`FakeDisk::start`] with these disks (major 8, minors 0, 16, ...), each with the same
    /// traffic.
    fn disks(names: &[&str]) -> FakeDisk {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let dir = crate::util::tempdir().unwrap();
        let proc_dir = dir.path().join("proc");
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::create_dir_all(dir.path().join("sys")).unwrap();
        std::fs::write(proc_dir.join("uptime"), "1000.00 900.00\n").unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let write = move |proc_dir: &Path, ms: u64| {
            let line: String = names
                .iter()
                .enumerate()
                .map(|(i, name)| {
                    format!(
                        "   8 {:7} {name} {ms} 0 {} {ms} 0 0 0 0 0 {ms} {ms} 0 0 0 0 0 0\n",
                        16 * i,
                        ms * 8
                    )
                })
                .collect();
            let tmp = proc_dir.join(".diskstats.tmp");
            std::fs::write(&tmp, line).unwrap();
            std::fs::rename(&tmp, proc_dir.join("diskstats")).unwrap();
        };
        write(&proc_dir, 1);
        let (s, p) = (std::sync::Arc::clone(&stop), proc_dir.clone());
        let thread = std::thread::spawn(move || {
            let t0 = Instant::now();
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                write(&p, 1 + t0.elapsed().as_millis() as u64);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        FakeDisk {
            dir,
            stop,
            thread: Some(thread),
        }
    }

    /// `iosat stat` of the fake disk, learning into `state`.
    fn stat(&self, state: &Path, count: u32) -> Command {
        let mut c = iosat();
        c.args(["stat", "--json", "--no-bpf", "-i", "0.1", "-c"])
            .arg(count.to_string())
            .arg("--proc-root")
            .arg(self.dir.path().join("proc"))
            .arg("--sys-root")
            .arg(self.dir.path().join("sys"))
            .arg("--state-dir")
            .arg(state);
        c
    }
}

impl Drop for FakeDisk {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A state directory whose `learned/` is a symlink (planted, or made by mistake) is never
/// followed: `stat` judges without state and says why, once for the directory, not once per
/// busy device (a thousand devices' locks were refused line by line), and writes nothing
/// where the link points.
#[test]
fn a_symlinked_learned_directory_is_said_once_not_once_per_device() {
    if !crate::util::is_root() {
        eprintln!("skipped: as another user a symlinked learned/ is the user's own to follow");
        return;
    }
    let names = ["sda", "sdb", "sdc", "sdd", "sde", "sdf"];
    let disk = FakeDisk::disks(&names);
    let dir = crate::util::tempdir().unwrap();
    let (state, elsewhere) = (dir.path().join("state"), dir.path().join("elsewhere"));
    std::fs::create_dir_all(&state).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, state.join("learned")).unwrap();
    let out = disk.stat(&state, 4).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    // Every device with traffic shown and judged, state or none.
    assert_eq!(
        last["devices"].as_array().unwrap().len(),
        names.len(),
        "{last}"
    );
    assert!(err.contains("is a symlink"), "{err}");
    assert_eq!(
        err.matches("not locked").count(),
        1,
        "a lock refused for the directory said once, not per device:\n{err}"
    );
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "written through the symlink"
    );
    assert!(std::fs::symlink_metadata(state.join("learned"))
        .unwrap()
        .file_type()
        .is_symlink());
}

/// The intervals a state file says it learned from.
fn learned_intervals(state: &Path) -> u64 {
    let text = std::fs::read_to_string(state.join("learned/sda.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["model"]["intervals_seen"].as_u64().unwrap()
}

/// Issue 39 cases 3 and 4: a state file with too few buckets (the panic at the first interval
/// with traffic), with 1e308 in its counters, or a FIFO in its place: `stat` runs, says in
/// a line that the file was set aside, learns again and saves a good file.
#[test]
fn case3_case4_a_broken_state_file_or_a_fifo_is_set_aside_and_stat_learns_again() {
    let disk = FakeDisk::start();
    let broken = [
        r#"{"schema_version":1,"id":"sda","model":{"intervals_seen":50,"seconds_seen":50,"series":[{"dir":"read","size_class":"small","buckets":[{"intervals":50,"requests":5000,"seconds":50,"busy_ms":50000}]}]}}"#.to_string(),
        r#"{"schema_version":1,"id":"sda","model":{"intervals_seen":50,"seconds_seen":50,"series":[{"dir":"read","size_class":"small","buckets":[{"intervals":1e308,"requests":1e308,"seconds":1e308,"busy_ms":1e308},{},{},{},{},{},{},{},{}]}]}}"#.to_string(),
        "fifo".to_string(),
    ];
    for text in broken {
        let state = crate::util::tempdir().unwrap();
        let file = state.path().join("learned/sda.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        if text == "fifo" {
            let c = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
            // SAFETY: mkfifo with a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        } else {
            std::fs::write(&file, &text).unwrap();
        }
        let o =
            crate::util::output_within(&mut disk.stat(state.path(), 6), Duration::from_secs(60))
                .expect("stat ends");
        let err = stderr(&o);
        assert!(o.status.success(), "{text}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains("set aside"), "{text}: {err}");
        // Learned again and saved: a regular file that loads.
        assert!(learned_intervals(state.path()) >= 1);
    }
}

/// Issue 39 case 5: two `stat`s learning one device, the second started while the first
/// runs and ending after it: the state holds the first run's intervals and the second's after
/// the first ended (one learner at a time, the other taking over), not only the last saver's.
#[test]
fn case5_concurrent_learners_lose_no_run() {
    let disk = FakeDisk::start();
    let state = crate::util::tempdir().unwrap();
    let mut a = disk
        .stat(state.path(), 12)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // B starts once A has printed three intervals.
    {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(a.stdout.as_mut().unwrap()).lines();
        for _ in 0..3 {
            lines.next().unwrap().unwrap();
        }
    }
    let b = disk
        .stat(state.path(), 16)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let oa = a.wait_with_output().unwrap();
    assert!(oa.status.success(), "{}", stderr(&oa));
    let ob = b.wait_with_output().unwrap();
    assert!(ob.status.success(), "{}", stderr(&ob));
    assert!(
        stderr(&ob).contains("another iosat is learning"),
        "{}",
        stderr(&ob)
    );
    // B learned at most 15 intervals of its own (its first report is since boot); A at
    // least 3 before B started: a state of more than B's own is both runs'.
    let n = learned_intervals(state.path());
    assert!(n > 15, "{n} intervals: a run's were lost");
}

/// Issue 39 case 2: `profile export -o NODE --force` writes into a character device or FIFO,
/// never replaces it; a directory is refused without advising --force.
#[test]
fn case2_profile_export_never_replaces_a_node() {
    if !is_root() {
        crate::util::skip("needs root (mknod)");
        return;
    }
    let t = crate::util::tempdir().unwrap();
    let profiles = t.path().join("profiles");
    let r = crate::util::SimSweep::small().save(t.path().join("r.json"));
    let s = fixture("sysroot1");
    let o = iosat()
        .args([
            "profile",
            "save",
            r.to_str().unwrap(),
            "--for",
            "/dev/nvme0n1",
            "--json",
        ])
        .arg("--sys-root")
        .arg(s.join("sys"))
        .arg("--proc-root")
        .arg(s.join("proc"))
        .arg("--profile-dir")
        .arg(&profiles)
        .output()
        .unwrap();
    let id = crate::util::ok_json(&o)["id"].as_str().unwrap().to_string();
    let export = |out: &Path, force: bool| {
        let mut c = iosat();
        c.args(["profile", "export", &id, "-o"])
            .arg(out)
            .arg("--profile-dir")
            .arg(&profiles);
        if force {
            c.arg("--force");
        }
        crate::util::output_within(&mut c, Duration::from_secs(30)).expect("export ends")
    };
    use std::os::unix::fs::FileTypeExt;
    // A character device (the null device's numbers, in the test's own directory).
    let node = t.path().join("null");
    let c = std::ffi::CString::new(node.to_str().unwrap()).unwrap();
    // SAFETY: mknod with a NUL-terminated path in a directory the test owns.
    assert_eq!(
        unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) },
        0
    );
    let o = export(&node, true);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        node.symlink_metadata()
            .unwrap()
            .file_type()
            .is_char_device(),
        "replaced"
    );
    // A FIFO nobody reads: refused, still a FIFO.
    let fifo = t.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let o = export(&fifo, true);
    assert!(!o.status.success());
    assert!(
        fifo.symlink_metadata().unwrap().file_type().is_fifo(),
        "replaced"
    );
    // A directory: refused for safety (exit 4) with --force, and the refusal does not
    // advise it.
    let d = t.path().join("dir");
    std::fs::create_dir(&d).unwrap();
    let o = export(&d, true);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(!stderr(&o).contains("pass --force"), "{}", stderr(&o));
    assert!(d.is_dir());
}

/// Issue 39 case 10: escape sequences in a profile (host, device) are printed escaped by
/// `profile show`; `report` of a result whose started_unix_s no run can have says so.
#[test]
fn case10_escapes_are_printed_escaped_and_absurd_dates_plainly() {
    let t = crate::util::tempdir().unwrap();
    let profiles = t.path().join("profiles");
    let r = crate::util::SimSweep::small().save(t.path().join("r.json"));
    let s = fixture("sysroot1");
    let o = iosat()
        .args([
            "profile",
            "save",
            r.to_str().unwrap(),
            "--for",
            "/dev/nvme0n1",
            "--json",
        ])
        .arg("--sys-root")
        .arg(s.join("sys"))
        .arg("--proc-root")
        .arg(s.join("proc"))
        .arg("--profile-dir")
        .arg(&profiles)
        .output()
        .unwrap();
    let saved = crate::util::ok_json(&o);
    let (id, path) = (
        saved["id"].as_str().unwrap(),
        saved["path"].as_str().unwrap(),
    );
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["host"] = "evil\u{1b}]0;owned\u{7}\u{1b}[2J".into();
    v["saved_for"] = "nvme0n1\u{1b}[31m".into();
    std::fs::write(path, v.to_string()).unwrap();
    let o = iosat()
        .args(["profile", "show", id, "--profile-dir"])
        .arg(&profiles)
        .output()
        .unwrap();
    let out = crate::util::ok_stdout(&o);
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(out.contains("\\x1b"), "{out}");
    // A result started in no year a run can have.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&r).unwrap()).unwrap();
    v["started_unix_s"] = serde_json::json!(18_000_000_000_000_000_000u64);
    v.as_object_mut().unwrap().remove("started");
    let absurd = t.path().join("absurd.json");
    std::fs::write(&absurd, v.to_string()).unwrap();
    let o = report(&[absurd.to_str().unwrap()]);
    let out = stdout_of(&o);
    assert!(!out.contains("1813"), "{out}");
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

fn stdout_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A loop device the test attached itself at a given node, detached on drop (even when the
/// test fails).
struct Attached(String, #[allow(dead_code)] crate::support::reap::Held);

impl Attached {
    /// The guard of `node`, detaching it also if the run is interrupted (support::reap).
    fn new(node: &str) -> Attached {
        Attached(node.to_string(), crate::support::reap::loop_device(node))
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// `stat` of `node` for `count` 0.2 s intervals, learning into `state`, while a thread reads
/// it with O_DIRECT (about one request in flight): the run's stderr.
fn stat_with_reads(node: &str, state: &Path, count: u32) -> String {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (stop, node) = (std::sync::Arc::clone(&stop), node.to_string());
        std::thread::spawn(move || {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECT)
                .open(&node)
                .unwrap();
            let layout = std::alloc::Layout::from_size_align(4096, 4096).unwrap();
            // SAFETY: a 4 KiB allocation of a non-zero size, freed below.
            let p = unsafe { std::alloc::alloc_zeroed(layout) };
            // SAFETY: p points to 4096 bytes owned here until the dealloc.
            let buf = unsafe { std::slice::from_raw_parts_mut(p, 4096) };
            let mut off = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = f.read_at(buf, off);
                off = (off + 4096 * 7) % (8 << 20);
            }
            // SAFETY: allocated above with this layout.
            unsafe { std::alloc::dealloc(p, layout) };
        })
    };
    let name = node.trim_start_matches("/dev/");
    let o = crate::util::output_within(
        iosat()
            .args(["stat", name, "--json", "--no-bpf", "-i", "0.2", "-c"])
            .arg(count.to_string())
            .arg("--state-dir")
            .arg(state),
        Duration::from_secs(60),
    )
    .expect("stat ends");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    stderr(&o)
}

/// Issue 37 point 3: a loop device set up again under the same name and size over another
/// file is another device: what was learned about the first is not loaded for it, and `stat`
/// says why in one line.
#[test]
fn a_loop_device_created_again_over_another_file_starts_learning_again() {
    if !is_root() {
        eprintln!("skipped: needs root (losetup)");
        return;
    }
    let t = crate::util::tempdir().unwrap();
    let state = crate::util::tempdir().unwrap();
    let (a, b) = (t.path().join("a.img"), t.path().join("b.img"));
    for f in [&a, &b] {
        std::fs::File::create(f).unwrap().set_len(8 << 20).unwrap();
    }
    let out = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&a)
        .output()
        .unwrap();
    assert!(out.status.success());
    let node = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let first = Attached::new(&node);
    let err = stat_with_reads(&node, state.path(), 8);
    assert!(!err.contains("changed since"), "{err}");
    let saved = entries(&state.path().join("learned"));
    assert!(
        saved
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "json")),
        "{saved:?}"
    );
    drop(first);
    // The same node over the other file (another process may take the free node first).
    let again = Command::new("losetup").arg(&node).arg(&b).status().unwrap();
    if !again.success() {
        eprintln!("skipped: {node} was taken by another process meanwhile");
        return;
    }
    let _second = Attached::new(&node);
    let err = stat_with_reads(&node, state.path(), 3);
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("changed since it was learned"))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("b.img"), "{err}");
}
