//! Helpers shared by every integration test: the binary and its output ([`run`], the sim
//! sweep builder [`SimSweep`], refusal tables checked by [`assert_refusals`]), the fixtures,
//! the peer tools, and the devices and filesystems a test sets up itself (loop devices with or
//! without a partition table and ext4, zram, tmpfs/ramfs), each torn down on drop, also when an
//! assertion fails.

use serde_json::Value;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A temporary directory of the system's, removed on drop (tempfile's) and also if the run is
/// interrupted (support::reap): every test's scratch directory.
pub fn tempdir() -> std::io::Result<tempfile::TempDir> {
    let d = tempfile::tempdir()?;
    super::reap::remove_on_interrupt(d.path());
    Ok(d)
}

/// [`tempdir`] in `dir` (/var/tmp: the machine's own disk; /dev/shm: memory).
pub fn tempdir_in(dir: impl AsRef<Path>) -> std::io::Result<tempfile::TempDir> {
    let d = tempfile::tempdir_in(dir)?;
    super::reap::remove_on_interrupt(d.path());
    Ok(d)
}

/// The iosat binary under test. Learned state is kept in memory only (an empty
/// $IOSAT_STATE_DIR), so no test writes to /var/lib/iosat; a test of the state passes
/// --state-dir.
pub fn iosat() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iosat"));
    c.env("IOSAT_STATE_DIR", "");
    // No shared profile directory (/etc/iosat/profiles) of this machine in any test.
    c.env("IOSAT_PROFILE_DIRS", "");
    c
}

/// `iosat ARGS`, run to completion.
pub fn run(args: &[&str]) -> Output {
    iosat().args(args).output().expect("run iosat")
}

/// `iosat SUBCOMMAND ARGS`, run to completion.
pub fn run_sub(sub: &str, args: &[&str]) -> Output {
    iosat().arg(sub).args(args).output().expect("run iosat")
}

/// A refusal: iosat's arguments, the exit code, and a piece of the one line iosat prints
/// (docs/design.md §5: bad input gets one clear line naming the flag or file, and its exit code).
pub type Refusal<'a> = (&'a [&'a str], i32, &'a str);

/// Runs `iosat ARGS` for every row of a refusal table and checks each: the exit code, one line
/// on stderr starting `iosat: ` that contains the expected piece, nothing on stdout.
#[track_caller]
pub fn assert_refusals(table: &[Refusal]) {
    for &(args, code, line) in table {
        let out = run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(line), "{args:?}: wanted {line:?} in {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line: {err}"
        );
        assert!(err.starts_with("iosat: "), "{args:?}: {err}");
        assert!(
            out.stdout.is_empty(),
            "{args:?}: nothing on stdout: {}",
            stdout(&out)
        );
    }
}

/// `iosat sweep --engine sim:...`, built up argument by argument. The sim engine runs in
/// simulated time and is seeded, so a sweep costs milliseconds and two runs measure the same
/// levels. Every run is bounded: a sim that slept in real time is killed after 60 s and the
/// test fails instead of hanging (nine levels of `--duration 20` would take minutes).
#[derive(Clone, Debug)]
pub struct SimSweep {
    args: Vec<String>,
}

impl SimSweep {
    /// `iosat sweep --engine ENGINE` with the sweep's own defaults for everything else.
    pub fn new(engine: &str) -> Self {
        Self {
            args: vec!["sweep".into(), "--engine".into(), engine.into()],
        }
    }

    /// The quick shape: `--levels LEVELS --duration 200ms --ramp 0 --no-progress`.
    pub fn quick(engine: &str, levels: &str) -> Self {
        Self::new(engine).args(&[
            "--levels",
            levels,
            "--duration",
            "200ms",
            "--ramp",
            "0",
            "--no-progress",
        ])
    }

    /// The small device most report tests sweep: 4 units of 1 ms, levels 1, 2 and 4, quick.
    pub fn small() -> Self {
        Self::quick("sim:units=4,service=1ms", "1,2,4")
    }

