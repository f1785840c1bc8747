//! What a test sets up outside its own process (a mount, a loop or zram device, a cgroup, a
//! device's queue setting, a tmux server) taken down also when the run is interrupted. A
//! test's guards undo their set-up on drop, when the test ends or fails; but Ctrl-C (SIGINT),
//! a SIGTERM or a closed terminal (SIGHUP) ends the process without unwinding, and no drop
//! runs: a known device's FUSE mount, its loop device and its temporary directory stayed
//! behind, one per test running. Each guard registers the same undoing here
//! ([`on_interrupt`]); on the first of those signals a thread of this module kills every
//! process the run started (fio, iosat, servers: they hold the devices), runs what is
//! registered, newest first (a mount before the device under it), and exits with 128 + the
//! signal's number (a test that fails meanwhile, its processes killed, cannot end the run
//! first: the exit waits for the reaper). A SIGKILL cannot be caught: nothing here helps then.
//! Imports only: std, libc, signal-hook.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

type Undo = Box<dyn Fn() + Send>;

/// What is set up now, by registration number.
static HELD: Mutex<Vec<(u64, &'static str, Undo)>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(0);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static WATCH: Once = Once::new();

/// A set-up's undoing, registered until dropped (the guard's own drop undoes it then).
#[must_use = "dropping it unregisters the undoing at once"]
pub struct Held(u64);

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|(id, _, _)| *id != self.0);
    }
}

/// Register `undo` (`what`: a few words for the message) to run if the run is interrupted
/// while the returned [`Held`] lives. `undo` must be safe to run after the guard's own drop
/// has begun or ended (each undoing here is: unmounting what is no longer mounted fails
/// harmlessly). Registering after an interruption undoes at once and waits for the exit.
pub fn on_interrupt(what: &'static str, undo: impl Fn() + Send + 'static) -> Held {
    WATCH.call_once(watch);
    let id = NEXT.fetch_add(1, Ordering::SeqCst);
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((id, what, Box::new(undo)));
    if INTERRUPTED.load(Ordering::SeqCst) {
        // The reaper may have run already: this set-up came after it.
        let undo = {
            let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
            held.iter()
                .position(|(i, _, _)| *i == id)
                .map(|k| held.remove(k).2)
        };
        if let Some(undo) = undo {
            undo();
        }
        loop {
            std::thread::park();
        }
    }
    Held(id)
}

const TEMPORARY_DIRECTORY: &str = "a temporary directory";

/// Remove the directory `dir` and what is in it if the run is interrupted, at any time until
/// the run ends: a test's temporary directory (`util::tempdir`), which tempfile removes when
/// it is dropped; removing one that is gone already does nothing. Its test files can be GiBs.
pub fn remove_on_interrupt(dir: &Path) {
    let d = dir.to_path_buf();
    std::mem::forget(on_interrupt(TEMPORARY_DIRECTORY, move || remove_dir(&d)));
}

/// The thread that waits for the signals.
fn watch() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "support::reap: no signal handling ({e}): an interrupted run may leave its set-ups"
            );
            return;
        }
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            reap(sig);
        }
    });
    // SAFETY: registers a function without arguments, which only sleeps.
    unsafe { libc::atexit(hold_exit) };
}

