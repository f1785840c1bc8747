//! `iosat analyze`: orchestration only — validate, read the files (import::load), build the report, write it
//! through the one output sink (cmd/sink.rs) with the renderer `iosat report` uses
//! (report/analyze.rs): stdout, `-o FILE`, and the page to `--html FILE`. A recording's
//! devices are named with their profile (profile::ProfileCache, by the recorded id).
//! Must not import: cmd/compare.rs, cmd/completions.rs, cmd/exporter.rs, cmd/fsync.rs, cmd/info.rs,
//! cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::analyze::AnalyzeArgs;
use crate::config::analyze::AnalyzeSpec;
use crate::import::{self, report, Ids};

/// Which profile each recorded device has, named as `stat` names the one it judges by (the
/// profile of its recorded id, in the profile directories: `$IOSAT_PROFILE_DIR` or the
/// default, then the shared ones), with where its learned baseline disagrees; when it has
/// none of its own and model profiles exist, that a recording holds no model facts to match
/// them by (one line, not silence).
fn name_profiles(rep: &mut report::AnalyzeReport, files: &[(String, Ids)]) {
    let Ok(dirs) = crate::config::profile::resolve_dirs(
        &crate::cli::ProfileArgs::default(),
        crate::config::profile::Access::Read,
    ) else {
        return;
    };
    let mut cache = crate::profile::ProfileCache::new(dirs, crate::sys::Root::default());
    for (file, ids) in files {
        for (name, id) in ids {
            let Some(d) = rep
                .devices
                .iter_mut()
                .find(|d| d.device == *name && d.file == *file)
            else {
                continue;
            };
            if let Some(p) = cache.profile(id) {
                d.diagnosis.push(format!(
                    "{name}: its profile is {} (swept baseline {}); the diagnosis above is of the \
recording's own traffic",
                    p.judged_against(),
                    crate::analysis::text::fmt_latency_ns(p.baseline_latency_ns)
                ));
                d.diagnosis.extend(p.bound());
                let learned = d.learned.as_ref();
                d.diagnosis.extend(
                    learned.and_then(|l| crate::learn::disagreement(l, p.baseline_latency_ns)),
                );
            } else if let Some(why) = cache.model_facts_missing(id) {
                d.diagnosis.push(format!("{name}: {why}"));
            }
        }
    }
}

/// `--aws-stats DEV=FILE`: each file's period set beside the first recording that holds DEV
/// (issue 42; import::amzn), in lines for the report's notes.
fn aws_beside(spec: &AnalyzeSpec) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for (dev, file) in &spec.aws_stats {
        let (text, _) = crate::sys::fs::read_text(file)?;
        let period =
            import::amzn::parse(&text).map_err(|why| crate::error::Error::parse(file, 1, why))?;
        let totals = spec.files.iter().find_map(|f| {
            let (t, _) = crate::sys::fs::read_text(f).ok()?;
            import::diskstats::detect(&t)?;
            import::diskstats::totals(&t, dev)
        });
        match totals {
            Some((secs, requests)) => {
                out.extend(import::amzn::beside(&period, dev, secs, requests))
            }
            None => out.push(format!(
                "{dev}: --aws-stats {}: no recording given holds this device; its counters are \
                 not set beside anything",
                file.display()
            )),
        }
    }
    Ok(out)
}

pub fn run(args: &AnalyzeArgs) -> anyhow::Result<i32> {
    let spec = AnalyzeSpec::from_args(args)?;
    let loaded = spec
        .files
        .iter()
        .map(|f| import::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let (imports, ids): (Vec<_>, Vec<_>) = loaded.into_iter().unzip();
    let mut rep = report::build(&imports, &spec.devices)?;
    let files: Vec<(String, Ids)> = spec
        .files
        .iter()
        .map(|f| f.display().to_string())
        .zip(ids)
        .collect();
    name_profiles(&mut rep, &files);
    rep.envelope = crate::envelope::Envelope::now("analyze", report::SCHEMA_VERSION);
    if let (Some(cap), false) = (spec.declared_cap, rep.levels.is_empty()) {
        // The verdict again, knowing what the device was provisioned with (issue 42).
        let ctx = crate::analysis::Context {
            declared_cap: Some(cap),
            ..Default::default()
        };
        rep.verdict = Some(crate::analysis::analyze_with(&rep.points(), &ctx));
        rep.declared_cap = Some(cap);
    }
    if let Some(t) = spec.target {
        // An estimate from the closed loop, said as one (analysis::open).
        rep.target_estimate = crate::analysis::open::estimate_from_closed(&rep.points(), t);
        let words = match &rep.target_estimate {
            Some(a) => crate::analysis::open::target_words(a),
            None => "--target-p99: no closed-loop level with a p99 to estimate from".to_string(),
        };
        rep.source.notes.push(words);
    }
    for line in aws_beside(&spec)? {
        rep.source.notes.push(line);
    }
    spec.output
        .open()?
        .result(&|f| crate::report::analyze::render(&rep, f))?;
    Ok(crate::error::exit::OK)
}
