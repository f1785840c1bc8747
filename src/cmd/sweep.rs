//! `iosat sweep`: orchestration only — validated spec in, target opened, engine chosen
//! (load/engine.rs), levels run by the level driver (load/driver.rs) with the progress bar
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
    let (mut engine, engine_note) = engine::make(&choice, target.as_ref())?;
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
    for n in choice_note
        .into_iter()
        .chain(engine_note)
        .chain(limit_notes)
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
        if let Some(mut gen) = open_generator(&choice, engine.name(), target.as_ref())? {
            open_loop(
                o,
                &plan,
                &mut gen,
                watch.as_ref(),
                &progress,
                &mut report,
                &mut write_files,
            )?;
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

/// The open-loop levels (`--rate`), after the closed loop's when it ran: the pool sized
/// (load/open.rs `pool_size`), one level per rate, the verdict refreshed and the files
/// rewritten after each.
fn open_loop(
    o: &crate::load::open::OpenPlan,
    plan: &crate::load::driver::SweepPlan,
    gen: &mut OpenGenerator,
    watch: Option<&DeviceWatch>,
    progress: &ProgressBar,
    report: &mut SweepReport,
    write_files: &mut dyn FnMut(&SweepReport) -> Result<()>,
) -> Result<()> {
    use crate::load::driver::LevelProgress;
    use crate::load::open::{self, OpenSpec};
    use crate::load::open_result::OpenLoopInfo;
    let knee = report.verdict.as_ref().map(|v| v.knee_concurrency);
    let (max_inflight, why) = open::pool_size(o.max_inflight, knee);
    if let Some(n) = gen.note.take() {
        crate::error::note(&n);
        report.notes.push(n);
    }
    if report.levels.is_empty() {
        // No closed loop ran: the report names the open loop's generator, not the engine
        // that would have run it (the sim stays the sim: its device is what is measured).
        report.workload.engine = match gen.name {
            "sim" => "sim".into(),
            name => format!("open ({name})"),
        };
        report.workload.levels = String::new();
    }
    crate::error::note(&why);
    report.open_loop = Some(OpenLoopInfo {
        rates: o.rates_text.clone(),
        arrivals: o.arrivals,
        max_inflight,
        max_inflight_why: why,
        generator: gen.name.into(),
        target: o.target,
        verdict: None,
    });
    let closed_max = report.verdict.as_ref().map(|v| v.peak_iops);
    let rates = o.rates(closed_max);
    let search = o.target.zip(closed_max.filter(|m| *m > 0.0));
    if rates.is_empty() && search.is_none() {
        report.notes.push(
            "the closed loop measured no maximum, so no rate was offered (--rate auto and \
             --target-p99 start from it)"
                .into(),
        );
    }
    // --target-p99: the closed loop's estimate brackets the search (analysis::open).
    let estimate = search.and_then(|(t, _)| {
        crate::analysis::open::estimate_from_closed(&report.points(), t).map(|a| a.iops)
    });
    let next_rate = |i: usize, r: &SweepReport| -> Option<f64> {
        match search {
            Some((t, max)) => {
                let pts: Vec<_> = r
                    .open_levels
                    .iter()
                    .map(crate::load::open_result::OpenLevelResult::point)
                    .collect();
                crate::analysis::open::search_next(&pts, t, max, estimate)
            }
            None => rates.get(i).copied(),
        }
    };
    let first = OpenSpec {
        rate_per_s: 1.0,
        arrivals: o.arrivals,
        max_inflight,
    };
    report.complete = false;
    let base = report.levels.len() + usize::from(report.baseline_remeasured.is_some());
    let mut i = 0;
    while let Some(rate) = next_rate(i, report) {
        if crate::sys::signal::stop_requested() {
            report.interrupted = true;
            break;
        }
        let spec = OpenSpec {
            rate_per_s: rate,
            ..first
        };
        let (r, cut) = open::measure(gen.engine.as_mut(), plan, spec, base + i, watch, progress)?;
        match r {
            // A level cut short offered its rate for part of its window only: its achieved
            // rate and lateness would read as "not kept" and be judged beyond capacity.
            // Finished levels stay (docs/design.md §3.4); this one is left out, said so.
            Some(_) if cut => report.notes.push(format!(
                "the open-loop level at {rate:.0} IOPS offered was interrupted and is left out"
            )),
            Some(r) => {
                progress.open_level_done(&r);
                report.open_levels.push(r);
            }
            None => {}
        }
        report.interrupted |= cut;
        report.refresh_open_verdict();
        write_files(report)?;
        if report.interrupted {
            break;
        }
        i += 1;
    }
    report.complete = !report.interrupted;
    Ok(())
}

/// The open loop's generator: the engine that runs its levels (`open::measure` sets each
/// level's rate and pool), its name for the report (`open_loop.generator`) and a note when the
/// engine chosen could not run it.
struct OpenGenerator {
    engine: Box<dyn crate::load::Engine + Send>,
    name: &'static str,
    note: Option<String>,
}

/// The generator for `--rate`: the sim's, in simulated time; else on the target, the one the
/// sweep's engine (`engine_name`, after any fallback) decides: io_uring or threads. None
/// without either.
fn open_generator(
    choice: &EngineChoice,
    engine_name: &str,
    t: Option<&target::Target>,
) -> Result<Option<OpenGenerator>> {
    use crate::load::open::{self, OpenEngine, OpenSpec};
    let unset = OpenSpec {
        rate_per_s: 1.0,
        arrivals: Default::default(),
        max_inflight: 1,
    };
    Ok(match (choice, t) {
        (EngineChoice::Sim(text), _) => Some(OpenGenerator {
            engine: Box::new(crate::load::open_sim::OpenSimEngine::new(
                text.parse()?,
                unset,
            )),
            name: "sim",
            note: None,
        }),
        (_, Some(t)) => {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&t.file);
            let (generator, note) = open::generator_for(engine_name, fd)?;
            Some(OpenGenerator {
                engine: Box::new(OpenEngine::new(
                    fd,
                    t.size_bytes,
                    t.path.clone(),
                    unset,
                    generator,
                )),
                name: generator.as_str(),
                note,
            })
        }
        (_, None) => None,
    })
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