/// At the process's exit: while the reaper runs, it is let finish (it ends the process).
/// Tests whose processes it killed fail at once, and libtest then returns from main: without
/// this, the exit could cut a teardown short.
extern "C" fn hold_exit() {
    let t0 = Instant::now();
    while INTERRUPTED.load(Ordering::SeqCst) && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Everything this run started and set up ended, then the exit.
fn reap(sig: i32) -> ! {
    INTERRUPTED.store(true, Ordering::SeqCst);
    let n = HELD.lock().unwrap_or_else(|e| e.into_inner()).len();
    eprintln!(
        "interrupted (signal {sig}): ending the run's processes, taking down {n} set-up(s) and \
         temporary directories"
    );
    kill_descendants();
    // Guards dropped by tests that fail now (their processes killed) may still be undoing:
    // what they have not unregistered is undone here too, until nothing is left.
    for _ in 0..10 {
        let held = std::mem::take(&mut *HELD.lock().unwrap_or_else(|e| e.into_inner()));
        if held.is_empty() {
            break;
        }
        for (_, what, undo) in held.into_iter().rev() {
            if what != TEMPORARY_DIRECTORY {
                eprintln!("  taking down: {what}");
            }
            undo();
        }
    }
    // _exit: libtest's main may be exiting already (hold_exit waits in it); the process ends
    // here with the signal's status, without a second run of the exit handlers.
    // SAFETY: _exit has no preconditions.
    unsafe { libc::_exit(128 + sig) }
}

/// SIGKILL to every process below this one (children first found, then theirs), from
/// /proc's parent links; then a moment for them to have let go of their files.
fn kill_descendants() {
    let me = std::process::id() as i32;
    let mut parents = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // pid (comm) state ppid ...: the name may hold spaces and parentheses.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if let Some(ppid) = ppid {
                parents.push((pid, ppid));
            }
        }
    }
    let mut below = vec![me];
    let mut k = 0;
    while k < below.len() {
        let p = below[k];
        below.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        k += 1;
    }
    for &pid in &below[1..] {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2)
        && below[1..].iter().any(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
            })
        })
    {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// (source, mount point) of every mount of this process's namespace, newest last.
fn mounts() -> Vec<(String, PathBuf)> {
    // mountinfo: id parent major:minor root mountpoint options ... - fstype source super.
    let unescape = |s: &str| -> String {
        let (mut out, b) = (Vec::new(), s.as_bytes());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && i + 3 < b.len() {
                if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
            out.push(b[i]);
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (head, tail) = l.split_once(" - ")?;
            let at = head.split_whitespace().nth(4)?;
            let source = tail.split_whitespace().nth(1)?;
            Some((unescape(source), PathBuf::from(unescape(at))))
        })
        .collect()
}

/// Unmount `at`, waiting up to 5 s while it is busy, then lazily.
pub fn unmount(at: &Path) {
    let Ok(c) = std::ffi::CString::new(at.as_os_str().as_encoded_bytes()) else {
        return;
    };
    let t0 = Instant::now();
    loop {
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
            return;
        }
        let e = std::io::Error::last_os_error().raw_os_error();
        if e != Some(libc::EBUSY) || t0.elapsed() > Duration::from_secs(5) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if mounts().iter().any(|(_, p)| p == at) {
        // SAFETY: as above.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
}

/// Unmount everything mounted at or under `dir`, deepest first.
pub fn unmount_under(dir: &Path) {
    let mut under: Vec<PathBuf> = mounts()
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| p.starts_with(dir))
        .collect();
    under.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for p in under {
        unmount(&p);
    }
}

/// Unmount everything mounted from the block device `dev` (`/dev/loop7`) or its partitions
/// (`/dev/loop7p1`), and remove each mount point that is then an empty directory of the
/// system's temporary directory (the tests' mount points are).
pub fn unmount_from(dev: &str) {
    let ours = |s: &str| {
        s.strip_prefix(dev).is_some_and(|rest| {
            rest.is_empty()
                || rest
                    .strip_prefix('p')
                    .is_some_and(|n| n.parse::<u32>().is_ok())
        })
    };
    let tmp = std::env::temp_dir();
    for (_, at) in mounts().into_iter().rev().filter(|(s, _)| ours(s)) {
        unmount(&at);
        if at.starts_with(&tmp) {
            let _ = std::fs::remove_dir(&at);
        }
    }
}

/// Detach the loop device `dev` (`/dev/loopN`), and wait up to 5 s for it to let go of its
/// backing file (it does so asynchronously; until then the file's filesystem is busy).
pub fn detach_loop(dev: &str) {
    let _ = Command::new("losetup").args(["-d", dev]).output();
    let name = dev.trim_start_matches("/dev/");
    let backing = format!("/sys/block/{name}/loop/backing_file");
    let t0 = Instant::now();
    while Path::new(&backing).exists() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Remove `dir` and what is in it, unless something is still mounted under it (then what is
/// in it is not the test's to remove).
pub fn remove_dir(dir: &Path) {
    if mounts().iter().any(|(_, p)| p.starts_with(dir)) {
        return;
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Remove the cgroup `dir`: its processes killed first, then rmdir while it is busy (the
/// killed are released asynchronously), for up to 2 s.
pub fn remove_cgroup(dir: &Path) {
    if let Ok(pids) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        for pid in pids
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    for _ in 0..100 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// [`remove_cgroup`] of `dir` if the run is interrupted (a test's own cgroup).
pub fn cgroup(dir: &Path) -> Held {
    let d = dir.to_path_buf();
    on_interrupt("a cgroup", move || remove_cgroup(&d))
}

/// [`detach_loop`] of `dev` if the run is interrupted (a loop device a test attached).
pub fn loop_device(dev: &str) -> Held {
    let d = dev.to_string();
    on_interrupt("a loop device", move || {
        unmount_from(&d);
        detach_loop(&d);
    })
}

/// Not a test of its own: the set-ups that [`an_interrupted_run_takes_down_what_it_set_up`]
/// interrupts, in a child process of it (with IOSAT_TEST_REAP_HOLD set; without, it returns at
/// once). Each is printed as it stands, then it waits (at most two minutes) for the signal.
#[test]
#[ignore = "run by support::reap::an_interrupted_run_takes_down_what_it_set_up, as its child"]
fn holds_set_ups_until_interrupted() {
    use super::knowndev::{KnownDev, Spec};
    if std::env::var_os("IOSAT_TEST_REAP_HOLD").is_none() {
        return;
    }
    let scratch = super::util::tempdir().unwrap();
    std::fs::write(scratch.path().join("file"), "a test's file").unwrap();
    println!("HOLD gone {}", scratch.path().display());
    let mut kd = KnownDev::start(Spec::new(1, Duration::from_millis(1))).expect("a known device");
    let ext4 = kd.mount_ext4();
    println!("HOLD known {} {}", kd.path, kd.dir().display());
    println!("HOLD mount {}", ext4.display());
    let own = super::ownloop::OwnLoop::new();
    println!("HOLD ownloop {}", own.path().trim_start_matches("/dev/"));
    let tmpfs = super::util::Tmpfs::mount("4M");
    println!("HOLD mount {}", tmpfs.path().display());
    println!("HOLD gone {}", tmpfs.path().display());
    let zram = super::util::Zram::new("16M");
    if let Some(z) = &zram {
        println!("HOLD gone /sys/block/zram{}", z.id);
    }
    let quota = super::busy::CpuQuota::new(0.5, Duration::from_millis(100));
    let sleeper = quota.as_ref().map(|q| {
        println!("HOLD gone {}", q.dir().display());
        q.command("sleep")
            .arg("600")
            .spawn()
            .expect("sleep in the cgroup")
    });
    if let Some(s) = &sleeper {
        println!("HOLD pid {}", s.id());
    }
    println!("HOLDING");
    std::thread::sleep(Duration::from_secs(120));
    drop((scratch, kd, own, tmpfs, zram, quota, sleeper));
}

/// The child of [`an_interrupted_run_takes_down_what_it_set_up`], interrupted on drop when
/// the test fails before it did so (a SIGKILL would leave its set-ups behind).
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
            let t0 = Instant::now();
            while matches!(self.0.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Ctrl-C of a test run that holds a temporary directory with a file, a known device with ext4
/// mounted on it, a loop device of /dev/loop-control, a tmpfs, a zram device and a cgroup with
/// a process in it: the run ends with 130 (128 + SIGINT), and every one of them is gone
/// (before this module, the FUSE mount, the loop devices and the temporary directories
/// stayed).
#[test]
fn an_interrupted_run_takes_down_what_it_set_up() {
    use std::io::BufRead;
    if !super::knowndev::available() {
        return;
    }
    let mut child = Child(
        Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", "support::reap::holds_set_ups_until_interrupted"])
            .args(["--ignored", "--nocapture", "--test-threads=1"])
            .env("IOSAT_TEST_REAP_HOLD", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run the test binary"),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    // Read apart, and waited for a while only: a process of the run left running (what is
    // tested) holds the pipe open.
    let (err_tx, err_rx) = std::sync::mpsc::channel();
    let err = child.0.stderr.take().unwrap();
    std::thread::spawn(move || err_tx.send(std::io::read_to_string(err).unwrap_or_default()));
    let mut held = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) if l == "HOLDING" => break,
            Ok(l) => {
                if let Some(h) = l.strip_prefix("HOLD ") {
                    held.push(h.to_string());
                }
            }
            Err(e) => panic!("the child never held its set-ups ({e}): {held:?}"),
        }
    }
    for (what, stands) in held.iter().flat_map(|h| standing(h)) {
        assert!(stands, "{what}: not there before the interrupt");
    }
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the interrupted run did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = err_rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| "(its stderr still open: a process of the run still runs)".into());
    assert_eq!(status.code(), Some(130), "{err}");
    for (what, stands) in held.iter().flat_map(|h| standing(h)) {
        assert!(!stands, "{what}: still there after the interrupt: {err}");
    }
}

/// What a line `HOLD KIND ...` of [`holds_set_ups_until_interrupted`] names, each part with
/// whether it stands now.
fn standing(h: &str) -> Vec<(String, bool)> {
    let mounted = |p: &str| mounts().iter().any(|(_, m)| m.starts_with(p));
    let exists = |p: &str| Path::new(p).exists();
    let (kind, rest) = h.split_once(' ').unwrap();
    match kind {
        "known" => {
            let (dev, dir) = rest.split_once(' ').unwrap();
            let name = dev.trim_start_matches("/dev/");
            vec![
                (
                    format!("{dev} attached"),
                    exists(&format!("/sys/block/{name}/loop/backing_file")),
                ),
                (format!("{dir} mounted"), mounted(dir)),
                (dir.to_string(), exists(dir)),
            ]
        }
        "mount" => vec![(format!("{rest} mounted"), mounted(rest))],
        "ownloop" => {
            let p = format!("/sys/block/{rest}");
            vec![(p.clone(), exists(&p))]
        }
        "gone" => vec![(rest.to_string(), exists(rest))],
        "pid" => vec![(
            format!("the cgroup's process {rest}"),
            // Running (not a zombie its new parent has yet to reap).
            std::fs::read_to_string(format!("/proc/{rest}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| !r.trim_start().starts_with('Z'))
            }),
        )],
        _ => panic!("{h}"),
    }
}
