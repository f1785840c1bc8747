//! `iosat top`: orchestration only. A sampling thread — the one live collector
//! (monitor::collect) on a monotonic schedule, or the one replay (monitor::replay) of a
//! recording — sends interval reports through a channel (live: an interval's CPU line and
//! processes before its report, then it rings the UI's sys::tty::Wake); the UI thread
//! (ui::top::term) draws them and never reads /proc. The first sample (or step) is taken before the screen is
//! switched, so that a bad device or file is one plain error line.
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/fsync.rs, cmd/info.rs, cmd/report.rs, cmd/stat.rs, cmd/sweep.rs.

use crate::cli::top::TopArgs;
use crate::config::top::TopSpec;
use crate::error::Error;
use crate::monitor::collect::{Collector, RecordingWriter, Schedule};
use crate::monitor::procs::ProcTracker;
use crate::monitor::replay::{RecordingText, Replay, Step};
use crate::monitor::select::Selection;
use crate::profile::ProfileCache;
use crate::sys::clock;
use crate::sys::procio;
use crate::sys::sched::SchedMark;
use crate::sys::tty::Wake;
use crate::ui::top::app::{App, Source};
use crate::ui::top::term::{self, Feed, Pace};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::Duration;

pub fn run(args: &TopArgs) -> anyhow::Result<i32> {
    let spec = TopSpec::from_args(args)?;
    let profiles = ProfileCache::new(spec.profile_dir.clone(), spec.root.clone());
    // The recording is read before the stop handlers are installed (SA_RESTART): a FIFO
    // named by --replay blocks in open() until a writer comes, and Ctrl-C must still end it.
    let recording = spec
        .replay
        .as_deref()
        .map(|p| RecordingText::open(p).map_err(|e| e.for_flag("--replay")))
        .transpose()?;
    // SIGTERM and SIGHUP end the loop between two events; the guard restores the terminal.
    crate::sys::signal::catch_stop_signals(true);
    let wants_procs = Arc::new(AtomicBool::new(false));
    // Rung by the live sampler after each interval: the UI sleeps until then.
    let wake = Arc::new(Wake::new().map_err(|e| Error::io("<pipe>", e))?);
    let mut sampler_thread = None;
    // The devices shown without `a`: the user's, else what the recording's run showed.
    let mut selection = spec.selection.clone();
    let (source, rx, pace) = match (&spec.replay, recording) {
        (Some(path), Some(recording)) => {
            let (rx, recorded) = replay(&spec, path, recording, profiles)?;
            if let Some(r) = recorded.filter(|_| selection == Selection::default()) {
                selection = r;
            }
            let file = path.display().to_string();
            let pace = Pace::Replay(Duration::from_nanos(spec.interval_ns));
            (Source::Replay { file }, rx, pace)
        }
        _ => {
            let host = crate::sys::hostname(&spec.root).unwrap_or_else(|| "?".into());
            let kernel = crate::sys::kernel_release(&spec.root).unwrap_or_else(|| "?".into());
            let (rx, sampler) = live(&spec, profiles, wants_procs.clone(), wake.clone())?;
            sampler_thread = Some(sampler);
            (Source::Live { host, kernel }, rx, Pace::Live)
        }
    };
    let color = !std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let mut app = App::new(source, selection, color);
    // A recording's percentiles are not shown either: --no-bpf means diskstats alone.
    app.latency = !spec.no_bpf;
    app.as_root = crate::sys::is_root();
    app.cgroups = spec.cgroups;
    let ran = term::run(app, rx, pace, &wants_procs, &wake);
    if let Some(t) = sampler_thread {
        t.stop();
    }
    ran?;
    Ok(crate::error::exit::OK)
}

/// Reports in flight between the threads; the sampler waits when the UI lags (or, in a
/// replay, until the UI wants the next one).
const QUEUE: usize = 4;

/// Send one report; false when the UI is gone.
fn send(tx: &SyncSender<Feed>, f: Feed) -> bool {
    tx.send(f).is_ok()
}

/// The processes pane lists this many.
const PROCS: usize = 20;

/// The live sampler's thread, told to stop when the view ends: it saves what was learned
/// and closes the recording first (issue 26: top saves its learned state at exit, as stat
/// and the exporter do, not only every few minutes).
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

/// How long the view waits at exit for the sampler to save (a state file per device with
/// traffic; a tick of 1,000 devices in flight first).
const SAVE_AT_EXIT: Duration = Duration::from_secs(5);