    /// More arguments, appended.
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// The run's output, whatever its exit code (killed and failed after 60 s).
    #[track_caller]
    pub fn output(&self) -> Output {
        use std::io::Read as _;
        use std::process::Stdio;
        let mut child = iosat()
            .args(&self.args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run iosat");
        // Drained while the run goes on, so a large document never blocks it on a full pipe.
        let drain = |mut r: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                r.read_to_end(&mut buf).map(|_| buf)
            })
        };
        let out = drain(Box::new(child.stdout.take().unwrap()));
        let err = drain(Box::new(child.stderr.take().unwrap()));
        let t0 = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if t0.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{:?}: a simulated sweep still running after 60 s",
                    self.args
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        Output {
            status,
            stdout: out.join().unwrap().unwrap(),
            stderr: err.join().unwrap().unwrap(),
        }
    }

    /// Standard output of a run that must succeed.
    #[track_caller]
    pub fn stdout(&self) -> String {
        ok_stdout(&self.output())
    }

    /// The `--json` document of a run that must succeed.
    #[track_caller]
    pub fn json(&self) -> Value {
        ok_json(&self.clone().args(&["--json"]).output())
    }

    /// The `--json` document as its typed report.
    #[track_caller]
    pub fn report(&self) -> iosat::load::result::SweepReport {
        serde_json::from_value(self.json()).expect("a sweep report")
    }

    /// The `--json` document saved as `path`; returns `path`.
    #[track_caller]
    pub fn save(&self, path: PathBuf) -> PathBuf {
        let text = ok_stdout(&self.clone().args(&["--json"]).output());
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// `tests/fixtures/<rel>`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Standard output as UTF-8 (iosat prints nothing else).
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output of a run that must have succeeded (the exit code and stderr otherwise).
#[track_caller]
pub fn ok_stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        stderr(o)
    );
    stdout(o)
}

/// The JSON document a successful run printed.
#[track_caller]
pub fn ok_json(o: &Output) -> Value {
    serde_json::from_str(&ok_stdout(o)).expect("stdout is JSON")
}

/// One JSON value per line (`stat --json`).
pub fn json_lines(s: &str) -> Vec<Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What a directory holds now.
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

