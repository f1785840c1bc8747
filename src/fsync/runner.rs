//! Runs every case of an FsyncSpec: lays out each test file, times write + sync in a loop without
//! allocation or printing, reads the device's flush counters around the loop, reads the file back
//! and checks every block; then the group-commit experiment (group.rs) and the verdict. Imports
//! fsync/file.rs and group.rs, never the reverse.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, load/.

use super::block;
use super::device::{self, Watch};
use super::file::{corrupt, preallocate, verify, Ctx, Expect, Namer};
use super::group;
use super::io::{self, AlignedBuf, Handle, OpenError, TestFile};
use super::report::*;
use super::verdict;
use super::{FsyncSpec, Method, Mode};
use super::{
    APPEND_CAP_BYTES, GROUP_FILE_BLOCKS, GROUP_LOG_BLOCKS, MIN_APPEND_BYTES, OVERWRITE_BLOCKS,
};
use crate::error::{Error, Result};
use crate::latency::Recorder;
use std::time::{Duration, Instant};

fn make_run_id() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    // splitmix64 of time and pid: distinct per run, never zero.
    let mut z = t ^ ((std::process::id() as u64) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) | 1
}

/// One timed case. Fatal I/O errors (a failed fsync) return Err; the file is removed anyway.
fn run_case(
    ctx: &Ctx,
    namer: &mut Namer,
    method: Method,
    mode: Mode,
    size: u32,
) -> Result<CaseResult> {
    let spec = ctx.spec;
    let run_id = ctx.run_id;
    let path = namer.next_path();
    let file = TestFile::create(&path)?;
    let first_seq = match mode {
        Mode::Overwrite => {
            preallocate(&file, size, OVERWRITE_BLOCKS, run_id)?;
            OVERWRITE_BLOCKS
        }
        Mode::Append => 0,
    };
    let h: Handle = file
        .open_with(method.open_flags())
        .map_err(|e| e.into_error(&path))?;
    let mut buf = AlignedBuf::new(size as usize);
    block::fill_payload(buf.as_mut_slice(), run_id);
    let mut lat = Recorder::new();
    let sync = method.sync_call();
    let size64 = size as u64;
    let cap_blocks = ctx.append_cap_bytes / size64;
    let dur = Duration::from_nanos(spec.duration_ns);

    let mark = device::window(ctx.watch);
    let start = Instant::now();
    let deadline = start + dur;
    let mut seq = first_seq;
    let mut stopped_at_cap = false;
    let mut interrupted = false;
    // The hot loop: stamp, then time write + sync. No allocation, no printing, no locks.
    loop {
        if io::interrupted() {
            interrupted = true;
            break;
        }
        let off = match mode {
            Mode::Overwrite => (seq % OVERWRITE_BLOCKS) * size64,
            Mode::Append => {
                if seq >= cap_blocks {
                    stopped_at_cap = true;
                    break;
                }
                seq * size64
            }
        };
        block::stamp(buf.as_mut_slice(), run_id, off, seq);
        let t0 = Instant::now();
        if method == Method::RwfDsync {
            h.write_dsync_at(buf.as_slice(), off)?;
        } else {
            h.write_all_at(buf.as_slice(), off)?;
        }
        h.sync(sync)?;
        let t1 = Instant::now();
        lat.record((t1 - t0).as_nanos() as u64);
        seq += 1;
        if t1 >= deadline {
            break;
        }
    }
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    let device_flushes = device::finish(ctx.watch, mark);
    drop(h);

    let commits = lat.count;
    let verification = if spec.verify {
        if let Some(k) = spec.corrupt_block {
            corrupt(&file, size, k)?;
        }
        let expect = match mode {
            Mode::Overwrite => Expect::RoundRobin {
                blocks: OVERWRITE_BLOCKS,
                total: seq,
            },
            Mode::Append => Expect::Appended { blocks: seq },
        };
        Verification::of(verify(&file, size, run_id, expect)?)
    } else {
        Verification::default()
    };
    drop(file);

    let mut case = CaseResult::measured(
        (method, mode, size),
        lat.summary(),
        (commits, elapsed_ns),
        spec.target_tps,
        device_flushes,
    );
    case.verification = verification;
    case.stopped_at_size_cap = stopped_at_cap;
    case.interrupted = interrupted;
    Ok(case)
}

/// Bytes the largest test file of this spec can need (the append cap aside).
fn fixed_need_bytes(spec: &FsyncSpec) -> u64 {
    let max_size = spec.sizes.iter().copied().max().unwrap_or(0) as u64;
    let overwrite =
        (OVERWRITE_BLOCKS * max_size).max(spec.like.map_or(0, super::like_run::need_bytes));
    let max_c = spec.committers.iter().copied().max().unwrap_or(0) as u64;
    let group = (GROUP_LOG_BLOCKS * spec.group_size as u64)
        .max(max_c * GROUP_FILE_BLOCKS * spec.group_size as u64);
    overwrite.max(group)
}

