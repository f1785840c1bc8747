//! `iosat sweep`: orchestration only — validated spec in, target opened, engine chosen
//! (load/engine.rs), levels run by the level drivers (load/driver.rs, and load/open/ for
//! `--rate`) with the progress bar
//! (ui/progress.rs), the report rendered (report/sweep.rs) and written to `-o` and `--html`
//! after every level, then printed and saved as a profile unless load/trust.rs doubts it
//! (exit 4 without --force). Ctrl-C stops the level in flight, keeps what was measured,
//! removes the test file, exits 130.
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs,
//! cmd/fsync.rs, cmd/info.rs, cmd/report.rs, cmd/stat.rs, cmd/top.rs.

use crate::cli::sweep::SweepArgs;
use crate::config::sweep::{self as config, EngineChoice, SweepSpec};
use crate::error::{Error, Result};
use crate::load::driver::{self, kernel_watch, LevelDriver};
use crate::load::engine;
use crate::load::open::{self, driver::OpenDriver};
use crate::load::result::SweepReport;
use crate::load::target;
use crate::monitor::watch::DeviceWatch;
use crate::profile;
use crate::report::sweep::render;
use crate::ui::progress::ProgressBar;

pub fn run(args: &SweepArgs) -> anyhow::Result<i32> {
    let spec = config::build(args)?;
    // Ctrl-C, SIGTERM, SIGHUP: stop the level, keep what was measured, remove the test file.
    // SA_RESTART keeps pread/pwrite and io_uring_enter from failing with EINTR in the workers.
    crate::sys::signal::catch_stop_signals(true);
    Ok(sweep(&spec)?)
}

fn sweep(spec: &SweepSpec) -> Result<i32> {
    let plan = spec.plan();
    let progress = ProgressBar::new(!spec.no_progress, plan.planned_levels());
    let target = open_target(spec, &progress)?;
    let watch = target
        .as_ref()
        .and_then(|t| kernel_watch(&spec.root, t))
        .map(|w| w.with_block_latency(spec.no_bpf));
    let (choice, choice_note) = engine::choose(&spec.engine, spec.engine_given, watch.as_ref());
    let (mut engine, ran, engine_note) = engine::make(&choice, target.as_ref())?;
    if let Some(r) = spec.limits.rate_limit_iops {
        // config/sweep.rs chose the sync engine, which paces.
        let paced = engine.limit_rate(r);
        debug_assert!(paced, "--rate-limit on an engine that can't pace");
    }

    let mut notes: Vec<String> = Vec::new();
    if let Some(t) = &target {
        // Warnings that the numbers may not be about a disk (tmpfs, page cache) go to stderr
        // too, so `--json > file` does not hide them.
        let cache = driver::cache_notes(&spec.root, t, watch.as_ref());
        for n in t.notes.iter().chain(&cache) {
            crate::error::warn(n);
        }
        notes.extend(t.notes.iter().cloned());
        notes.extend(t.settled.clone());
        notes.extend(cache);
    }
    let (limits, limit_notes) = driver::io_limits(watch.as_ref());
    let (declared_cap, cap_note) = declared_cap(spec, watch.as_ref());
    for n in choice_note
        .into_iter()
        .chain(engine_note)
        .chain(limit_notes)
        .chain(cap_note)
    {
        crate::error::note(&n);
        notes.push(n);
    }
    let mut report = driver::start_report(
        &plan,
        engine.as_ref(),
        choice.spec_text(),
        target.as_ref(),
        watch.as_ref(),
        notes,
    );
    report.limits = limits;
    report.declared_cap = declared_cap;
    report.workload.limits = (!spec.limits.is_none()).then_some(spec.limits);

    let mut out = spec.output.open()?;
    // Partial results in -o and --html after every level (docs/design.md §3.4), and the final ones.
    let mut write_files = |r: &SweepReport| -> Result<()> { out.files(&|f| render(r, f)) };
    let closed = spec.open.as_ref().map_or(true, |o| o.closed_first);
    if closed {
        LevelDriver::new(
            engine.as_mut(),
            &plan,
            watch.as_ref(),
            &progress,
            &mut write_files,
        )
        .run(&mut report)?;
    }
    if let (Some(o), false) = (&spec.open, report.interrupted) {
        if let Some(mut gen) = open::generator::choose(&ran, target.as_ref())? {
            let mut driver = OpenDriver {
                gen: &mut gen,
                open: o,
                plan: &plan,
                watch: watch.as_ref(),
                progress: &progress,
                after_level: &mut write_files,
            };
            driver.run(&mut report)?;
        }
    }
    progress.clear();
    out.result(&|f| render(&report, f))?;
    if spec.save_profile && report.complete && !report.levels.is_empty() {
        save_profile(spec, &report, watch.as_ref())?;
    }
    drop(target);
    if report.interrupted {
        return Err(Error::Interrupted);
    }
    Ok(crate::error::exit::OK)
}

