//! `iosat top`: frames drawn with ratatui's TestBackend from recordings made up here
//! (snapshots at 80x24 and 160x48), and the real thing in a real terminal (tmux).

use iosat::monitor::interval::IntervalReport;
use iosat::monitor::replay::{Replay, Step};
use iosat::monitor::select::Selection;
use iosat::profile::DeviceProfile;
use iosat::ui::top::app::{App, Key, Source};
use iosat::ui::top::draw;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::sync::Arc;

/// One device of a made-up recording: its kind, profile id, and per-second increments of
/// (reads, read_ms, writes, write_ms, io_ms, weighted_ms) for each sample.
struct Dev {
    major: u32,
    minor: u32,
    name: &'static str,
    kind: &'static str,
    id: Option<&'static str>,
    rate: fn(usize) -> [u64; 6],
}

/// The recording text: 20 samples one second apart.
fn recording(devs: &[Dev]) -> String {
    recording_n(devs, 20)
}

/// The recording text: `n` samples one second apart.
fn recording_n(devs: &[Dev], n: usize) -> String {
    let mut s = String::from("#iosat-record 1\nR 1795333826000000000 1000000000\n");
    for d in devs {
        s.push_str(&format!(
            "D {}:{} {} {} {}\n",
            d.major, d.minor, d.name, d.kind, d.name
        ));
        if let Some(id) = d.id {
            s.push_str(&format!("I {}:{} {} {id}\n", d.major, d.minor, d.name));
        }
    }
    let mut cum: Vec<[u64; 6]> = devs.iter().map(|_| [0; 6]).collect();
    for i in 0..n {
        s.push_str(&format!(
            "T {} {}\n",
            (i as u64 + 1) * 1_000_000_000,
            1_795_333_826_000_000_000i64 + i as i64 * 1_000_000_000
        ));
        for (d, c) in devs.iter().zip(cum.iter_mut()) {
            if i > 0 {
                let r = (d.rate)(i);
                for k in 0..6 {
                    c[k] += r[k];
                }
            }
            s.push_str(&format!(
                " {} {} {} {} 0 {} {} {} 0 {} {} 0 {} {}\n",
                d.major,
                d.minor,
                d.name,
                c[0],
                c[0] * 8,
                c[1],
                c[2],
                c[2] * 8,
                c[3],
                c[4],
                c[5]
            ));
        }
    }
    s
}

fn profile(id: &str) -> Option<Arc<DeviceProfile>> {
    (id == "nvme-test").then(|| {
        Arc::new(DeviceProfile {
            id: id.into(),
            baseline_latency_ns: 100_000.0,
            knee_concurrency: 4,
            max_useful_iops: 20_000.0,
            pattern: "randread".into(),
            block_size: 4096,
            ..Default::default()
        })
    })
}