/// The entries of `dir`, none when it does not exist (yet).
pub fn entries_if_any(dir: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(r) => r.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether a peer tool is installed and runs (`tool version_flag` exits 0).
pub fn have(tool: &str, version_flag: &str) -> bool {
    Command::new(tool)
        .arg(version_flag)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `mkfs.ext4` on `node` and mount it on a fresh temporary directory (kept in `dirs` so it
/// outlives the mount).
pub fn mkfs_and_mount(node: &str, dirs: &mut Vec<tempfile::TempDir>) -> Option<PathBuf> {
    let ok = Command::new("mkfs.ext4")
        .args(["-q", "-F", node])
        .status()
        .ok()?
        .success();
    if !ok {
        return None;
    }
    mount_on_temp_dir(node, dirs)
}

/// Mount `node` (already formatted) on a fresh temporary directory, pushed to `dirs`: whoever
/// owns `dirs` must unmount before dropping it (a `TempDir` dropped while mounted stays behind).
pub fn mount_on_temp_dir(node: &str, dirs: &mut Vec<tempfile::TempDir>) -> Option<PathBuf> {
    let mnt = crate::util::tempdir().ok()?;
    let ok = Command::new("mount")
        .arg(node)
        .arg(mnt.path())
        .status()
        .ok()?
        .success();
    if !ok {
        return None;
    }
    let p = mnt.path().to_path_buf();
    dirs.push(mnt);
    Some(p)
}

/// A loop device over a file in a temporary directory. Drop unmounts what was mounted from
/// it, removes the dm devices stacked on it (listed in `dm`) and detaches it.
pub struct LoopDev {
    /// `/dev/loopN`.
    pub path: String,
    /// dm devices a test stacked on it, removed on drop.
    pub dm: Vec<String>,
    mounts: Vec<PathBuf>,
    // Dropped after `drop` has unmounted them.
    mount_dirs: Vec<tempfile::TempDir>,
    _backing: tempfile::TempDir,
    /// The same undoing if the run is interrupted (support::reap).
    _reap: super::reap::Held,
}

impl LoopDev {
    /// A blank loop device of `size` bytes; panics when none can be made (tests need root).
    pub fn new(size: u64) -> LoopDev {
        LoopDev::try_new(size, false, None)
            .expect("losetup failed (tests need root and loop devices)")
    }

    /// `size` bytes of backing file, in a temporary directory under `backing_in` (default: the
    /// system's); with `partition`, an MBR with one Linux partition from sector 2048 to the
    /// end, and the loop device scanned for it (losetup -P).
    pub fn try_new(size: u64, partition: bool, backing_in: Option<&Path>) -> Option<LoopDev> {
        let backing = match backing_in {
            Some(d) => crate::util::tempdir_in(d).ok()?,
            None => crate::util::tempdir().ok()?,
        };
        let img = backing.path().join("backing.img");
        let mut f = std::fs::File::create(&img).ok()?;
        f.set_len(size).ok()?;
        if partition {
            let sectors = (size >> 9) as u32;
            let mut mbr = [0u8; 512];
            let e = &mut mbr[446..462];
            e[4] = 0x83; // Linux
            e[8..12].copy_from_slice(&2048u32.to_le_bytes());
            e[12..16].copy_from_slice(&(sectors - 2048).to_le_bytes());
            mbr[510] = 0x55;
            mbr[511] = 0xaa;
            f.write_all(&mbr).ok()?;
        }
        drop(f);
        let mut path = None;
        for _ in 0..5 {
            let mut cmd = Command::new("losetup");
            cmd.args(["--find", "--show"]);
            if partition {
                cmd.arg("--partscan");
            }
            let out = cmd.arg(&img).output().ok()?;
            if out.status.success() {
                path = Some(String::from_utf8(out.stdout).ok()?.trim().to_string());
                break;
            }
            // Another process may have taken the free device between find and attach.
            std::thread::sleep(Duration::from_millis(100));
        }
        let path = path?;
        let _reap = {
            let (dev, dir) = (path.clone(), backing.path().to_path_buf());
            super::reap::on_interrupt("a loop device", move || {
                remove_dm_over(&dev);
                super::reap::unmount_from(&dev);
                super::reap::detach_loop(&dev);
                super::reap::remove_dir(&dir);
            })
        };
        let l = LoopDev {
            path,
            dm: Vec::new(),
            mounts: Vec::new(),
            mount_dirs: Vec::new(),
            _backing: backing,
            _reap,
        };
        if partition {
            // The kernel creates the partition's node itself; give it a moment.
            let t0 = Instant::now();
            while !Path::new(&l.part1()).exists() {
                if t0.elapsed() > Duration::from_secs(5) {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Some(l)
    }

    /// The first partition's node (with `partition`).
    pub fn part1(&self) -> String {
        format!("{}p1", self.path)
    }

    /// `loopN`, as /proc/diskstats names it.
    pub fn name(&self) -> &str {
        self.path.trim_start_matches("/dev/")
    }

    /// ext4 on `node` (this device or its partition), mounted until drop.
    pub fn mount(&mut self, node: &str) -> Option<PathBuf> {
        let p = mkfs_and_mount(node, &mut self.mount_dirs)?;
        self.mounts.push(p.clone());
        Some(p)
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        for m in self.mounts.iter().rev() {
            let _ = Command::new("umount").arg(m).status();
        }
        for d in &self.dm {
            let _ = Command::new("dmsetup").args(["remove", d]).status();
        }
        let _ = Command::new("losetup").args(["-d", &self.path]).status();
    }
}

/// The dm devices stacked on the loop device `dev` or its partitions (sysfs holders),
/// unmounted and removed: [`LoopDev`]'s `dm` when the run is interrupted.
fn remove_dm_over(dev: &str) {
    let name = dev.trim_start_matches("/dev/");
    let mut holders = vec![format!("/sys/block/{name}/holders")];
    if let Ok(parts) = std::fs::read_dir(format!("/sys/block/{name}")) {
        for p in parts.flatten() {
            if p.file_name().to_string_lossy().starts_with(name) {
                holders.push(format!("{}/holders", p.path().display()));
            }
        }
    }
    for h in holders {
        let Ok(dir) = std::fs::read_dir(&h) else {
            continue;
        };
        for dm in dir.flatten() {
            let dm = dm.file_name().to_string_lossy().into_owned();
            let Ok(n) = std::fs::read_to_string(format!("/sys/block/{dm}/dm/name")) else {
                continue;
            };
            super::reap::unmount_from(&format!("/dev/{dm}"));
            super::reap::unmount_from(&format!("/dev/mapper/{}", n.trim()));
            let _ = Command::new("dmsetup").args(["remove", n.trim()]).output();
        }
    }
}

/// A zram device of our own, removed on drop (even when the test fails).
pub struct Zram {
    pub id: u32,
    /// Where a test mounted it ([`Zram::mount`]), unmounted on drop.
    mount: Option<PathBuf>,
    /// The mount point, a field so that it is removed after `drop` has unmounted it.
    mount_dirs: Vec<tempfile::TempDir>,
    /// The same undoing if the run is interrupted (support::reap).
    _reap: super::reap::Held,
}

/// Zram device `id` unmounted, reset and removed: [`Zram`]'s drop and its undoing.
fn remove_zram(id: u32) {
    super::reap::unmount_from(&format!("/dev/zram{id}"));
    let _ = std::fs::write(format!("/sys/block/zram{id}/reset"), "1");
    let _ = std::fs::write("/sys/class/zram-control/hot_remove", id.to_string());
}

impl Zram {
    pub fn new(size: &str) -> Option<Zram> {
        let id: u32 = std::fs::read_to_string("/sys/class/zram-control/hot_add")
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let z = Zram {
            id,
            mount: None,
            mount_dirs: Vec::new(),
            _reap: super::reap::on_interrupt("a zram device", move || remove_zram(id)),
        };
        std::fs::write(format!("/sys/block/zram{id}/disksize"), size).ok()?;
        // Sizing the device sends a change event, and udev probes it (blkid reads its first
        // and last blocks): let that finish before a test counts the kernel's requests (a
        // probe's read in a sweep's interval made the 4 KiB reads' mean 4.0000013 kB once).
        let _ = std::process::Command::new("udevadm")
            .args(["settle", "--timeout=5"])
            .status();
        Some(z)
    }

    pub fn dev(&self) -> String {
        format!("/dev/zram{}", self.id)
    }

    /// Mount the device on a fresh temporary directory, formatted as ext4 first when `mkfs`;
    /// None when that fails. Unmounted, and the directory removed, on drop.
    pub fn mount(&mut self, mkfs: bool) -> Option<PathBuf> {
        let dev = self.dev();
        let p = if mkfs {
            mkfs_and_mount(&dev, &mut self.mount_dirs)
        } else {
            mount_on_temp_dir(&dev, &mut self.mount_dirs)
        }?;
        self.mount = Some(p.clone());
        Some(p)
    }
}

impl Drop for Zram {
    fn drop(&mut self) {
        if let Some(m) = self.mount.take() {
            let _ = Command::new("umount").arg(&m).status();
        }
        let _ = std::fs::write(format!("/sys/block/zram{}/reset", self.id), "1");
        let _ = std::fs::write("/sys/class/zram-control/hot_remove", self.id.to_string());
    }
}

/// A memory filesystem (tmpfs of `size`, or `"ramfs"`) mounted on a fresh temporary
/// directory; unmounted on drop.
pub struct Tmpfs {
    dir: tempfile::TempDir,
    /// The same undoing if the run is interrupted (support::reap).
    _reap: super::reap::Held,
}

impl Tmpfs {
    pub fn mount(size: &str) -> Tmpfs {
        let dir = crate::util::tempdir().unwrap();
        let (fstype, opts) = if size == "ramfs" {
            ("ramfs", "mode=0700".to_string())
        } else {
            ("tmpfs", format!("size={size}"))
        };
        let st = Command::new("mount")
            .args(["-t", fstype, "-o", &opts, fstype])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "mount {fstype} failed");
        let d = dir.path().to_path_buf();
        let _reap = super::reap::on_interrupt("a memory filesystem", move || {
            super::reap::unmount(&d);
            super::reap::remove_dir(&d);
        });
        Tmpfs { dir, _reap }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Waits out EBUSY, then detaches: one `umount` left a sweep's tmpfs mounted (and its
        // directory in /tmp) when the kernel had not yet let go of the exited sweeps' files
        // (suite at 2dad72b, safety::concurrent_sweeps_reserve_their_space).
        super::reap::unmount(self.dir.path());
    }
}

/// A child process killed (and reaped) when the guard is dropped, so a failing test leaves
/// no process behind.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run `cmd` (stdout and stderr captured) for at most `limit`: its output, or None when it
/// had to be killed (a process blocked where it must not block).
pub fn output_within(cmd: &mut Command, limit: std::time::Duration) -> Option<Output> {
    use std::io::Read;
    let mut child = KillOnDrop(
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Drained as it comes, so a full pipe cannot block the child.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = r.read_to_end(&mut b);
            b
        })
    };
    let out = drain(Box::new(child.0.stdout.take().unwrap()));
    let err = drain(Box::new(child.0.stderr.take().unwrap()));
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > limit {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Some(Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    })
}

/// A FIFO at `path` (in the test's own directory).
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// The suite's strict mode, `IOSAT_TEST_STRICT=1`: `scripts/test.sh` sets it when it runs as
/// root, after installing every tool the tests use, so that a test that would skip fails
/// instead of passing silently.
pub fn strict() -> bool {
    std::env::var_os("IOSAT_TEST_STRICT").is_some_and(|v| v == "1")
}

/// A test that cannot run because root or a tool the suite installs is missing: prints
/// `skipped: WHY` and the test returns; in strict mode it fails here instead, naming why.
#[track_caller]
pub fn skip(why: &str) {
    assert!(
        !strict(),
        "would skip ({why}), but IOSAT_TEST_STRICT=1: as root with its tools installed the \
         suite runs every test (scripts/test.sh installs them)"
    );
    eprintln!("skipped: {why}");
}

/// A test that cannot run because this machine or kernel lacks a capability that no package
/// installs (BTF, zram, a cgroup io controller, a FUSE mount the sandbox refuses, a sysfs
/// knob of a newer kernel, a clang that is not the object's): prints `skipped: WHY`, in
/// strict mode too.
pub fn skip_lacking(why: &str) {
    eprintln!("skipped: {why}");
}

/// A recording (`stat --record`'s format) of one disk, sdx (8:0), read only, sampled every
/// second for `seconds` intervals: `second(s)` gives interval `s`'s reads, sectors a read,
/// milliseconds of reading (time in flight, Δtime) and of busy time (Δio_ticks). The learning
/// tests' devices of known behaviour, without a device.
pub fn sdx_recording(seconds: i64, second: impl Fn(i64) -> (u64, u64, u64, u64)) -> String {
    let wall0 = 1_795_333_857_000_000_000i64;
    let (mut reads, mut sectors, mut ms, mut ticks) = (0u64, 0u64, 0u64, 0u64);
    let mut rec = format!("#iosat-record 1\nR {wall0} 1000000000\nD 8:0 sdx disk sdx\n");
    for s in 0..=seconds {
        rec.push_str(&format!(
            "T {} {}\n   8       0 sdx {reads} 0 {sectors} {ms} 0 0 0 0 0 {ticks} {ms} 0 0 0 0 0 0\n",
            1_000_000_000_000 + s * 1_000_000_000,
            wall0 + s * 1_000_000_000
        ));
        let (n, size, time, busy) = second(s);
        (reads, sectors, ms, ticks) = (reads + n, sectors + n * size, ms + time, ticks + busy);
    }
    rec
}