impl Sampler {
    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.thread().unpark();
        let deadline = std::time::Instant::now() + SAVE_AT_EXIT;
        while !self.thread.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn live(
    spec: &TopSpec,
    profiles: ProfileCache,
    wants_procs: Arc<AtomicBool>,
    wake: Arc<Wake>,
) -> Result<(Receiver<Feed>, Sampler), Error> {
    let recording = RecordingWriter::for_flag(spec.record.as_deref(), spec.interval_ns, &spec.root);
    let mut collector = Collector::new(
        spec.root.clone(),
        spec.collected(),
        false,
        profiles,
        recording,
    );
    // From here on the screen is the view's: warnings are drawn, not printed (the one line
    // saying why there are no live percentiles too; stderr would be under the screen).
    collector.hold_warnings();
    // The block-latency source as `stat` has it, attached before the first sample so that
    // the first interval already has percentiles.
    // Before the source is attached, so its program is loaded once, with the cgroup code.
    if spec.cgroups {
        collector.count_cgroups();
    }
    collector.use_block_latency(spec.no_bpf);
    collector.declare_caps(spec.caps.clone());
    collector.use_bursts(spec.burst_ns);
    match &spec.hindsight {
        // Its line ("hindsight: wrote …") is drawn with the warnings.
        Some(h) => collector.keep_hindsight(h.clone()),
        None => collector.hindsight_off(),
    }
    if let Some(l) = &spec.learn {
        // Saved every few minutes while the view runs (learn::SAVE_EVERY_NS) and at its end.
        collector.observe_with(crate::learn::observer(l.clone()));
    }
    // The first sample here: an unknown DEVICE or an unreadable diskstats is a plain error.
    let mut schedule = Schedule::new(spec.interval_ns);
    schedule.sampled(collector.tick()?.mono_ns);
    let root = spec.root.clone();
    let mut procs = ProcTracker::default();
    let mut host = SchedMark::read(&root);
    let (tx, rx) = sync_channel(QUEUE);
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let thread = std::thread::spawn(move || {
        loop {
            // Until the next sample is due, or the view ends (it unparks this thread).
            // Samples of the collector's own (hindsight's cadence) are read in between.
            let next = schedule.next_at(clock::monotonic_ns());
            collector.wait_until(next, &|| stopped.load(Ordering::Relaxed), &|t| {
                let now = clock::monotonic_ns();
                if t > now {
                    std::thread::park_timeout(Duration::from_nanos(t - now));
                }
            });
            if stopped.load(Ordering::Relaxed) {
                collector.save_learning();
                let _ = collector.finish();
                return;
            }
            let tick = collector.tick();
            // What goes with the interval's report is sent before it: the UI draws once per
            // interval, when the report comes (see ui::top::term::take).
            let mut feeds: Vec<Feed> = collector
                .take_warnings()
                .into_iter()
                .map(Feed::Warning)
                .collect();
            let (report, failed) = match tick {
                Ok(t) => (t.report, None),
                Err(e) => (None, Some(Feed::Failed(e))),
            };
            if let Some(report) = report {
                // The context line: CPU busy, iowait, steal and PSI io over the same interval.
                let mark = SchedMark::read(&root);
                if let Some(d) = SchedMark::between(&host, &mark) {
                    feeds.push(Feed::Host(d));
                }
                host = mark;
                // Who is doing the I/O: read only while that pane is shown.
                if !wants_procs.load(Ordering::Relaxed) {
                    procs = ProcTracker::default();
                } else if let Some(p) =
                    procs.update(&procio::read(&root), clock::monotonic_ns(), PROCS)
                {
                    feeds.push(Feed::Procs(p));
                }
                feeds.push(Feed::Report(report));
            }
            let end = failed.is_some();
            feeds.extend(failed);
            for f in feeds {
                if !send(&tx, f) {
                    // The view is gone: what was learned is saved, the recording synced and
                    // closed (nobody is left to be told of an error there).
                    collector.save_learning();
                    let _ = collector.finish();
                    return;
                }
            }
            wake.ring();
            if end {
                collector.save_learning();
                let _ = collector.finish();
                return;
            }
        }
    });
    Ok((rx, Sampler { stop, thread }))
}

/// The recording's steps, fed from a thread of their own, and the device selection its runs
/// recorded (`#S`), for the view to show what the live run showed.
fn replay(
    spec: &TopSpec,
    path: &Path,
    recording: RecordingText,
    profiles: ProfileCache,
) -> Result<(Receiver<Feed>, Option<Selection>), Error> {
    let RecordingText { text, warnings } = recording;
    let (path, selection) = (path.to_path_buf(), spec.collected());
    let learn = spec.learn.clone();
    let caps = spec.caps.clone();
    let (ready_tx, ready) = sync_channel::<Result<Option<Selection>, Error>>(1);
    let (tx, rx) = sync_channel(0);
    // The replay lives in its thread (its profile lookup is not Send); its first step is
    // reported through `ready` before the screen is switched: a bad file or a DEVICE the
    // recording doesn't have is a plain error line.
    std::thread::spawn(move || {
        let mut profiles = profiles;
        // Profile warnings are dropped: stderr is the screen while the view runs.
        let notes = |profiles: &mut ProfileCache, _: &str| drop(profiles.take_warnings());
        let observer = learn.map(crate::learn::observer);
        let opened = Replay::open(
            &text,
            &path,
            selection,
            false,
            &mut profiles,
            notes,
            observer,
        );
        let mut steps = match opened {
            Ok(s) => s,
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        };
        steps.replayer_mut().set_caps(caps);
        let first = match steps.next().transpose() {
            Ok(f) => f,
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        };
        let _ = ready_tx.send(Ok(steps.recorded_selection().cloned()));
        // What the opener skipped (a cut-off last line, bytes that are not UTF-8) is drawn.
        for w in warnings {
            if !send(&tx, Feed::Warning(w)) {
                return;
            }
        }
        for step in first.into_iter().map(Ok).chain(steps) {
            let feed = match step {
                Ok(Step::Report(r)) => Feed::Report(r),
                Ok(Step::Warning(w)) => Feed::Warning(w),
                Ok(Step::Start { .. }) => continue,
                Err(e) => Feed::Failed(e),
            };
            if !send(&tx, feed) {
                return;
            }
        }
    });
    let recorded = ready.recv().unwrap_or(Ok(None))?;
    Ok((rx, recorded))
}