fn reports(devs: &[Dev]) -> Vec<IntervalReport> {
    let sel = Selection {
        patterns: vec![],
        partitions: true,
        all: true,
    };
    Replay::new(&recording(devs), sel, false, Box::new(profile))
        .unwrap()
        .filter_map(|s| match s.unwrap() {
            Step::Report(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn app(devs: &[Dev]) -> App {
    let mut a = App::new(
        Source::Live {
            host: "testhost".into(),
            kernel: "6.1.0".into(),
        },
        Selection::default(),
        false,
    );
    for r in reports(devs) {
        a.on_report(r);
    }
    a
}

fn frame(a: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| draw::draw(f, a)).unwrap();
    draw::to_text(t.backend().buffer())
}

fn both(name: &str, a: &App) {
    insta::assert_snapshot!(format!("top_{name}_80x24"), frame(a, 80, 24));
    insta::assert_snapshot!(format!("top_{name}_160x48"), frame(a, 160, 48));
}

const IDLE: Dev = Dev {
    major: 8,
    minor: 0,
    name: "sda",
    kind: "disk",
    id: None,
    rate: |_| [0; 6],
};

/// Reads at 2 ms against a 0.1 ms baseline (20x), 8 in flight against a knee of 4, growing.
const SATURATED: Dev = Dev {
    major: 259,
    minor: 0,
    name: "nvme0n1",
    kind: "disk",
    id: Some("nvme-test"),
    rate: |i| {
        let n = 2000 + 200 * i as u64;
        [
            n,
            n * 2 + 10 * i as u64 * i as u64,
            500,
            250,
            1000,
            n * 2 + 125,
        ]
    },
};

/// Busy, no profile.
const BUSY: Dev = Dev {
    major: 8,
    minor: 16,
    name: "sdb",
    kind: "disk",
    id: None,
    rate: |i| [300, 300 * (1 + (i as u64 % 4)), 20, 40, 700, 600],
};

/// Writes only.
const WRITER: Dev = Dev {
    major: 8,
    minor: 32,
    name: "sdc",
    kind: "disk",
    id: None,
    rate: |i| [0, 0, 900, 900 * (2 + (i as u64 % 3)), 990, 2500],
};

const LOOP: Dev = Dev {
    major: 7,
    minor: 0,
    name: "loop0",
    kind: "loop",
    id: None,
    rate: |_| [5, 5, 0, 0, 5, 5],
};

#[test]
fn frame_no_devices() {
    // Only a loop device: hidden by default (a shows it).
    both("no_devices", &app(&[LOOP]));
}

#[test]
fn frame_waiting() {
    let a = App::new(
        Source::Replay {
            file: "x.rec".into(),
        },
        Selection::default(),
        false,
    );
    insta::assert_snapshot!("top_waiting_80x24", frame(&a, 80, 24));
}

#[test]
fn frame_idle() {
    both("idle", &app(&[IDLE]));
}

#[test]
fn frame_saturated_with_profile() {
    both("saturated", &app(&[IDLE, BUSY, SATURATED]));
}

#[test]
fn frame_no_profile() {
    both("no_profile", &app(&[IDLE, BUSY]));
}

#[test]
fn frame_write_heavy() {
    both("write_heavy", &app(&[WRITER, IDLE]));
}

#[test]
fn frame_tiny_terminal() {
    let a = app(&[BUSY]);
    insta::assert_snapshot!("top_tiny_40x10", frame(&a, 40, 10));
}

#[test]
fn frame_help_and_filter() {
    let mut a = app(&[IDLE, BUSY, SATURATED]);
    a.on_key(Key::Char('?'));
    insta::assert_snapshot!("top_help_80x24", frame(&a, 80, 24));
    a.on_key(Key::Esc);
    a.on_key(Key::Char('/'));
    a.on_key(Key::Char('s'));
    a.on_key(Key::Char('d'));
    let f = frame(&a, 80, 24);
    assert!(f.contains("filter: sd"), "{f}");
    assert!(!f.contains("nvme0n1"), "{f}");
}

#[test]
fn saturated_device_sorts_first_and_is_judged() {
    let a = app(&[IDLE, BUSY, SATURATED]);
    let names: Vec<&str> = a.visible().iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["nvme0n1", "sdb", "sda"]);
    let sat = a.visible()[0].sat.clone().unwrap();
    assert!(sat.saturation_r.unwrap() > 10.0, "{sat:?}");
    let f = frame(&a, 160, 48);
    assert!(f.contains("baseline 0.100 ms"), "{f}");
    assert!(f.contains("knee 4"), "{f}");
    // The 1.5x (saturated) and 3x (overloaded) lines of analysis::state.
    assert!(f.contains("1.5x"), "{f}");
    assert!(f.contains("3x"), "{f}");
    assert!(!f.contains("10x"), "{f}");
}

/// The shell line that replays `file` in `iosat top`, from the file's own directory: the
/// title shows the path as given, so a relative name keeps the 120-column title the same at
/// any checkout or temporary-directory path.
pub(crate) fn top_replay(file: &std::path::Path, args: &str) -> String {
    format!(
        "cd '{}' && {} top --replay '{}' {args}",
        file.parent().unwrap().display(),
        env!("CARGO_BIN_EXE_iosat"),
        file.file_name().unwrap().to_str().unwrap()
    )
}

/// A tmux server of the test's own, killed on drop; its socket in a temporary directory,
/// removed with it (`kill-server` leaves the socket file behind).
pub(crate) struct Tmux {
    socket: std::path::PathBuf,
    _dir: tempfile::TempDir,
    /// The server killed if the run is interrupted (support::reap): it is no child of ours.
    _reap: crate::support::reap::Held,
}

impl Tmux {
    pub(crate) fn start() -> Option<Tmux> {
        Tmux::start_sized(120, 40)
    }

    /// A session of `width` x `height` cells (a wide one shows every column of `top`).
    pub(crate) fn start_sized(width: u16, height: u16) -> Option<Tmux> {
        if !crate::util::have("tmux", "-V") {
            crate::util::skip("tmux is not installed (scripts/test.sh installs it)");
            return None;
        }
        let dir = crate::util::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let _reap = {
            let (s, d) = (socket.clone(), dir.path().to_path_buf());
            crate::support::reap::on_interrupt("a tmux server", move || {
                let _ = std::process::Command::new("tmux")
                    .arg("-S")
                    .arg(&s)
                    .arg("kill-server")
                    .output();
                crate::support::reap::remove_dir(&d);
            })
        };
        let t = Tmux {
            socket,
            _dir: dir,
            _reap,
        };
        t.run(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "env -i TERM=xterm-256color PATH=/usr/bin:/bin IOSAT_STATE_DIR= bash --norc --noprofile",
        ]);
        t.keys(&["PS1='PROMPT$ '", "Enter"]);
        t.wait_prompt();
        Some(t)
    }

    pub(crate) fn run(&self, args: &[&str]) -> String {
        let o = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "tmux {args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "t"];
        a.extend_from_slice(keys);
        self.run(&a);
    }

    pub(crate) fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }

    /// The screen once `done` holds of it, polled every 100 ms; after `secs` the test fails
    /// with `what` and the screen (a deadline against a hung test, not a timing assertion).
    #[track_caller]
    pub(crate) fn wait_until(&self, what: &str, secs: u64, done: impl Fn(&str) -> bool) -> String {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            let s = self.screen();
            if done(&s) {
                return s;
            }
            assert!(std::time::Instant::now() < end, "{what}:\n{s}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// The screen once it shows `needle`.
    #[track_caller]
    pub(crate) fn wait_for(&self, needle: &str) -> String {
        self.wait_until(&format!("never showed {needle:?}"), 30, |s| {
            s.contains(needle)
        })
    }

    /// The screen once the shell waits for input again: its last line is the prompt alone.
    /// Not "PROMPT$" anywhere: a view that leaves the alternate screen brings back the line
    /// that started it (the prompt and the command) before the process has ended.
    #[track_caller]
    pub(crate) fn wait_prompt(&self) -> String {
        self.wait_until("the shell never came back", 30, |s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::trim)
                == Some("PROMPT$")
        })
    }

    /// `q` to the view, then the shell back: keys typed while the view still runs are the
    /// view's (an `echo` after it was lost so, in a suite at nice 19 beside the known-device
    /// phase, 2026-12-07).
    #[track_caller]
    pub(crate) fn quit(&self) -> String {
        self.keys(&["q"]);
        self.wait_prompt()
    }

    #[track_caller]
    fn wait_gone(&self, needle: &str) -> String {
        self.wait_until(&format!("still shows {needle:?}"), 30, |s| {
            !s.contains(needle)
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

#[test]
fn report_on_a_terminal_is_text_and_into_a_pipe_is_the_page() {
    let Some(t) = Tmux::start() else { return };
    let file = crate::util::fixture("report/sim_sweep.json");
    let report = format!(
        "cd '{}' && {} report {}",
        file.parent().unwrap().display(),
        env!("CARGO_BIN_EXE_iosat"),
        file.file_name().unwrap().to_str().unwrap()
    );
    // The exit status printed as D0NE: a marker the typed command line does not contain.
    t.keys(&[&format!("clear; {report}; printf 'D%sNE' $?"), "Enter"]);
    let s = t.wait_for("D0NE");
    assert!(s.contains("Baseline (concurrency 1)"), "{s}");
    assert!(!s.contains("<html") && !s.contains("</"), "{s}");
    // Into a pipe the page, as before.
    t.keys(&[
        &format!("clear; {report} | head -c 200 | grep -q '<html'; printf 'P%sGE' $?"),
        "Enter",
    ]);
    t.wait_for("P0GE");
}

/// A recording of `stat loop3` (its `#S` line) replays in top showing loop3, as the
/// live run showed it; without the line, the default selection (the disk, vda).
#[test]
fn top_replays_the_devices_the_recorded_run_showed() {
    let Some(t) = Tmux::start() else { return };
    let text = std::fs::read_to_string(crate::util::fixture("report/loop.rec")).unwrap();
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("sel.rec");
    let sel = r#"#S {"patterns":["loop3"],"partitions":false,"all":false}"#;
    std::fs::write(
        &rec,
        text.replacen("\nD 7:0 ", &format!("\n{sel}\nD 7:0 "), 1),
    )
    .unwrap();
    t.keys(&[&top_replay(&rec, "-i 0.2 --no-profile"), "Enter"]);
    let s = t.wait_for("devices (1)");
    assert!(s.contains("loop3"), "{s}");
    assert!(!s.contains("vda"), "{s}");
    t.quit();
}

#[test]
fn top_in_a_real_terminal() {
    let Some(t) = Tmux::start() else { return };
    let cmd = top_replay(
        &crate::util::fixture("report/loop.rec"),
        "-i 0.2 --no-profile",
    );
    t.keys(&[&cmd, "Enter"]);
    let s = t.wait_for("devices (1)");
    assert!(s.contains("vda"), "{s}");
    assert!(s.contains("%busy"), "{s}");
    assert_eq!(
        t.run(&["display-message", "-p", "-t", "t", "#{alternate_on}"])
            .trim(),
        "1"
    );

    t.keys(&["?"]);
    t.wait_for("keys (Esc closes)");
    t.keys(&["Escape"]);
    t.wait_gone("keys (Esc closes)");

    // Sort: saturation is not shown without a profile, → goes to the first column.
    t.keys(&["Right"]);
    t.wait_for("Device↓");
    t.keys(&["r"]);
    t.wait_for("Device↑");

    // All devices, then a filter.
    t.keys(&["a"]);
    t.wait_for("devices (10)");
    t.keys(&["/", "loop3", "Enter"]);
    let s = t.wait_for("filter 'loop3'");
    assert!(s.contains("devices (1)"), "{s}");
    assert!(s.contains("loop3 latency ms"), "{s}");

    let s = t.quit();
    assert!(!s.contains("iosat top ·"), "the view is gone:\n{s}");
    t.keys(&["echo top_rc=$?", "Enter"]);
    t.wait_for("top_rc=0");
    assert_eq!(
        t.run(&["display-message", "-p", "-t", "t", "#{alternate_on}"])
            .trim(),
        "0"
    );
    // The terminal is back in its normal (cooked, echoing) mode, and iosat exited 0.
    t.keys(&[
        "clear; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e echo; echo END\\_MARK",
        "Enter",
    ]);
    let s = t.wait_for("END_MARK");
    assert!(s.lines().any(|l| l == "icanon"), "{s}");
    assert!(s.lines().any(|l| l == "echo"), "{s}");
}

#[test]
fn sigterm_restores_the_terminal() {
    let Some(t) = Tmux::start() else { return };
    let cmd = top_replay(&crate::util::fixture("report/loop.rec"), "--no-profile");
    t.keys(&[&cmd, "Enter"]);
    t.wait_for("devices (1)");
    // The shell's child is iosat: stop it as `kill` would.
    let shell = t.run(&["display-message", "-p", "-t", "t", "#{pane_pid}"]);
    let shell = shell.trim();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    let pid: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    // SAFETY: kill(2) on the pid of the process this test started through the shell.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    t.wait_prompt();
    assert_eq!(
        t.run(&["display-message", "-p", "-t", "t", "#{alternate_on}"])
            .trim(),
        "0"
    );
    t.keys(&[
        "r=$?; clear; echo top_rc=$r; stty -a | tr ' ;' '\\n\\n' | grep -x icanon; echo END\\_MARK",
        "Enter",
    ]);
    let s = t.wait_for("END_MARK");
    assert!(s.contains("top_rc=130"), "{s}");
    assert!(s.lines().any(|l| l == "icanon"), "{s}");
}

/// The terminal goes away under a running view (the window closed, the tmux server killed):
/// iosat top ends instead of spinning on a terminal that will never send a key (it did, at
/// full CPU, until SIGKILL: crossterm's poll loops on a hung-up terminal).
#[test]
fn a_closed_terminal_ends_the_view() {
    let Some(t) = Tmux::start() else { return };
    let cmd = top_replay(&crate::util::fixture("report/loop.rec"), "--no-profile")
        .replacen("&& ", "&& exec ", 1);
    t.keys(&[&cmd, "Enter"]);
    t.wait_for("devices (1)");
    let pid: i32 = t
        .run(&["display-message", "-p", "-t", "t", "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap();
    t.run(&["kill-server"]);
    let t0 = std::time::Instant::now();
    // The bug spun forever; a minute tells that apart on a busy machine too, where the suite
    // runs this test at nice 19 beside the known-device phase and 10 s of wall time were once
    // not enough for the view to be given the CPU to end (2026-12-06).
    let limit = std::time::Duration::from_secs(60);
    // Its state (the field after the name in /proc/PID/stat), None once it is gone. The
    // view's parent went with the tmux server: it ends as a zombie of init's, which this
    // machine's init reaps a second or more later (measured: ended in ~0.1 s, gone after
    // 1.2-1.7 s; a suite once took that for a view still running), so a zombie has ended.
    let state = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after_name = &stat[stat.rfind(')')? + 2..];
        Some(after_name.split(' ').next()?.to_string())
    };
    while let Some(s) = state().filter(|s| s != "Z" && s != "X") {
        if t0.elapsed() > limit {
            // SAFETY: the process this test started; it must not outlive the test.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("iosat top still running {limit:?} after its terminal closed (state {s})");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn bad_input_is_one_line_before_the_screen_switches() {
    let rec = crate::util::fixture("report/loop.rec");
    let rec = rec.to_str().unwrap();
    // Nothing but the error line (assert_refusals: one line, nothing on stdout): the terminal
    // was never switched.
    crate::util::assert_refusals(&[
        (&["top", "-i", "0"], 2, "'-i'"),
        (
            &["top", "nosuchdev9", "--no-profile", "--replay", rec],
            2,
            "nosuchdev9",
        ),
        (
            &["top", "--replay", "/nonexistent/x.rec"],
            1,
            "--replay /nonexistent/x.rec",
        ),
    ]);
}

#[test]
fn live_view_records_what_stat_replays() {
    let Some(t) = Tmux::start() else { return };
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("top.rec");
    let cmd = format!(
        "{} top -i 0.1 --all --no-profile --record {}",
        env!("CARGO_BIN_EXE_iosat"),
        rec.display()
    );
    t.keys(&[&cmd, "Enter"]);
    let s = t.wait_for("every 0.");
    assert!(s.contains("· kernel "), "{s}");
    // CPU shares over the interval, from sys::sched (the second report has them).
    t.wait_for(" · cpu ");
    t.wait_for("latency ms");
    // Tab, Tab: who is doing the I/O (this test's own iosat and tmux may well be idle).
    t.keys(&["Tab", "Tab"]);
    let s = t.wait_for("processes: storage I/O");
    assert!(s.contains("measuring") || s.contains("COMMAND"), "{s}");
    t.quit();
    let o = crate::util::iosat()
        .args(["stat", "--all", "--no-profile", "--json", "--replay"])
        .arg(&rec)
        .output()
        .unwrap();
    let out = crate::util::ok_stdout(&o);
    assert!(out.lines().count() >= 1, "{out}");
    assert!(out.contains("\"r/s\""), "{out}");
}

#[test]
fn collector_holds_warnings_for_the_view() {
    use iosat::monitor::collect::Collector;
    use iosat::profile::ProfileCache;
    use iosat::sys::Root;
    let dir = crate::util::tempdir().unwrap();
    std::fs::write(
        dir.path().join("diskstats"),
        "   8       0 sda 1 0 8 1 0 0 0 0 0 1 1\nthis is not a diskstats line\n",
    )
    .unwrap();
    let root = Root {
        proc: dir.path().to_path_buf(),
        sys: dir.path().to_path_buf(),
    };
    let sel = Selection {
        patterns: vec![],
        partitions: true,
        all: true,
    };
    let mut c = Collector::new(
        root.clone(),
        sel,
        false,
        ProfileCache::new(None, root),
        None,
    );
    c.hold_warnings();
    c.tick().unwrap();
    let w = c.take_warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("not a diskstats line"), "{w:?}");
    c.tick().unwrap();
    assert!(c.take_warnings().is_empty(), "each distinct warning once");

    let mut a = app(&[IDLE]);
    a.warning = Some(w[0].clone());
    assert!(frame(&a, 80, 24).contains("warning: "));
    a.on_key(Key::Esc);
    assert!(!frame(&a, 80, 24).contains("warning: "));
}

#[test]
fn the_table_scrolls_to_the_selected_device() {
    let devs: Vec<Dev> = (0..20u32)
        .map(|i| Dev {
            major: 8,
            minor: i * 16,
            name: Box::leak(format!("sd{}", (b'a' + i as u8) as char).into_boxed_str()),
            kind: "disk",
            id: None,
            rate: |_| [0; 6],
        })
        .collect();
    let mut a = app(&devs);
    let f = frame(&a, 80, 24);
    assert!(
        f.contains("devices (20)") && f.contains("sda ") && !f.contains("sdt "),
        "{f}"
    );
    for _ in 0..19 {
        a.on_key(Key::Down);
    }
    assert_eq!(a.selected.as_deref(), Some("sdt"));
    let f = frame(&a, 80, 24);
    assert!(f.contains("sdt ") && !f.contains("sda "), "{f}");
}

#[test]
fn frame_processes_pane() {
    use iosat::monitor::procs::{ProcRate, ProcReport};
    use iosat::ui::top::app::Pane;
    let mut a = app(&[IDLE, BUSY]);
    a.on_key(Key::Tab);
    a.on_key(Key::Tab);
    assert_eq!(a.pane, Pane::Processes);
    a.procs = Some(ProcReport {
        top: vec![
            ProcRate {
                pid: 4242,
                comm: "postgres".into(),
                read_bps: 12_500_000.0,
                write_bps: 3_000_000.0,
            },
            ProcRate {
                pid: 77,
                comm: "jbd2/sda1-8".into(),
                read_bps: 0.0,
                write_bps: 1_000_000.0,
            },
        ],
        denied: 120,
    });
    insta::assert_snapshot!("top_processes_80x24", frame(&a, 80, 24));
    // Root is not told to run as root.
    assert!(frame(&a, 80, 24).contains("run as root"));
    a.as_root = true;
    let f = frame(&a, 80, 24);
    assert!(
        !f.contains("run as root") && f.contains("120 refused even to root"),
        "{f}"
    );
    let mut r = App::new(
        Source::Replay {
            file: "x.rec".into(),
        },
        Selection::default(),
        false,
    );
    r.on_key(Key::BackTab);
    assert!(frame(&r, 80, 24).contains("live only"));
}

#[test]
fn context_line_has_cpu_and_pressure() {
    let mut a = app(&[BUSY]);
    a.host = Some(iosat::sys::sched::SchedDelta {
        cpu_busy_pct: Some(12.4),
        cpu_iowait_pct: Some(3.0),
        cpu_steal_pct: Some(0.0),
        psi_io_some_pct: Some(1.5),
        ..Default::default()
    });
    let f = frame(&a, 160, 48);
    let first = f.lines().next().unwrap();
    assert_eq!(
        first,
        "iosat top · testhost · kernel 6.1.0 · cpu 12% iowait 3% steal 0% · psi io 1.5% · every 1.00 s · window 60 s"
    );
}

/// A recording with the block-latency source's `B` lines, made with the real tool as root:
/// `iosat stat --record` on a loop device of its own under direct reads and writes
/// (fixtures/top/make_bpf_loop.sh, which tears the loop device down on every exit).
const BPF_LOOP: &str = "top/bpf_loop.rec";

/// The device table's block-latency columns (with a profile).
const P95_COLUMNS: [&str; 4] = [
    "r_p95_ms",
    "w_p95_ms",
    "p95_vs_baseline_r",
    "p95_vs_baseline_w",
];

/// The loop device's profile (its id in the recording), with a baseline p95 to judge by.
fn loop_profile(id: &str) -> Option<Arc<DeviceProfile>> {
    (id == "loop0-67108864").then(|| {
        Arc::new(DeviceProfile {
            id: id.into(),
            baseline_latency_ns: 20_000.0,
            baseline_p95_ns: Some(30_000.0),
            knee_concurrency: 2,
            max_useful_iops: 5_000.0,
            pattern: "randread".into(),
            block_size: 4096,
            ..Default::default()
        })
    })
}

/// The fixture replayed into an app showing loop0 (with or without the profile).
fn bpf_app(profiled: bool, latency: bool) -> (App, Vec<IntervalReport>) {
    let text = std::fs::read_to_string(crate::util::fixture(BPF_LOOP)).unwrap();
    let sel = Selection {
        patterns: vec![],
        partitions: true,
        all: true,
    };
    let lookup: fn(&str) -> Option<Arc<DeviceProfile>> =
        if profiled { loop_profile } else { |_| None };
    let reports: Vec<IntervalReport> = Replay::new(&text, sel, false, Box::new(lookup))
        .unwrap()
        .filter_map(|s| match s.unwrap() {
            Step::Report(r) => Some(r),
            _ => None,
        })
        .collect();
    let mut a = App::new(
        Source::Replay {
            file: "bpf_loop.rec".into(),
        },
        Selection {
            patterns: vec!["loop0".into()],
            partitions: false,
            all: false,
        },
        false,
    );
    a.latency = latency;
    for r in reports.clone() {
        a.on_report(r);
    }
    (a, reports)
}

/// The last report's block-layer latency of loop0, as the replay computed it.
fn loop0_latency(reports: &[IntervalReport]) -> iosat::monitor::blklat::Measured {
    let d = reports.last().unwrap().devices.iter();
    let d = d.clone().find(|d| d.kernel_name == "loop0").unwrap();
    d.latency.as_ref().unwrap().measured().unwrap().clone()
}

#[test]
fn frame_block_latency_with_profile() {
    let (a, _) = bpf_app(true, true);
    both("block_latency", &a);
    let f = frame(&a, 160, 48);
    for needle in ["r_p95", "w_p95", "r_p95/b", "w_p95/b", "base p95 0.030 ms"] {
        assert!(f.contains(needle), "{needle}:\n{f}");
    }
}

#[test]
fn block_latency_columns_hold_the_replayed_percentiles() {
    let (a, reports) = bpf_app(true, true);
    let m = loop0_latency(&reports);
    let row = a.selected_row().unwrap();
    assert_eq!(row.name, "loop0");
    let value = |key: &str| iosat::ui::top::app::Col::by_key(key).value(row);
    assert_eq!(value("r_p95_ms"), m.read.p95_ms);
    assert_eq!(value("w_p95_ms"), m.write.p95_ms);
    assert!(m.read.p95_ms.is_some() && m.write.p95_ms.is_some(), "{m:?}");
    // p95 ÷ the profile's baseline p95 (30 µs), as the replay judged it.
    let r = value("p95_vs_baseline_r").unwrap();
    assert!(
        (r - m.read.p95_ms.unwrap() * 1e6 / 30_000.0).abs() < 1e-9,
        "{r}"
    );
    assert_eq!(value("p95_vs_baseline_w"), m.p95_vs_baseline_w);
    // The chart history carries the p95 per interval.
    let h = a.history("loop0");
    assert_eq!(h.last().unwrap().r_p95, m.read.p95_ms);
    assert_eq!(h.last().unwrap().w_p95, m.write.p95_ms);
    let keys: Vec<&str> = a.columns(400).iter().map(|c| c.key).collect();
    for k in P95_COLUMNS {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
    // Without a profile: the p95 columns, not the ratios.
    let (b, _) = bpf_app(false, true);
    let keys: Vec<&str> = b.columns(400).iter().map(|c| c.key).collect();
    assert!(
        keys.contains(&"r_p95_ms") && keys.contains(&"w_p95_ms"),
        "{keys:?}"
    );
    assert!(!keys.contains(&"p95_vs_baseline_r"), "{keys:?}");
}

#[test]
fn sort_columns_include_the_live_p95() {
    let (mut a, _) = bpf_app(true, true);
    a.on_key(Key::Char('a'));
    // From the first column rightwards: every shown column is a sort column, p95 ones too.
    let mut seen = Vec::new();
    for _ in 0..a.columns(u16::MAX).len() {
        a.on_key(Key::Right);
        seen.push(a.sort);
    }
    for k in P95_COLUMNS {
        assert!(seen.contains(&k), "{k} in {seen:?}");
    }
    // Sorted by r_p95: largest first, devices without percentiles last.
    a.sort = "r_p95_ms";
    let col = iosat::ui::top::app::Col::by_key("r_p95_ms");
    let v: Vec<f64> = a
        .visible()
        .iter()
        .map(|r| col.value(r).unwrap_or(f64::NEG_INFINITY))
        .collect();
    assert!(v[0].is_finite(), "{v:?}");
    assert!(v.windows(2).all(|w| w[0] >= w[1]), "{v:?}");
    assert!(
        v.iter().any(|x| !x.is_finite()),
        "some device unmeasured: {v:?}"
    );
    let f = frame(&a, 160, 48);
    assert!(f.contains("r_p95↓"), "{f}");
}

#[test]
fn no_bpf_hides_the_recorded_percentiles() {
    let (a, _) = bpf_app(true, false);
    assert!(a.rows.iter().all(|r| r.latency.is_none()));
    assert!(a.history("loop0").iter().all(|p| p.r_p95.is_none()));
    let keys: Vec<&str> = a.columns(400).iter().map(|c| c.key).collect();
    assert!(!keys.iter().any(|k| k.contains("p95")), "{keys:?}");
    let f = frame(&a, 160, 48);
    assert!(!f.contains("p95"), "{f}");
}

#[test]
fn no_bpf_is_accepted_in_a_real_terminal() {
    let Some(t) = Tmux::start() else { return };
    let run = |extra: &str| {
        top_replay(
            &crate::util::fixture(BPF_LOOP),
            &format!("-i 0.2 --no-profile {extra} loop0"),
        )
    };
    t.keys(&[&run(""), "Enter"]);
    // Every interval of the recording has its `B` line: the first report has percentiles.
    let s = t.wait_for("devices (1)");
    assert!(s.contains("r_p95") && s.contains("w_p95"), "{s}");
    t.quit();
    t.keys(&["clear", "Enter"]);
    t.wait_gone("iosat top");
    t.keys(&[&run("--no-bpf"), "Enter"]);
    let s = t.wait_for("devices (1)");
    assert!(s.contains("loop0"), "{s}");
    assert!(!s.contains("p95"), "--no-bpf shows no percentiles:\n{s}");
    t.quit();
    t.keys(&["echo top_rc=$?", "Enter"]);
    t.wait_for("top_rc=0");
}

#[test]
fn live_view_attaches_the_block_latency_source() {
    if !crate::util::is_root() || !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        crate::util::skip_lacking(
            "live_view_attaches_the_block_latency_source: needs root and BTF",
        );
        return;
    }
    let Some(t) = Tmux::start() else { return };
    let lo = crate::util::LoopDev::new(16 << 20);
    let cmd = format!(
        "{} top -i 0.2 --no-profile --all {}",
        env!("CARGO_BIN_EXE_iosat"),
        lo.name()
    );
    t.keys(&[&cmd, "Enter"]);
    t.wait_for("devices (1)");
    // Direct reads and writes until an interval has them (a deadline, not a timing
    // assertion): the table gets the block layer's p95 per direction, the chart its lines.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let s = loop {
        crate::stat::direct_io(&lo.path, 200, 100);
        let s = t.screen();
        if s.contains("r_p95") && s.contains("w_p95") {
            break s;
        }
        assert!(std::time::Instant::now() < end, "no p95 columns:\n{s}");
    };
    // Attached as root: no warning of a refusal. (A busy machine may rightly warn that the
    // source saw only part of the completions diskstats counted in its first intervals: that
    // is the attached source speaking, not a refusal.)
    let warned = s.lines().find(|l| l.contains("warning:"));
    assert!(
        warned.is_none_or(|w| w.contains("the block-latency source saw")),
        "the source attached as root:\n{s}"
    );
    t.quit();
    t.keys(&["clear; echo top_rc=$?", "Enter"]);
    t.wait_for("top_rc=0");

    // No BTF under the sys root: one line says why, drawn on the view's warning line.
    let empty = crate::util::tempdir().unwrap();
    t.keys(&[
        &format!("{cmd} --sys-root {}", empty.path().display()),
        "Enter",
    ]);
    let s = t.wait_for("warning:");
    assert!(s.contains("BTF"), "{s}");
    crate::stat::direct_io(&lo.path, 200, 100);
    t.quit();
    t.keys(&["clear; echo top_rc=$?", "Enter"]);
    t.wait_for("top_rc=0");

    // --no-bpf: no warning, no p95, whatever the I/O.
    t.keys(&[&format!("{cmd} --no-bpf"), "Enter"]);
    t.wait_for("devices (1)");
    for _ in 0..3 {
        crate::stat::direct_io(&lo.path, 200, 100);
    }
    t.wait_for("every 0.20 s");
    let s = t.screen();
    assert!(!s.contains("p95") && !s.contains("warning:"), "{s}");
    t.quit();
    t.keys(&["echo top_rc=$?", "Enter"]);
    t.wait_for("top_rc=0");
}

/// Issue 28 item 5 / issue 24 item 5: `top --replay` reads a recording with a line that is
/// not UTF-8 and a cut-off last line as `stat --replay` does (it refused the whole file).
#[test]
fn replay_skips_bytes_that_are_not_utf8_and_a_cut_off_last_line() {
    let Some(t) = Tmux::start() else { return };
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("cut.rec");
    let mut bytes = std::fs::read(crate::util::fixture("report/loop.rec")).unwrap();
    bytes.extend_from_slice(b"# \xff\nT 17953338");
    std::fs::write(&rec, bytes).unwrap();
    let cmd = top_replay(&rec, "--no-profile");
    t.keys(&[&cmd, "Enter"]);
    t.wait_for("devices (1)");
    t.quit();
}

/// The view after `n` seconds of `dev` replayed with learning on (in memory), no profile:
/// what a live `top` shows once it has learned from that traffic.
fn learned_app(dev: Dev, n: usize) -> App {
    let sel = Selection {
        patterns: vec![],
        partitions: true,
        all: true,
    };
    let mut replay = Replay::new(&recording_n(&[dev], n), sel, false, Box::new(profile)).unwrap();
    replay
        .replayer_mut()
        .observe_with(iosat::learn::in_memory());
    let mut a = App::new(
        Source::Live {
            host: "testhost".into(),
            kernel: "6.1.0".into(),
        },
        Selection::default(),
        false,
    );
    for r in replay.filter_map(|s| match s.unwrap() {
        Step::Report(r) => Some(r),
        _ => None,
    }) {
        a.on_report(r);
    }
    a
}

/// A disk without a profile, 8:16 sdb (its rates each test's own).
const SDB: Dev = Dev {
    major: 8,
    minor: 16,
    name: "sdb",
    kind: "disk",
    id: None,
    rate: |_| [0; 6],
};

/// No profile, 1,000 reads a second at 1 ms, one in flight (a baseline after 30 intervals),
/// then 4 in flight at 4 ms: the view judges against the learned baseline, says so in the
/// table's title, and its saturation pane gives the learned judgement rather than asking for
/// a sweep.
#[test]
fn frame_judged_against_a_learned_baseline() {
    const LEARNED: Dev = Dev {
        rate: |i| {
            if i < 40 {
                [1000, 1000, 0, 0, 1000, 1000]
            } else {
                [1000, 4000, 0, 0, 1000, 4000]
            }
        },
        ..SDB
    };
    let f = frame(&learned_app(LEARNED, 45), 160, 48);
    assert!(
        f.contains("judged against: learned from 44 s of traffic, 44 intervals (sdb)"),
        "{f}"
    );
    assert!(f.contains("saturation (learned)"), "{f}");
    assert!(f.contains("overloaded at 4.0x the learned baseline"), "{f}");
    assert!(!f.contains("needs its baseline"), "{f}");
}

/// The same reads at 1 ms, one in flight, for 44 s, then a second of 2 writes and no read (a
/// journal's flush): that second's learned judgement is the writes', with nothing learned of
/// them. The pane and the title still judge by the reads' learned baseline (their curve is
/// among the interval's directions); they said "no profile for sdb: saturation needs its
/// baseline" and asked for a sweep, for that second, of a device learned for 44 s.
#[test]
fn a_second_of_a_few_writes_keeps_the_learned_baseline_in_view() {
    const WRITES_LAST: Dev = Dev {
        rate: |i| {
            if i < 44 {
                [1000, 1000, 0, 0, 1000, 1000]
            } else {
                [0, 0, 2, 1, 1, 1]
            }
        },
        ..SDB
    };
    let f = frame(&learned_app(WRITES_LAST, 45), 160, 48);
    assert!(f.contains("saturation (learned)"), "{f}");
    assert!(f.contains("judged against: learned from"), "{f}");
    assert!(f.contains("baseline 1.00 ms"), "{f}");
    assert!(!f.contains("needs its baseline"), "{f}");
    // The gauge line gives the judgement's words, not a request for a profile.
    assert!(f.contains("sdb: unknown, headroom not known"), "{f}");
    assert!(!f.contains("headroom needs a profile"), "{f}");
}

/// No profile, 100 reads a second at 10 ms, one in flight, for 15 s: too few requests for a
/// baseline, a thin estimate of 10 ms from the tenth second (issue 37). The saturation pane
/// and the table's title judge by it, saying "estimated", never asking for a sweep.
#[test]
fn frame_judged_against_a_learned_estimate() {
    const THIN: Dev = Dev {
        rate: |_| [100, 1000, 0, 0, 1000, 1000],
        ..SDB
    };
    let f = frame(&learned_app(THIN, 15), 160, 48);
    assert!(f.contains("judged against: learned from"), "{f}");
    assert!(f.contains("saturation (learned)"), "{f}");
    assert!(f.contains("ok at 1.0x the estimated baseline"), "{f}");
    assert!(!f.contains("the learned baseline"), "{f}");
    assert!(!f.contains("needs its baseline"), "{f}");
}

/// top saves what it learned when the view ends (issue 26), not only every few minutes:
/// a loop device read during the view has its state file in --state-dir after q.
#[test]
fn top_saves_its_learned_state_at_exit() {
    if !crate::util::is_root() {
        crate::util::skip("needs root (a loop device)");
        return;
    }
    let Some(t) = Tmux::start() else { return };
    let dev = crate::util::LoopDev::new(16 << 20);
    let state = crate::util::tempdir().unwrap();
    let cmd = format!(
        "{} top -i 0.1 --all --no-profile --no-bpf --state-dir {} {}",
        env!("CARGO_BIN_EXE_iosat"),
        state.path().display(),
        dev.name()
    );
    t.keys(&[&cmd, "Enter"]);
    t.wait_for("latency ms");
    // Reads the view sees (direct, so the page cache does not answer them), repeated until
    // the device's row shows them; then, once it shows none again, an interval that holds
    // them has been through the learner, however slow the machine is.
    let dev_path = dev.path.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let st = std::process::Command::new("dd")
                    .arg(format!("if={dev_path}"))
                    .args(["of=/dev/null", "bs=4k", "count=2000", "iflag=direct"])
                    .stderr(std::process::Stdio::null())
                    .status()
                    .unwrap();
                assert!(st.success());
            }
        })
    };
    let reads_shown = |s: &str| {
        s.lines()
            .filter_map(|l| l.trim_start_matches('│').strip_prefix(dev.name()))
            .filter(|rest| rest.starts_with(' '))
            .filter_map(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
            .any(|r_s| r_s > 0.0)
    };
    let wait_until = |what: &str, f: &dyn Fn(&str) -> bool| {
        t.wait_until(&format!("never {what}"), 60, f);
    };
    wait_until("showed the reads", &reads_shown);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    reader.join().unwrap();
    wait_until("showed the reads end", &|s: &str| !reads_shown(s));
    t.quit();
    // One state file (the store keeps its lock file, `.<name>.lock`, beside it).
    let files: Vec<_> = crate::util::entries(&state.path().join("learned"))
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
}

/// Hindsight in `top` (issue 41): SIGUSR1 to a live view writes the samples held as a
/// recording, and the view says where.
#[test]
fn sigusr1_to_a_live_view_writes_its_hindsight() {
    let Some(t) = Tmux::start() else { return };
    let dir = crate::util::tempdir().unwrap();
    let hs = dir.path().join("hs");
    let cmd = format!(
        "{} top -i 0.2 --no-learn --no-bpf --no-profile --hindsight 1m --hindsight-tail 0 \
         --hindsight-interval 0.2s \
         --hindsight-dir '{}'",
        env!("CARGO_BIN_EXE_iosat"),
        hs.display()
    );
    t.keys(&[&cmd, "Enter"]);
    t.wait_for("iosat top");
    let shell = t.run(&["display-message", "-p", "-t", "t", "#{pane_pid}"]);
    let shell = shell.trim();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    let pid: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    // Two samples held at least, then the request.
    std::thread::sleep(std::time::Duration::from_millis(600));
    // SAFETY: kill(2) on the pid of the process this test started through the shell.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGUSR1) }, 0);
    let s = t.wait_for("hindsight: wrote");
    assert!(s.contains("iosat top"), "the view goes on:\n{s}");
    let dumps: Vec<_> = std::fs::read_dir(&hs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dumps.len(), 1, "{dumps:?}");
    let text = std::fs::read_to_string(&dumps[0]).unwrap();
    assert!(text.starts_with("#iosat-record 1\n"), "{text}");
    assert!(text.matches("\nT ").count() >= 2, "{text}");
    t.quit();
}

/// The headroom gauge is the one judgement's room (issue 37, "no headroom while overloaded,
/// nor from a curve the current mix does not match"): reads alone at the profile's baseline
/// draw their share of the sweep's 20,000 (5,000 of 20,000 read IOPS, a quarter filled);
/// reads beside as many writes, which the read sweep never measured, draw no share (no
/// room known: the gauge empty and the IOPS alone); a device saturated against its profile
/// draws a full gauge with no "of 20000", where it drew its IOPS' share of the sweep's
/// figure (a third, green, beside "headroom 0").
#[test]
fn the_gauge_draws_the_judgements_room_not_the_sweeps_figure() {
    // 5,000 requests a second at 0.1 ms each (the profile's baseline), one in flight at most.
    const READS: Dev = Dev {
        id: Some("nvme-test"),
        rate: |_| [5000, 500, 0, 0, 500, 500],
        ..SATURATED
    };
    const HALF: Dev = Dev {
        id: Some("nvme-test"),
        rate: |_| [5000, 500, 5000, 500, 1000, 1000],
        ..SATURATED
    };
    let gauge_line = |a: &App| {
        let f = frame(a, 160, 48);
        f.lines()
            .find(|l| l.contains("nvme0n1: "))
            .unwrap_or_else(|| panic!("no gauge line: {f}"))
            .to_string()
    };
    let filled = |l: &str| l.chars().filter(|&c| c == '█').count();
    let reads = gauge_line(&app(&[READS]));
    assert!(
        reads.contains("ok (read 1.0x swept), headroom 15000"),
        "{reads}"
    );
    assert!(reads.contains("· 5000 of 20000 read IOPS"), "{reads}");
    // A quarter of 160 cells, less the label's.
    assert!((30..=40).contains(&filled(&reads)), "{reads}");
    let half = gauge_line(&app(&[HALF]));
    assert!(half.contains("headroom not known"), "{half}");
    assert!(half.contains("· 10000 IOPS"), "{half}");
    assert!(!half.contains("of 20000"), "{half}");
    assert_eq!(filled(&half), 0, "{half}");
    let sat = gauge_line(&app(&[SATURATED]));
    assert!(sat.contains("headroom 0 · 6300 IOPS"), "{sat}");
    assert!(!sat.contains("of 20000"), "{sat}");
    // Full: no empty cell beside the label (an unfilled part is blanks; the label's
    // centring may leave one).
    let label = &sat[sat.find("nvme0n1: ").unwrap()..sat.rfind("IOPS").unwrap() + 4];
    let blanks = sat.replace(label, "").matches(' ').count();
    assert!(blanks <= 1, "{blanks} empty cells: {sat}");
}