/// The cap the swept device was declared with (issue 42): the command line's figures, each
/// over the one its profile keeps (found as `stat` finds it: the device's own, else a model
/// profile it matches), with a note naming the profile when a figure came from it. A sweep
/// with `--save-profile` then keeps the profile's cap.
fn declared_cap(
    spec: &SweepSpec,
    watch: Option<&DeviceWatch>,
) -> (
    Option<crate::analysis::declared::DeclaredCap>,
    Option<String>,
) {
    use crate::profile::ProfileLookup;
    let given = spec.declared_cap;
    let Some(w) = watch else {
        return (given, None);
    };
    let mut cache = profile::ProfileCache::new(spec.profile_dirs.clone(), w.root.clone());
    let found = cache.device_id(&w.dev).and_then(|id| cache.by_id(&id).ok());
    for warning in cache.take_warnings() {
        crate::error::warn(warning);
    }
    let Some(found) = found else {
        return (given, None);
    };
    let p = &found.profile;
    let saved = p
        .declared_cap
        .or(p.write.as_ref().and_then(|w| w.declared_cap));
    let Some(saved) = saved else {
        return (given, None);
    };
    let mut taken = crate::analysis::declared::DeclaredCap::default();
    for (dim, v) in saved.figures() {
        if given.and_then(|g| g.get(dim)).is_none() {
            taken.set(dim, v);
        }
    }
    if taken.is_empty() {
        return (given, None);
    }
    let note = format!(
        "declared cap {} from the device's profile {} (--cap-iops, --cap-mbps override it)",
        taken.words(),
        found.path
    );
    (Some(given.map_or(saved, |g| g.or(saved))), Some(note))
}

/// The target, opened or laid out (the bar says so while a test file is laid out); None for
/// the sim.
fn open_target(spec: &SweepSpec, progress: &ProgressBar) -> Result<Option<target::Target>> {
    if matches!(spec.engine, EngineChoice::Sim(_)) {
        return Ok(None);
    }
    if let Some(dir) = target::layout_dir(&spec.target) {
        progress.say(&format!(
            "laying out the test file {}/{}* (removed at the end) ...",
            dir.display(),
            target::LEFTOVER_PREFIX
        ));
    }
    let t = target::open(&spec.target, crate::sys::signal::stop_flag());
    progress.clear();
    t.map(Some)
}

fn save_profile(spec: &SweepSpec, report: &SweepReport, watch: Option<&DeviceWatch>) -> Result<()> {
    let doubts = crate::load::trust::profile_doubts(report);
    if !doubts.is_empty() && !spec.force {
        return Err(Error::Safety(format!(
            "--save-profile: not storing this profile: {}; --force stores it anyway",
            doubts.join("; ")
        )));
    }
    let dir = spec.profile_dir.clone().ok_or_else(|| {
        Error::usage(
            "--save-profile",
            "",
            "needs a profile directory: set --profile-dir, $XDG_STATE_HOME or $HOME",
        )
    })?;
    let Some((w, id)) = watch.and_then(|w| Some((w, profile::device_id(&w.root, &w.dev)?))) else {
        crate::error::note("no device identity known for this target; profile not saved");
        return Ok(());
    };
    // The device's size, scheduler and model now, so `stat` can tell when it changed since.
    let json = profile::profile_json(
        report,
        &profile::DeviceState::read(&w.root, &w.dev),
        &profile::Extras::default(),
    );
    let path = profile::save(&dir, &id, &json)?;
    crate::error::say(format_args!("iosat: profile saved to {}", path.display()));
    Ok(())
}