/// Run the whole experiment. `progress` receives one line per finished unit of work.
pub fn run(spec: &FsyncSpec, progress: &mut dyn FnMut(&str)) -> Result<FsyncReport> {
    let dir = &spec.dir;
    let mut warnings: Vec<String> = Vec::new();

    let run_id = make_run_id();
    let mut namer = Namer::new(dir);
    let mut methods: Vec<Method> = spec.methods.clone();
    let mut skipped = Vec::new();

    if methods.iter().any(|m| m.direct()) {
        probe_direct(spec, &mut namer, &mut methods, &mut skipped, &mut warnings)?;
    }
    let append_cap_bytes = check_free_space(spec, &mut warnings)?;
    warnings.extend(io::memory_fs_warning(dir));

    let watch = Watch::probe(&spec.root, dir, spec.no_bpf);
    if let Some(n) = &watch.note {
        warnings.push(n.clone());
    }

    let lbs = watch
        .device
        .as_ref()
        .and_then(|d| d.logical_block_size)
        .unwrap_or(512);

    let ctx = Ctx {
        spec,
        watch: &watch,
        run_id,
        append_cap_bytes,
    };
    let mut steps = Steps::new(planned_steps(spec, &methods, lbs), progress);
    let progress = &mut |line: &str| steps.done(line);
    let (cases, mut interrupted) =
        run_cases(&ctx, &mut namer, &methods, lbs, &mut skipped, progress)?;
    if cases.iter().any(|c| c.stopped_at_size_cap) {
        warnings.push(format!(
            "some append cases reached the {} MiB file-size cap before their duration ended (see stopped_at_size_cap)",
            append_cap_bytes >> 20
        ));
    }

    let like = match spec.like {
        Some(db) if !interrupted => {
            let (l, cut) = super::like_run::run(&ctx, &mut namer, db, lbs, progress)?;
            interrupted = cut;
            Some(l)
        }
        _ => None,
    };

    let group_commit = if !interrupted && !spec.committers.is_empty() {
        let g = group::run(&ctx, &mut namer, progress)?;
        interrupted = g.levels.iter().any(|l| l.interrupted);
        Some(g)
    } else {
        None
    };

    let mut like = like;
    if let (Some(l), Some(g)) = (like.as_mut(), group_commit.as_ref()) {
        l.recommendations
            .extend(super::like::commit_delay_advice(&g.levels));
    }
    let capacity = capacity(&cases, spec.target_tps);
    let judged = match &like {
        Some(l) => super::like_run::as_cases(l),
        None => cases.clone(),
    };
    let device = verdict::device_section(&watch, &judged, &warnings);
    Ok(FsyncReport {
        envelope: crate::envelope::Envelope::now("fsync", SCHEMA_VERSION),
        dir: dir.display().to_string(),
        duration_s_per_case: spec.duration_ns as f64 / 1e9,
        verify: spec.verify,
        interrupted,
        cases,
        skipped,
        capacity,
        group_commit,
        device,
        warnings,
        like,
    })
}

/// Does the filesystem accept O_DIRECT at all? (tmpfs refuses it with EINVAL on open.) When it
/// refuses, methods asked for by name are a usage error; the defaults are skipped, saying so.
fn probe_direct(
    spec: &FsyncSpec,
    namer: &mut Namer,
    methods: &mut Vec<Method>,
    skipped: &mut Vec<Skipped>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let dir = &spec.dir;
    let probe = TestFile::create(&namer.next_path())?;
    match probe.open_with(libc::O_DIRECT) {
        Ok(_) => {}
        Err(OpenError::DirectRefused) => {
            let direct: Vec<&str> = methods
                .iter()
                .filter(|m| m.direct())
                .map(|m| m.name())
                .collect();
            if spec.methods_explicit {
                return Err(Error::usage(
                    "--methods",
                    direct.join(","),
                    format!(
                        "needs O_DIRECT, which the filesystem at {} refuses (EINVAL on open; tmpfs does this): leave these methods out or test another directory",
                        dir.display()
                    ),
                ));
            }
            warnings.push(format!(
                "the filesystem at {} refuses O_DIRECT (EINVAL on open): skipped {}",
                dir.display(),
                direct.join(", ")
            ));
            for &m in methods.iter().filter(|m| m.direct()) {
                for &mode in &spec.modes {
                    for &size in &spec.sizes {
                        skipped.push(Skipped {
                            method: m,
                            size,
                            mode,
                            reason: "the filesystem refuses O_DIRECT".into(),
                        });
                    }
                }
            }
            methods.retain(|m| !m.direct());
        }
        Err(OpenError::Other(e)) => return Err(e),
    }
    Ok(())
}

/// Free space first (docs/design.md §5): refuse rather than fill the filesystem. Returns the
/// size cap of an append file.
fn check_free_space(spec: &FsyncSpec, warnings: &mut Vec<String>) -> Result<u64> {
    let dir = &spec.dir;
    let fixed = fixed_need_bytes(spec);
    let wants_append = spec.modes.contains(&Mode::Append);
    let need = fixed + if wants_append { MIN_APPEND_BYTES } else { 0 };
    let known_free = crate::sys::fs::free_bytes(dir)?;
    // A filesystem that reports no size gets just enough for small append files.
    let free = known_free.unwrap_or(2 * (fixed + 2 * MIN_APPEND_BYTES));
    let append_cap_bytes = APPEND_CAP_BYTES.min(free.saturating_sub(fixed) / 2);
    if known_free.is_none() {
        warnings.push(format!(
            "{} reports no size, so free space could not be checked; append files are capped at {} MiB",
            dir.display(),
            append_cap_bytes >> 20
        ));
    }
    if free < need.saturating_mul(2) {
        return Err(Error::Safety(format!(
            "{}: only {} KiB free, the fsync test files need at least {} KiB (twice their size, to leave room)",
            dir.display(),
            free / 1024,
            need * 2 / 1024
        )));
    }
    Ok(append_cap_bytes)
}

/// The measurements a run plans, each one progress line: the single-committer cases (an
/// O_DIRECT size the block size refuses is not one), the `--like` entries and the group-commit
/// levels. A `--like` setting the filesystem turns out to refuse is counted; the count is the
/// plan, the ETA says "about".
fn planned_steps(spec: &FsyncSpec, methods: &[Method], lbs: u32) -> usize {
    let cases = spec.modes.len()
        * methods
            .iter()
            .map(|m| {
                spec.sizes
                    .iter()
                    .filter(|&&size| !m.direct() || size % lbs == 0)
                    .count()
            })
            .sum::<usize>();
    let like = spec.like.map_or(0, super::like_run::planned);
    let group = if spec.committers.is_empty() {
        0
    } else {
        group::planned(spec)
    };
    cases + like + group
}

/// Progress lines numbered "N/M" with the time left, estimated from the mean time of the
/// measurements so far (their layout and read-back included).
struct Steps<'a> {
    total: usize,
    done: usize,
    started: Instant,
    out: &'a mut dyn FnMut(&str),
}

impl<'a> Steps<'a> {
    fn new(total: usize, out: &'a mut dyn FnMut(&str)) -> Steps<'a> {
        Steps {
            total,
            done: 0,
            started: Instant::now(),
            out,
        }
    }

    fn done(&mut self, line: &str) {
        self.done += 1;
        let total = self.total.max(self.done);
        let each = self.started.elapsed().as_secs_f64() / self.done as f64;
        let left = each * (total - self.done) as f64;
        let eta = if total == self.done {
            String::new()
        } else {
            format!(", about {} left", crate::units::duration_words(left))
        };
        (self.out)(&format!("{}/{total}{eta}: {line}", self.done));
    }
}

/// Every single-committer case, mode by mode, until one is interrupted (then `true`). An
/// O_DIRECT size that is not a multiple of the logical block size `lbs` is skipped.
fn run_cases(
    ctx: &Ctx,
    namer: &mut Namer,
    methods: &[Method],
    lbs: u32,
    skipped: &mut Vec<Skipped>,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<CaseResult>, bool)> {
    let spec = ctx.spec;
    let mut cases = Vec::new();
    for &mode in &spec.modes {
        for &method in methods {
            for &size in &spec.sizes {
                if method.direct() && size % lbs != 0 {
                    skipped.push(Skipped {
                        method,
                        size,
                        mode,
                        reason: format!(
                            "O_DIRECT needs a multiple of the logical block size ({lbs} bytes)"
                        ),
                    });
                    continue;
                }
                let c = run_case(ctx, namer, method, mode, size)?;
                progress(&format!(
                    "{} {} {} B: {:.0} commits/s, p50 {:.3} ms",
                    method.name(),
                    mode.name(),
                    size,
                    c.commits_per_s,
                    c.latency_ns.p50 as f64 / 1e6
                ));
                let stop = c.interrupted;
                cases.push(c);
                if stop {
                    return Ok((cases, true));
                }
            }
        }
    }
    Ok((cases, false))
}

fn line(c: &CaseResult, target: Option<f64>) -> CapacityLine {
    CapacityLine {
        method: c.method,
        size: c.size,
        mode: c.mode,
        mean_latency_ns: c.latency_ns.mean,
        per_connection_commits_per_s: c.per_connection_commits_per_s,
        connections_for_target_tps: target.map(|t| connections_for(t, c.latency_ns.mean)),
    }
}

fn capacity(cases: &[CaseResult], target_tps: Option<f64>) -> Capacity {
    let measured = |c: &&CaseResult| c.durable && c.commits > 0 && c.latency_ns.mean > 0;
    // The same choice the flush verdict names, so the report has one "fastest durable".
    let best = super::verdict::fastest_durable(cases);
    let reference = cases
        .iter()
        .filter(measured)
        .filter(|c| c.method == Method::Fsync)
        .min_by_key(|c| (c.mode != Mode::Overwrite, c.size));
    Capacity {
        target_tps,
        best_durable: best.map(|c| line(c, target_tps)),
        fsync_reference: reference.map(|c| line(c, target_tps)),
    }
}
