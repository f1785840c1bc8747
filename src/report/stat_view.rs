//! What `iosat stat` prints: interval reports rendered as 80-column text, wide text, JSON lines,
//! CSV or Markdown, every column read from the one field registry (monitor::fields). Returns
//! strings, does no IO, reads no clock: the same reports give the same bytes (replay is
//! byte-identical).
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::table::{csv_field, Table};
use super::Format;
use crate::analysis::state::{Basis, Judgement, State};
use crate::envelope::Envelope;
use crate::monitor::fields::{Column, DISK, LATENCY, PROFILE};
use crate::monitor::interval::{DeviceRow, IntervalReport, NoValue};
use crate::monitor::judge::Cells;
use crate::monitor::replay::Step;
use crate::sys::sched::AvgCpu;
use crate::units::iso_utc;

/// Version of the JSON and CSV layout; bump on any incompatible change.
/// 2: the envelope (`kind` "stat" for `schema` "iosat-stat", host, kernel, cpus, start).
pub const SCHEMA_VERSION: u32 = 2;

/// The default text view: (field key, width, decimals), 80 columns in all with the
/// 9-character device column: these, then [`UNPROFILED`] or the judgement's state and headroom.
const NARROW: &[(&str, usize, usize)] = &[
    ("r/s", 7, 1),
    ("w/s", 7, 1),
    ("rkB/s", 8, 1),
    ("wkB/s", 8, 1),
    ("r_await", 7, 2),
    ("w_await", 7, 2),
];

/// The end of the default view when no shown device has a profile.
const UNPROFILED: &[(&str, usize, usize)] = &[
    ("read_concurrency", 6, 2),
    ("write_concurrency", 6, 2),
    ("util", 6, 1),
];

const DEVICE_WIDTH: usize = 9;

fn any_profile(r: &IntervalReport) -> bool {
    r.devices.iter().any(|d| d.profile.is_some())
}

/// A shown device has a baseline to be judged against, swept or learned: the state of its
/// judgement (monitor::judge) and its headroom take the place of r_conc/w_conc/%util (and of
/// sat/load: those are in --wide), still 80 columns. While learning runs they are shown from
/// the first report on (the state reads "learning" until a baseline, or an estimate of one,
/// is learned), so the table keeps its columns (issue 43).
fn any_judged(r: &IntervalReport) -> bool {
    r.devices.iter().any(|d| {
        d.profile.is_some() || (d.has_reference() && d.judgement().device.basis != Basis::None)
    })
}

/// Headroom in the text view, written at the end of `s`: compact, `>=` when it is a lower
/// bound, `0` while saturated, overloaded or slow.
// Inlined at its two calls (the row's plain cells and its judgement's), as it was at one.
#[inline(always)]
fn headroom_cell_into(s: &mut String, j: &Cells) {
    let Some(h) = j.headroom_iops else {
        s.push('-');
        return;
    };
    if j.ceiling_at_least && j.no_headroom.is_none() {
        s.push_str(">=");
    }
    if h >= 10_000.0 {
        crate::analysis::text::fixed_into(s, h / 1000.0, 0);
        s.push('k');
    } else {
        crate::analysis::text::fixed_into(s, h, 0);
    }
}

/// The state cell, written at the end of `s`: the word, `*` when a flag qualifies it (the
/// note under the table says which; a lower-bound ceiling qualifies the headroom cell, `>=`,
/// not this one: Flags::qualify_state), `~` when the baseline was learned rather than swept.
// Inlined at its two calls (the row's plain cells and its judgement's), as it was at one.
#[inline(always)]
fn state_cell_into(s: &mut String, j: &Cells, learning: bool) {
    if learning && j.basis == Basis::None && j.state == State::Unknown {
        // Nothing to judge against yet: learning has no baseline (or estimate) so far.
        s.push_str("learning");
        return;
    }
    s.push_str(j.state.as_str());
    if matches!(j.basis, Basis::Learned | Basis::LearnedEstimate) {
        s.push('~');
    }
    if j.qualified {
        s.push('*');
    }
}

/// Right-aligns in `w` columns what was written to `s` since byte `start` (ASCII: a byte a
/// column), as `{:>w$}` does, without core::fmt's padding (a tenth of the table's time).
fn pad_from(s: &mut String, start: usize, w: usize) {
    let width = s.len() - start;
    if width < w {
        const SPACES: &str = "                                ";
        let pad = w - width;
        match SPACES.get(..pad) {
            Some(spaces) => s.insert_str(start, spaces),
            None => s.insert_str(start, &" ".repeat(pad)),
        }
    }
}

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(
        || "-".to_string(),
        |v| crate::analysis::text::fixed(v, decimals),
    )
}

/// What comes before the first report (legend for text, header row for CSV). `profiled`:
/// some device has a profile, so the text legend explains sat and load.
pub fn preamble(format: Format, judged: &[String], learning: bool) -> String {
    match format {
        // stat's page is drawn by report::stat, never through this per-interval path.
        Format::Text { .. } | Format::Html => {
            let mut s = String::from(if learning || !judged.is_empty() {
                // The columns any_judged shows from the first line.
                "\
# rates over the measured interval; state = latency against the device baseline
# (swept, or ~ learned from its traffic: \"learning\" until then), +IOPS: headroom
# r_conc/w_conc (mean in flight), %util (time busy, not capacity): --wide\n"
            } else {
                "\
# rates over the measured interval; r_conc/w_conc = mean reads/writes in flight
# %util = share of time with >=1 request in flight, not capacity (see --help)\n"
            });
            if !judged.is_empty() {
                s.push_str(
                    "\
# sat = await / profile baseline latency; load = aqu-sz / profile knee (--wide)\n",
                );
            }
            // Which profile each judgement uses: its own, or a model profile (and whose sweep).
            for j in judged {
                s.push_str(&format!("# {j}\n"));
            }
            s
        }
        Format::Csv => {
            let mut h = String::from(
                "timestamp,start_timestamp,interval_s,since_boot,disk_device,kernel_name,major,minor,kind",
            );
            for c in DISK {
                h.push(',');
                h.push_str(c.csv);
            }
            h.push_str(",wrapped_ms_fields,no_value,profile_id");
            for c in PROFILE {
                h.push(',');
                h.push_str(c.csv);
            }
            // Block-layer latency: empty without the BPF source.
            for c in LATENCY {
                h.push(',');
                h.push_str(c.csv);
            }
            for k in CPU_KEYS {
                h.push_str(",cpu_");
                h.push_str(k);
            }
            h.push_str(JUDGEMENT_CSV);
            h.push('\n');
            h
        }
        Format::Json | Format::Markdown => String::new(),
    }
}

/// iostat's avg-cpu states, in its order (JSON keys; `cpu_` + key in CSV).
pub const CPU_KEYS: [&str; 6] = ["user", "nice", "system", "iowait", "steal", "idle"];

fn cpu_values(c: &AvgCpu) -> [f64; 6] {
    [c.user, c.nice, c.system, c.iowait, c.steal, c.idle]
}

/// The avg-cpu line of the text views (none when the report has no CPU times).
fn cpu_line(r: &IntervalReport) -> String {
    use std::fmt::Write;
    let Some(c) = &r.cpu else {
        return String::new();
    };
    let mut s = String::from("avg-cpu ");
    for (k, v) in CPU_KEYS.iter().zip(cpu_values(c)) {
        let _ = write!(s, " %{k} {v:.1}");
    }
    s.push('\n');
    s
}

fn interval_title(r: &IntervalReport) -> String {
    if r.since_boot {
        format!(
            "{}  since boot ({:.3} s)",
            iso_utc(r.end_wall_ns),
            r.interval_s()
        )
    } else {
        format!(
            "{}  interval {:.3} s",
            iso_utc(r.end_wall_ns),
            r.interval_s()
        )
    }
}

/// The verdict clause of a device whose AWS counters say a cap throttled the interval
/// (issue 42), with the judgement's latency ratio when it has one.
fn aws_clause(d: &DeviceRow, j: Option<&Judgement>) -> Option<String> {
    d.aws.as_ref()?.clause(j.and_then(|j| j.device.ratio))
}

/// The `thr%` column of `stat --wide` (issue 42): shown when some device has AWS counters.
fn any_aws(r: &IntervalReport) -> bool {
    r.devices.iter().any(|d| d.aws.is_some())
}

/// The burst columns of `stat --wide` (issue 41): shown when some device has short windows.
fn any_burst(r: &IntervalReport) -> bool {
    r.devices.iter().any(|d| d.burst.is_some())
}

/// The larger of a device's two peak-to-mean ratios (the direction that burst most).
fn peak_to_mean(b: &crate::monitor::burst::Burst) -> Option<f64> {
    match (b.read.peak_to_mean, b.write.peak_to_mean) {
        (Some(r), Some(w)) => Some(r.max(w)),
        (r, w) => r.or(w),
    }
}

/// The notes under a text table: one line per device without values, saying why; per device
/// whose profile leaves part of the interval unjudged or compares unlike requests; and per
/// device whose live p95 passes the 3x-p95 rule (text views only).
/// A device's busiest cgroups in one line, and the verdict while it is saturated (issue 40).
fn cgroup_notes(dev: &str, c: &crate::monitor::cgroups::DevCgroups) -> String {
    use crate::monitor::cgroups::ShareOf;
    if c.cgroups.is_empty() {
        return String::new();
    }
    let of = match c.cgroups[0].share_of {
        ShareOf::DeviceTime => "share of device time",
        ShareOf::Requests => "share of requests",
    };
    let list: Vec<String> = c
        .cgroups
        .iter()
        .take(3)
        .map(|g| {
            let iops = g.read.iops + g.write.iops;
            let mean = match (g.read.mean_ms, g.write.mean_ms) {
                (Some(r), Some(w)) => {
                    let n = (g.read.requests + g.write.requests) as f64;
                    Some((r * g.read.requests as f64 + w * g.write.requests as f64) / n)
                }
                (r, w) => r.or(w),
            };
            let ratio = g.ratio.map_or(String::new(), |x| format!(", {x:.1}x"));
            // io.pressure (cgroup v2): the share of the interval its tasks stalled on I/O.
            let pressure = g
                .pressure_words()
                .map_or(String::new(), |w| format!(", {w}"));
            let role = g.role.map_or(String::new(), |r| {
                format!(
                    " {}",
                    serde_json::to_value(r).unwrap().as_str().unwrap_or("")
                )
            });
            format!(
                "{} {:.0} % {:.0}/s {}{ratio}{pressure}{role}",
                g.name,
                g.share * 100.0,
                iops,
                mean.map_or("-".to_string(), |m| format!("{m:.2} ms"))
            )
        })
        .collect();
    let mut s = format!("# {dev}: cgroups ({of}): {}\n", list.join("; "));
    if let Some(v) = &c.verdict {
        s.push_str(&format!("# {dev}: who: {}\n", v.sentence));
    }
    s
}

/// The notes under an interval's table: each row's ([`row_notes`]), then the interval's
/// ([`interval_notes`]).
fn device_notes(r: &IntervalReport) -> String {
    let mut s = String::new();
    for d in &r.devices {
        // Without a baseline the judgement is unqualified: no words (and none computed).
        let j = d.has_reference().then(|| d.judgement());
        row_notes(&mut s, d, j.as_ref());
    }
    s.push_str(&interval_notes(r));
    s
}

/// The notes of row `d`, its judgement `j` given when it has a baseline to be judged
/// against (None: unqualified, no words): a view that judged the row for its table passes
/// that judgement, so a row is judged, and its learned state read, once per interval
/// (issue 37's cost: a second pass judged every row again, and read a thousand devices'
/// learned state back from memory).
fn row_notes(s: &mut String, d: &DeviceRow, j: Option<&Judgement>) {
    row_notes_with(s, d, j, None);
}

/// [`row_notes`], the judgement's words given (`words`: what `j.words_into` writes; a
/// partition judged by its disk takes its disk's, [`DiskText`]) or written. Returns where
/// the words lie in `s` (None: the row has none).
fn row_notes_with(
    s: &mut String,
    d: &DeviceRow,
    j: Option<&Judgement>,
    words: Option<&str>,
) -> Option<std::ops::Range<usize>> {
    // What qualifies the judgement (estimate, changed, mixed, busy CPUs; "at least" among
    // the words then) or a slow state, in words (the declared cap's share among them). A
    // lower-bound ceiling alone is no reason: the headroom cell says it (`>=`). Requests that
    // span size classes are said too, whatever the state: the figures are one class's (the
    // worst), and a headroom not known for it would read as "no ceiling learned" in its
    // cell's `-` alone.
    let worded = j.is_some_and(|j| {
        j.device.flags.qualify_state()
            || j.device.flags.spans_classes
            || j.state() == crate::analysis::state::State::Slow
    });
    let mut at = None;
    if let Some(j) = j.filter(|_| worded) {
        for part in ["# ", &d.meta.display_name, ": "] {
            s.push_str(part);
        }
        let start = s.len();
        match words {
            Some(w) => s.push_str(w),
            None => j.words_into(s),
        }
        at = Some(start..s.len());
        s.push('\n');
    }
    // The interval against the declared cap (issue 42), whenever it did I/O.
    if let Some(c) = d.cap_use().filter(|c| c.used > 0.0 && !worded) {
        s.push_str(&format!("# {}: {}\n", d.meta.display_name, c.live_words()));
    }
    // An AWS volume's own counters: the share of the interval a cap throttled it.
    if let Some(clause) = aws_clause(d, j) {
        s.push_str(&format!("# {}: {clause}\n", d.meta.display_name));
    }
    if let Some(c) = &d.cgroups {
        s.push_str(&cgroup_notes(&d.meta.display_name, c));
    }
    let Some(j) = j else {
        return at;
    };
    // A change of the device learning found, or a swept profile the traffic disagrees with:
    // from, to and the evidence.
    for x in [&j.read, &j.write] {
        if let Some(c) = &x.flags.change {
            // By hand: a changed device says it in every interval.
            for part in [
                "# ",
                &d.meta.display_name,
                ": ",
                x.dir.as_str(),
                " ",
                &c.evidence,
            ] {
                s.push_str(part);
            }
            s.push('\n');
        }
    }
    at
}

/// The notes of the interval that follow the rows' own: profiles and learning that
/// disagree, the 3x-p95 rule, queue or device, rows without a value.
fn interval_notes(r: &IntervalReport) -> String {
    let mut s = String::new();
    for d in &r.devices {
        let sat = d.saturation();
        if let (Some(sat), Some(l)) = (&sat, &d.learned) {
            if let Some(n) = crate::learn::disagreement(l, sat.baseline_latency_ns) {
                s.push_str(&format!("# {}: {n}\n", d.meta.display_name));
            }
        }
        for n in sat.map(|sat| sat.notes).unwrap_or_default() {
            s.push_str(&format!("# {}: {n}\n", d.meta.display_name));
        }
    }
    // The 3x-p95 rule on the block layer's live p95, in words (the ratios are --wide columns).
    for d in &r.devices {
        let Some(m) = d.latency.as_ref().and_then(|l| l.measured()) else {
            continue;
        };
        if m.overloaded != Some(true) {
            continue;
        }
        let over = m
            .over_p95_rule()
            .map(|(dir, x)| format!("{dir} p95 {x:.1}x"))
            .collect::<Vec<_>>()
            .join(", ");
        s.push_str(&format!(
            "# {}: {over} the baseline p95: overloaded (the {}x-p95 rule)\n",
            d.meta.display_name,
            crate::analysis::OVERLOAD_P95_FACTOR
        ));
    }
    // Queue or device (issue 40): what the split of the latency says, per direction.
    for d in &r.devices {
        let m = d.latency.as_ref().and_then(|l| l.measured());
        if m.is_some_and(|m| m.read_split.is_some() || m.write_split.is_some()) {
            for line in crate::monitor::judge::split_sentences(d, &d.judgement()) {
                s.push_str(&format!("# {}: {line}\n", d.meta.display_name));
            }
        }
    }
    for d in &r.devices {
        if let Err(e) = &d.rates {
            let why = match e {
                NoValue::NewDevice => "new device, no earlier sample",
                NoValue::CounterWentBackwards => "a counter went backwards (reset or re-created)",
                NoValue::ZeroInterval => "the interval has no length",
                NoValue::Overflow => "counter deltas beyond 64 bits",
            };
            s.push_str(&format!("# {}: no value: {why}\n", d.meta.display_name));
        }
    }
    s
}

fn text_narrow(r: &IntervalReport, learning: bool) -> String {
    let mut s = String::with_capacity(280 + r.devices.len() * 82);
    text_narrow_into(r, learning, &mut s);
    s
}

thread_local! {
    /// The notes of the rows, written while the table is (each row judged once) and
    /// appended after it: kept from one interval to the next, so that a report with a note
    /// per device (a thousand devices that changed) grows no string each interval.
    static NOTES: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// [`text_narrow`] appended to `s` (a sink's buffer, kept from one interval to the next):
/// no string built per report and copied again (issue 37's cost: with a note per device,
/// the report grew by doubling twice and was copied whole into the sink's).
fn text_narrow_into(r: &IntervalReport, learning: bool, s: &mut String) {
    use std::fmt::Write;
    s.reserve(280 + r.devices.len() * 82);
    s.push_str(&interval_title(r));
    s.push('\n');
    s.push_str(&cpu_line(r));
    let judged = learning || any_judged(r);
    let tail = if judged { &[] } else { UNPROFILED };
    let cols: Vec<(Column, usize, usize)> = NARROW
        .iter()
        .chain(tail)
        .map(|&(key, w, dec)| (Column::by_key(key), w, dec))
        .collect();
    let _ = write!(s, "{:<DEVICE_WIDTH$}", "Device");
    for (c, w, _) in &cols {
        let _ = write!(s, " {:>w$}", c.header());
    }
    if judged {
        // The device's judgement: its worst direction's state (~: by a learned baseline)
        // and that direction's headroom.
        let _ = write!(s, " {:>11} {:>8}", "state", "+IOPS");
    }
    s.push('\n');
    let mut notes = NOTES.with(|n| std::mem::take(&mut *n.borrow_mut()));
    notes.clear();
    let mut disk: Option<DiskText> = None;
    for (i, d) in r.devices.iter().enumerate() {
        crate::monitor::judge::prefetch(&r.devices, i);
        let name = &d.meta.display_name;
        let chars = name.chars().count();
        s.push_str(name);
        if chars > DEVICE_WIDTH {
            // Long names (dm) get their own line so the table stays within 80 columns.
            s.push('\n');
            s.extend(std::iter::repeat(' ').take(DEVICE_WIDTH));
        } else {
            // `{name:<DEVICE_WIDTH$}` by hand: padded by characters, as core::fmt pads.
            s.extend(std::iter::repeat(' ').take(DEVICE_WIDTH - chars));
        }
        let sat = d.saturation();
        for &(c, w, dec) in &cols {
            right(s, c.value(d.rates.as_ref().ok(), sat.as_ref()), dec, w);
        }
        let learns = learning && d.rates.is_ok();
        if !judged {
            s.push('\n');
            row_notes(&mut notes, d, None);
            continue;
        }
        // A partition judged by its disk, right after it, of the same judgement and rates
        // and nothing of its own: the disk's cells, judgement and words (a host's partitions
        // are most of its rows, and each was judged and worded again to the same ones:
        // issue 37's cost).
        if let Some(k) = disk.as_ref().filter(|k| k.of.serves(d)) {
            #[cfg(debug_assertions)]
            judged_as_its_disk(d, k);
            cell(s, 11, |s| state_cell_into(s, &k.cells, learns));
            cell(s, 8, |s| headroom_cell_into(s, &k.cells));
            s.push('\n');
            let j = k.j.as_ref().filter(|_| d.has_reference());
            row_notes_with(&mut notes, d, j, k.words.as_deref());
            continue;
        }
        // A row learning alone judges, with nothing to say of it but its two cells: those
        // cells, no judgement built (monitor::judge::plain_cells). Else the row judged once,
        // for its cells and its notes.
        let (c, j) = match crate::monitor::judge::plain_cells(d) {
            Some(c) => {
                #[cfg(debug_assertions)]
                plain_is_judged(d, &c);
                (c, None)
            }
            None => {
                let j = d.judgement();
                (Cells::of(&j.device), Some(j))
            }
        };
        cell(s, 11, |s| state_cell_into(s, &c, learns));
        cell(s, 8, |s| headroom_cell_into(s, &c));
        s.push('\n');
        // Without a baseline the judgement is unqualified: no words.
        let words = row_notes_with(
            &mut notes,
            d,
            j.as_ref().filter(|_| d.has_reference()),
            None,
        );
        if d.judged_as.is_none() {
            // A disk's row: its partitions after it may take its cells, judgement and words
            // (the words' buffer of the disk before it reused).
            let mut spare = disk.take().and_then(|k| k.words).unwrap_or_default();
            disk = DiskJudged::of(d).map(|of| DiskText {
                of,
                cells: c,
                j,
                words: words.map(|w| {
                    spare.clear();
                    spare.push_str(&notes[w]);
                    spare
                }),
            });
        }
    }
    s.push_str(&notes);
    NOTES.with(|n| *n.borrow_mut() = notes);
    s.push_str(&interval_notes(r));
    s.push('\n');
}

/// The last disk row of the table, for the partitions judged by it right after it
/// ([`DiskJudged::serves`]): its cells, and the judgement they came from (None: its plain
/// cells, no judgement built) with the words of its note (None: none written), made once for
/// the disk and its partitions.
struct DiskText<'a> {
    of: DiskJudged<'a>,
    cells: Cells,
    j: Option<Judgement>,
    words: Option<String>,
}

/// Debug builds: a partition's cells, judgement and notes taken from its disk's row are
/// those it would have made itself.
#[cfg(debug_assertions)]
fn judged_as_its_disk(d: &DeviceRow, disk: &DiskText) {
    let Some(j) = &disk.j else {
        return plain_is_judged(d, &disk.cells);
    };
    let own = d.judgement();
    assert_eq!(
        format!("{own:?}"),
        format!("{j:?}"),
        "the judgement of {} taken from its disk's is its own",
        d.meta.display_name
    );
    let (mut own_notes, mut copied) = (String::new(), String::new());
    row_notes(&mut own_notes, d, Some(&own).filter(|_| d.has_reference()));
    row_notes_with(
        &mut copied,
        d,
        Some(j).filter(|_| d.has_reference()),
        disk.words.as_deref(),
    );
    assert_eq!(own_notes, copied, "the notes of {}", d.meta.display_name);
}

/// Debug builds: a row's plain cells are its judgement's, and its judgement would have said
/// nothing under the table that the plain row leaves out (no words, no change).
#[cfg(debug_assertions)]
fn plain_is_judged(d: &DeviceRow, c: &Cells) {
    let j = d.judgement();
    assert_eq!(
        format!("{:?}", Cells::of(&j.device)),
        format!("{c:?}"),
        "plain cells of {}",
        d.meta.display_name
    );
    assert!(
        !j.device.flags.spans_classes
            && j.state() != State::Slow
            && j.read.flags.change.is_none()
            && j.write.flags.change.is_none()
            && j.cap.is_none(),
        "a plain row of {} says nothing more",
        d.meta.display_name
    );
}

/// `write!(s, " {v:>w$.dec$}")`, `-` for no value, written in place: the figure without
/// core::fmt's exact float path (text::fixed), no string per cell.
fn right(s: &mut String, v: Option<f64>, dec: usize, w: usize) {
    cell(s, w, |s| match v {
        Some(v) => crate::analysis::text::fixed_into(s, v, dec),
        None => s.push('-'),
    });
}

/// A table cell: a space, then what `write` appends, right-aligned in `w` columns.
fn cell(s: &mut String, w: usize, write: impl FnOnce(&mut String)) {
    s.push(' ');
    let start = s.len();
    write(s);
    pad_from(s, start, w);
}

/// Does the interval carry block-layer latency (the BPF source was attached)?
fn any_latency(r: &IntervalReport) -> bool {
    r.devices.iter().any(|d| d.latency.is_some())
}

fn table(r: &IntervalReport) -> Table {
    let profiled = any_profile(r);
    let latency = any_latency(r);
    let profile_headers = PROFILE.iter().filter(|_| profiled).map(|c| c.header);
    let latency_headers = LATENCY.iter().filter(|_| latency).map(|c| c.header);
    let mut t = Table::new(
        std::iter::once("Device")
            .chain(DISK.iter().map(|c| c.header))
            .chain(profile_headers)
            .chain(latency_headers)
            .chain(any_aws(r).then_some("thr%"))
            .chain(
                ["r_pk/s", "w_pk/s", "pk/mean"]
                    .into_iter()
                    .filter(|_| any_burst(r)),
            ),
    );
    for d in &r.devices {
        let mut row = vec![d.meta.display_name.clone()];
        for c in DISK {
            row.push(num(d.rates.as_ref().ok().and_then(c.get), c.decimals));
        }
        if profiled {
            let sat = d.saturation();
            for c in PROFILE {
                row.push(num(sat.as_ref().and_then(c.get), c.decimals));
            }
        }
        if latency {
            let m = d.latency.as_ref().and_then(|l| l.measured());
            for c in LATENCY {
                row.push(num(m.and_then(c.get), c.decimals));
            }
        }
        if any_aws(r) {
            row.push(num(d.aws.as_ref().map(|a| a.throttled_pct()), 1));
        }
        if any_burst(r) {
            let b = d.burst.as_ref();
            row.push(num(b.map(|b| b.read.peak_iops), 1));
            row.push(num(b.map(|b| b.write.peak_iops), 1));
            row.push(num(b.and_then(peak_to_mean), 2));
        }
        t.push(row);
    }
    t
}

#[derive(serde::Serialize)]
struct JsonInterval<'a> {
    #[serde(flatten)]
    envelope: &'a Envelope,
    timestamp: String,
    start_timestamp: String,
    wall_ns: i64,
    start_wall_ns: i64,
    interval_s: f64,
    since_boot: bool,
    /// iostat -o JSON's key; absent without CPU times or with --no-cpu.
    #[serde(rename = "avg-cpu", skip_serializing_if = "Option::is_none")]
    avg_cpu: Option<&'a AvgCpu>,
    // `devices` follows, written by [`json`] device by device.
}

/// One device in the JSON: sysstat's keys in `iostat -x -o JSON` order (the registry's),
/// then iosat's up to the judgement. The judgement, [`JsonDeviceTail`]'s keys, and the
/// `learned` and `latency` objects follow, written by [`json_device`].
struct JsonDevice<'a>(&'a DeviceRow);

impl serde::Serialize for JsonDevice<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let d = self.0;
        let r = d.rates.as_ref().ok();
        let mut m = ser.serialize_map(None)?;
        m.serialize_entry("disk_device", &d.meta.display_name)?;
        for c in DISK {
            let v = r.and_then(c.get);
            if c.integer {
                m.serialize_entry(c.json, &v.map(|v| v as u64))?;
            } else {
                m.serialize_entry(c.json, &v)?;
            }
        }
        m.serialize_entry("kernel_name", &d.kernel_name)?;
        m.serialize_entry("major", &d.major)?;
        m.serialize_entry("minor", &d.minor)?;
        m.serialize_entry("kind", &d.meta.kind.map(|k| k.as_str()))?;
        m.serialize_entry("wrapped_ms_fields", &d.wrapped_ms_fields)?;
        m.serialize_entry("no_value", &d.rates.as_ref().err().map(|e| e.as_str()))?;
        // Saturation against the device's profile; absent when it has none.
        if let Some(sat) = d.saturation() {
            m.serialize_entry("profile", &sat)?;
        }
        m.end()
    }
}

/// What follows the judgement in a device's object ([`JsonDevice`] comes before it; the
/// judgement is written by hand between them, Judgement::write_json).
struct JsonDeviceTail<'a>(&'a DeviceRow);

impl serde::Serialize for JsonDeviceTail<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let d = self.0;
        let mut m = ser.serialize_map(None)?;
        // The cap the user declared (issue 42); the judgement's `cap` is the interval's share.
        if let Some(c) = &d.cap {
            m.serialize_entry("declared_cap", c)?;
        }
        // The device's own AWS counters over their latest interval (issue 42; live only).
        if let Some(a) = &d.aws {
            m.serialize_entry("aws", a.as_ref())?;
        }
        // The interval's short windows (issue 41): each direction's peak and peak ÷ mean.
        if let Some(b) = &d.burst {
            m.serialize_entry("burst", b)?;
        }
        // Who loads the device (issue 40): its cgroups and, while saturated, the verdict.
        if let Some(c) = &d.cgroups {
            m.serialize_entry("cgroups", c.as_ref())?;
        }
        m.end()
    }
}

/// Where a disk row's judgement and learned object lie in the line, and what they were made
/// of: a partition judged by that disk, right after it, made of the same copies them
/// ([`DiskJudged::serves`]). A host's partitions are most of its rows, and each wrote its disk's
/// judgement and learned object again, byte for byte (issue 37's cost).
struct DiskJson<'a> {
    of: DiskJudged<'a>,
    judgement: std::ops::Range<usize>,
    object: std::ops::Range<usize>,
}

/// What a disk row's judgement was made of, for the partitions judged by it after it (the
/// JSON's [`DiskJson`], the table's [`DiskText`]): its learned judgement, its rates as a
/// judgement reads them, the host's busy CPUs.
struct DiskJudged<'a> {
    learned: &'a std::sync::Arc<crate::analysis::learned::Learned>,
    rates: crate::monitor::interval::JudgedRates,
    cpus_busy: Option<bool>,
}

impl<'a> DiskJudged<'a> {
    /// A disk's row (judged by its own judgement) whose partitions may take what it was
    /// judged: learned, with a value, and nothing of its own that a judgement reads.
    fn of(d: &'a DeviceRow) -> Option<DiskJudged<'a>> {
        if d.judged_as.is_some() || !crate::monitor::judge::nothing_of_its_own_judged(d) {
            return None;
        }
        Some(DiskJudged {
            learned: d.learned.as_ref()?,
            rates: crate::monitor::interval::JudgedRates::of(d.rates.as_ref().ok()?),
            cpus_busy: d.cpus_busy,
        })
    }

    /// Whether row `d` is judged from exactly what this disk's row was: a partition judged by
    /// it (its judgement and rates), with nothing of its own that a judgement reads (a
    /// profile, a declared cap, AWS counters, block-layer percentiles: monitor::judge).
    fn serves(&self, d: &DeviceRow) -> bool {
        d.judged_as
            .as_ref()
            .is_some_and(|j| j.rates.as_ref() == Some(&self.rates))
            && d.learned
                .as_ref()
                .is_some_and(|l| std::sync::Arc::ptr_eq(l, self.learned))
            && d.cpus_busy == self.cpus_busy
            && crate::monitor::judge::nothing_of_its_own_judged(d)
    }
}

/// A device's object in the JSON line: [`JsonDevice`], then what production learning says
/// (learn/; absent with --no-learn), written by hand with serde's bytes
/// (Learned::write_json: the object is a third of each device's bytes and was most of
/// learning's cost in `--json`), then the block-layer percentiles when the BPF source is
/// attached: per direction, the coverage, or why the device has none
/// ({"none": "no_request_queue"}).
fn json_device<'a>(out: &mut Vec<u8>, d: &'a DeviceRow, disk: &mut Option<DiskJson<'a>>) {
    let row_start = out.len();
    serde_json::to_writer(&mut *out, &JsonDevice(d)).expect("a device serialises");
    // JsonDevice is never empty (disk_device comes first): its closing brace is reopened.
    debug_assert_eq!(out.last(), Some(&b'}'));
    out.pop();
    // The one judgement (monitor::judge): the device's state with the ratio and headroom of
    // its worst direction, and each direction's; by hand, as serde writes it (a thousand
    // devices' judgements each interval, their estimates' floats among them).
    out.extend_from_slice(b",\"judgement\":");
    let from_disk = disk.as_ref().filter(|k| k.of.serves(d));
    #[cfg(debug_assertions)]
    let check = from_disk.is_some().then(|| {
        let mut own = Vec::new();
        json_device(&mut own, d, &mut None);
        own
    });
    let judgement_start = out.len();
    let written = match from_disk {
        Some(k) => {
            out.extend_from_within(k.judgement.clone());
            None
        }
        None => {
            // The baseline's figures as the learned object wrote them last with its curve
            // (the lines it reads next): copied for a direction judged by that baseline.
            let known = d
                .learned
                .as_deref()
                .and_then(|l| l.summary.as_ref()?.baseline_json());
            Some(d.judgement().write_json_with(out, known))
        }
    };
    let judgement = judgement_start..out.len();
    // The tail's object merged into the device's: its braces dropped, nothing when empty.
    let start = out.len();
    serde_json::to_writer(&mut *out, &JsonDeviceTail(d)).expect("a device serialises");
    if out.len() - start <= 2 {
        out.truncate(start);
    } else {
        out[start] = b',';
        out.pop();
    }
    if let Some(disk) = d.learned.as_ref().and(d.judged_as_disk()) {
        // A partition judged by its disk (learn::Learner::disk_row): `learned` is the disk's.
        out.extend_from_slice(b",\"learned_of\":");
        serde_json::to_writer(&mut *out, disk).expect("a name serialises");
    }
    if let Some(l) = &d.learned {
        out.extend_from_slice(b",\"learned\":");
        let object_start = out.len();
        match (&written, from_disk) {
            (None, Some(k)) => out.extend_from_within(k.object.clone()),
            (Some(w), _) => l.write_json_after(out, w),
            (None, None) => unreachable!("a judgement is written or copied"),
        }
        let object = object_start..out.len();
        if d.judged_as.is_none() {
            // A disk's row: its partitions after it may copy it.
            *disk = DiskJudged::of(d).map(|of| DiskJson {
                of,
                judgement: judgement.clone(),
                object,
            });
        }
    } else if d.judged_as.is_none() {
        *disk = None;
    }
    if let Some(l) = d.latency.as_ref() {
        out.extend_from_slice(b",\"latency\":");
        match l.measured() {
            Some(lat) => serde_json::to_writer(&mut *out, lat),
            None => serde_json::to_writer(&mut *out, &serde_json::json!({"none": l.none_reason()})),
        }
        .expect("latency serialises");
    }
    out.push(b'}');
    #[cfg(debug_assertions)]
    if let Some(own) = check {
        assert_eq!(
            String::from_utf8_lossy(&own),
            String::from_utf8_lossy(&out[row_start..]),
            "a partition's JSON copied from its disk's is its own"
        );
    }
    let _ = row_start;
}

/// What the JSON of the rows after row `i` copies from elsewhere on the heap (analysis::
/// learned's `json_heap`), asked of memory ahead in three stages, rows `i` + 3/4, 1/2 and 1/4
/// of monitor::judge's AHEAD: each stage reads what the one before asked for, and the row's
/// learned judgement itself was asked for by monitor::judge::prefetch, AHEAD rows before. A
/// hint: it changes nothing written.
fn prefetch_json(rows: &[DeviceRow], i: usize) {
    use crate::monitor::judge::AHEAD;
    for (k, stage) in [(AHEAD * 3 / 4, 0), (AHEAD / 2, 1), (AHEAD / 4, 2)] {
        if let Some(l) = rows.get(i + k).and_then(|d| d.learned.as_deref()) {
            l.json_heap(stage, |p, n| crate::sys::cache::prefetch_at(p, n, 6));
        }
    }
}

/// One JSON object (a single line) for an interval, under the run's envelope (the same on
/// every line: started is the first interval's start, so a replay prints the same bytes).
pub fn json(r: &IntervalReport, envelope: &Envelope) -> String {
    let mut s = String::new();
    json_into(r, envelope, &mut s);
    s
}

/// [`json`] appended to `line` (a buffer the caller keeps from one interval to the next).
pub fn json_into(r: &IntervalReport, envelope: &Envelope, line: &mut String) {
    let obj = JsonInterval {
        envelope,
        timestamp: iso_utc(r.end_wall_ns),
        start_timestamp: iso_utc(r.start_wall_ns),
        wall_ns: r.end_wall_ns,
        start_wall_ns: r.start_wall_ns,
        interval_s: r.interval_s(),
        since_boot: r.since_boot,
        avg_cpu: r.cpu.as_ref(),
    };
    // The line's buffer sized for its devices at once (about 1 KB each, as much again
    // for a learned object, more for block-layer latency and a profile): grown by doubling,
    // a megabyte line was copied about twice over, the copies' cache misses more than a
    // tenth of the JSON's cost.
    let size: usize = r
        .devices
        .iter()
        .map(|d| {
            1024 + 1024 * usize::from(d.learned.is_some())
                + 1024 * usize::from(d.latency.is_some())
                + 512 * usize::from(d.profile.is_some())
        })
        .sum();
    // SAFETY: every byte appended is serde_json's output (UTF-8: it writes `&str`s and
    // escapes) or an ASCII literal below, as in serde_json::to_string, which converts the
    // same way; checking a megabyte per interval again would cost as much as the learned
    // objects saved.
    let out = unsafe { line.as_mut_vec() };
    out.reserve(1024 + size);
    serde_json::to_writer(&mut *out, &obj).expect("interval report serialises");
    // The envelope is never empty: its closing brace is reopened for the devices.
    debug_assert_eq!(out.last(), Some(&b'}'));
    out.pop();
    out.extend_from_slice(b",\"devices\":[");
    let mut disk = None;
    for (i, d) in r.devices.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::monitor::judge::prefetch(&r.devices, i);
        prefetch_json(&r.devices, i);
        json_device(out, d, &mut disk);
    }
    out.extend_from_slice(b"]}\n");
}

/// One row of `stat --csv`, typed: what a live (or replayed) interval gives for one device,
/// and what a `stat --json` line read back gives (report::stat), so `iosat report` of either
/// writes the live command's CSV.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CsvRow {
    pub timestamp: String,
    pub start_timestamp: String,
    pub interval_s: f64,
    pub since_boot: bool,
    pub disk_device: String,
    pub kernel_name: String,
    pub major: u32,
    pub minor: u32,
    /// sysfs' kind ("disk", "partition" …); empty when unknown.
    pub kind: String,
    /// The registry's [`DISK`] fields, in its order.
    pub disk: Vec<Option<f64>>,
    pub wrapped_ms_fields: u32,
    /// Why the device has no value this interval (`NoValue::as_str`); empty when it has.
    pub no_value: String,
    pub profile_id: String,
    /// The registry's [`PROFILE`] fields, in its order.
    pub profile: Vec<Option<f64>>,
    /// The registry's [`LATENCY`] fields, in its order.
    pub latency: Vec<Option<f64>>,
    /// avg-cpu in [`CPU_KEYS`] order; None without CPU times.
    pub cpu: Option<[Option<f64>; 6]>,
    /// The device's judgement (monitor::judge); None when the source had none.
    pub judgement: Option<Judgement>,
}

/// The judgement's CSV columns, after avg-cpu: the device's (its worst direction's) and
/// each direction's state, basis, ratio and headroom, and the flags in words.
const JUDGEMENT_CSV: &str = ",state,direction,basis,ratio,headroom_iops,no_headroom,flags,\
read_state,read_basis,read_ratio,read_headroom_iops,\
write_state,write_basis,write_ratio,write_headroom_iops";

fn judgement_csv(j: Option<&Judgement>) -> String {
    let Some(j) = j else {
        return ",".repeat(JUDGEMENT_CSV.matches(',').count());
    };
    let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    let d = &j.device;
    let mut s = format!(
        ",{},{},{},{},{},{},{}",
        d.state.as_str(),
        d.dir.as_str(),
        d.basis.as_str(),
        num(d.ratio),
        num(d.headroom_iops),
        d.no_headroom.map_or("", |n| n.as_str()),
        csv_field(&d.flags.words().join(";")),
    );
    for x in [&j.read, &j.write] {
        s.push_str(&format!(
            ",{},{},{},{}",
            x.state.as_str(),
            x.basis.as_str(),
            num(x.ratio),
            num(x.headroom_iops)
        ));
    }
    s
}

impl CsvRow {
    /// The row's line (numbers as Rust prints an f64: shortest exact, no trailing ".0").
    pub fn line(&self) -> String {
        let num = |v: &Option<f64>| v.map_or(String::new(), |v| v.to_string());
        let mut s = format!(
            "{},{},{},{},{},{},{},{},{}",
            self.timestamp,
            self.start_timestamp,
            self.interval_s,
            self.since_boot,
            csv_field(&self.disk_device),
            csv_field(&self.kernel_name),
            self.major,
            self.minor,
            self.kind
        );
        for v in &self.disk {
            s.push(',');
            s.push_str(&num(v));
        }
        s.push_str(&format!(
            ",{},{},{}",
            self.wrapped_ms_fields, self.no_value, self.profile_id
        ));
        for v in self.profile.iter().chain(&self.latency) {
            s.push(',');
            s.push_str(&num(v));
        }
        match &self.cpu {
            Some(c) => c.iter().for_each(|v| {
                s.push(',');
                s.push_str(&num(v));
            }),
            None => s.push_str(&",".repeat(CPU_KEYS.len())),
        }
        s.push_str(&judgement_csv(self.judgement.as_ref()));
        s.push('\n');
        s
    }
}

/// The rows of one interval, one per device.
fn csv_rows(r: &IntervalReport) -> Vec<CsvRow> {
    let cpu = r.cpu.as_ref().map(|c| cpu_values(c).map(Some));
    r.devices
        .iter()
        .map(|d| {
            let rates = d.rates.as_ref().ok();
            let sat = d.saturation();
            let lat = d.latency.as_ref().and_then(|l| l.measured());
            CsvRow {
                timestamp: iso_utc(r.end_wall_ns),
                start_timestamp: iso_utc(r.start_wall_ns),
                interval_s: r.interval_s(),
                since_boot: r.since_boot,
                disk_device: d.meta.display_name.clone(),
                kernel_name: d.kernel_name.clone(),
                major: d.major,
                minor: d.minor,
                kind: d.meta.kind.map_or("", |k| k.as_str()).to_string(),
                disk: DISK.iter().map(|c| rates.and_then(c.get)).collect(),
                wrapped_ms_fields: d.wrapped_ms_fields,
                no_value: d.rates.as_ref().err().map_or("", |e| e.as_str()).into(),
                profile_id: sat.as_ref().map_or(String::new(), |s| s.id.clone()),
                profile: PROFILE
                    .iter()
                    .map(|c| sat.as_ref().and_then(c.get))
                    .collect(),
                latency: LATENCY.iter().map(|c| lat.and_then(c.get)).collect(),
                cpu,
                judgement: Some(d.judgement()),
            }
        })
        .collect()
}

fn csv(r: &IntervalReport) -> String {
    csv_rows(r).iter().map(CsvRow::line).collect()
}

/// `stat --csv` of a whole replay (`iosat report FILE.rec --format csv`): the header, then
/// every interval's rows, as `stat --replay FILE --all --csv` prints them. The replay's
/// warnings go to `warn`.
pub fn csv_of_replay(
    steps: impl Iterator<Item = Result<Step, crate::error::Error>>,
    warn: &mut dyn FnMut(String),
) -> Result<String, crate::error::Error> {
    let mut s = preamble(Format::Csv, &[], false);
    for step in steps {
        match step? {
            Step::Start { .. } => {}
            Step::Warning(w) => warn(w),
            Step::Report(r) => s.push_str(&csv(&r)),
        }
    }
    Ok(s)
}

/// [`render`] appended to `out`, a buffer the caller keeps between intervals (JSON is written
/// into it; the other formats are copied).
pub fn render_into(
    r: &IntervalReport,
    format: Format,
    envelope: &Envelope,
    learning: bool,
    out: &mut String,
) {
    match format {
        Format::Json => json_into(r, envelope, out),
        Format::Text { wide: false, .. } | Format::Html => text_narrow_into(r, learning, out),
        _ => out.push_str(&render(r, format, envelope, learning)),
    }
}

/// The bytes for one interval; `envelope` heads each JSON line.
/// `learning`: the run learns, so the judgement's columns are shown from the first report
/// on (a since-boot report or an empty one included): the table keeps its columns.
pub fn render(r: &IntervalReport, format: Format, envelope: &Envelope, learning: bool) -> String {
    match format {
        Format::Text { wide: false, .. } | Format::Html => text_narrow(r, learning),
        Format::Text { wide: true, .. } => {
            let mut s = interval_title(r);
            s.push('\n');
            s.push_str(&cpu_line(r));
            s.push_str(&table(r).to_text());
            s.push_str(&device_notes(r));
            s.push('\n');
            s
        }
        Format::Json => json(r, envelope),
        Format::Csv => csv(r),
        Format::Markdown => {
            let cpu = match cpu_line(r) {
                l if l.is_empty() => l,
                l => format!("`{}`\n\n", l.trim_end()),
            };
            format!(
                "### {}\n\n{cpu}{}\n",
                interval_title(r),
                table(r).to_markdown()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::interval::StatEngine;
    use crate::monitor::select::{DeviceMeta, Selection};
    use crate::monitor::DiskSample;
    use crate::sys::device::DevKind;
    use crate::sys::diskstats::parse;

    /// The table's hand-padded cells are core::fmt's right-aligned ones, a cell wider than
    /// its column included (it pushes the row, after its one space).
    #[test]
    fn cells_padded_by_hand_are_formats() {
        for v in [
            None,
            Some(1.0),
            Some(12345.6),
            Some(123456789.0),
            Some(-0.004),
        ] {
            for (dec, w) in (0..3).flat_map(|d| (0..40).map(move |w| (d, w))) {
                let mut s = String::from("x");
                super::right(&mut s, v, dec, w);
                let want = match v {
                    Some(v) => format!("x {v:>w$.dec$}"),
                    None => format!("x {:>w$}", "-"),
                };
                assert_eq!(s, want, "{v:?} to {dec} in {w}");
            }
        }
    }

    /// The state and headroom cells, written and padded by hand, are what the formatter
    /// wrote: `{:.0}k` past 10,000, `>=` for a ceiling at least, `{:>11}` and `{:>8}`.
    #[test]
    fn state_and_headroom_cells_are_the_formatters() {
        use crate::analysis::state::{Dir, DirJudgement, NoHeadroom};
        let mut j = DirJudgement::unknown(Dir::Read, None);
        for h in [
            None,
            Some(0.0),
            Some(0.5),
            Some(2.5),
            Some(999.49),
            Some(9_999.5),
            Some(10_000.0),
            Some(10_499.99),
            Some(10_500.0),
            Some(123_456.7),
            Some(98_765_432_109.0),
        ] {
            for at_least in [false, true] {
                j.headroom_iops = h;
                j.flags.ceiling_at_least = at_least;
                j.no_headroom = (h == Some(0.0) && at_least).then_some(NoHeadroom::Overloaded);
                let v = match h {
                    None => "-".to_string(),
                    Some(h) if h >= 10_000.0 => format!("{:.0}k", h / 1000.0),
                    Some(h) => format!("{h:.0}"),
                };
                let v = if h.is_some() && at_least && j.no_headroom.is_none() {
                    format!(">={v}")
                } else {
                    v
                };
                let mut s = String::from("x ");
                super::headroom_cell_into(&mut s, &Cells::of(&j));
                super::pad_from(&mut s, 2, 8);
                assert_eq!(s, format!("x {v:>8}"), "{h:?}, at least {at_least}");
            }
        }
        for (basis, estimate, learning, want) in [
            (Basis::None, false, true, "learning"),
            (Basis::None, false, false, "unknown"),
            (Basis::Learned, false, true, "unknown~"),
            (Basis::LearnedEstimate, true, true, "unknown~*"),
            (Basis::Swept, true, false, "unknown*"),
        ] {
            j.basis = basis;
            j.flags = Default::default();
            // A lower-bound ceiling marks the headroom cell, not the state's.
            j.flags.ceiling_at_least = true;
            j.flags.estimate = estimate.then(|| {
                crate::analysis::shared::Shared::new(crate::analysis::state::Estimate {
                    from_level: 2.0,
                    interval_ns: None,
                })
            });
            let mut s = String::new();
            super::state_cell_into(&mut s, &Cells::of(&j), learning);
            super::pad_from(&mut s, 0, 11);
            assert_eq!(s, format!("{want:>11}"));
        }
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(951_782_400_500_000_000), "2000-02-29T00:00:00.500Z");
        assert_eq!(
            iso_utc(1_344_561_790_012_145_298),
            "2012-08-10T01:23:10.012Z"
        );
    }

    fn report() -> IntervalReport {
        let mut e = StatEngine::new(Selection::default(), false);
        let s = |m: u64, t: &str| DiskSample {
            mono_ns: m,
            wall_ns: 1_763_783_400_000_000_000 + m as i64,
            lines: parse(t).lines,
        };
        e.set_meta(
            253,
            0,
            "dm-0",
            DeviceMeta {
                kind: Some(DevKind::Dm),
                display_name: "vg0-root-long".into(),
            },
        );
        e.set_meta(
            254,
            0,
            "vda",
            DeviceMeta {
                kind: Some(DevKind::Disk),
                display_name: "vda".into(),
            },
        );
        e.push(s(1_000_000_000, "254 0 vda 100 0 800 50 10 0 80 20 0 60 70 0 0 0 0 0 0\n253 0 dm-0 5 0 8 1 1 0 8 1 0 1 2\n"));
        e.push(s(2_000_000_000, "254 0 vda 99100 0 1600800 50050 10010 0 80080 20020 3 1059 70070 0 0 0 0 0 0\n253 0 dm-0 4 0 8 1 1 0 8 1 0 1 2\n"))
            .unwrap()
    }

    #[test]
    fn narrow_text_fits_80_columns_and_marks_no_value() {
        let r = report();
        assert_eq!(r.devices[1].rates, Err(NoValue::CounterWentBackwards));
        let t = render(&r, Format::TEXT, &Envelope::default(), false);
        let judged = preamble(
            Format::TEXT,
            &["sda: judged against the profile x".into()],
            false,
        );
        let learning = preamble(Format::TEXT, &[], true);
        for l in t.lines().chain(judged.lines()).chain(learning.lines()) {
            assert!(l.chars().count() <= 80, "{} > 80: {l}", l.len());
        }
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "2025-11-22T03:50:02.000Z  interval 1.000 s");
        assert!(
            lines[2].starts_with(
                "vda       99000.0 10000.0 800000.0  40000.0    0.51    2.00  50.00  20.00   99.9"
            ),
            "{}",
            lines[2]
        );
        assert_eq!(lines[3], "vg0-root-long");
        assert!(lines[4].trim_start().starts_with("- "), "{}", lines[4]);
    }

    /// A row whose reads span size classes is worded in every state, its flag among the
    /// words: overloaded at its worst class's 8.5x with no headroom said so, where before
    /// only a headroom not known was (an overloaded spanning row read "overloaded~ 0" alone).
    #[test]
    fn a_row_whose_requests_span_size_classes_is_worded_in_every_state() {
        let r = report_learned(
            r#"{"state":"overloaded","intervals":100,"learned_s":100,"direction":"read",
            "size_class":"medium","baseline_latency_ns":60000,"baseline_p95_ns":70000,
            "max_iops":50000,"max_iops_at_least":true,"ceiling_at_least":true,"ratio":8.5,
            "headroom_iops":0,"spans_classes":true}"#,
        );
        let t = render(&r, Format::TEXT, &Envelope::default(), true);
        let note = t
            .lines()
            .find(|l| l.starts_with("# vda: "))
            .unwrap_or_else(|| panic!("no note for vda:\n{t}"));
        assert!(
            note.starts_with("# vda: overloaded (read 8.5x learned baseline), headroom 0"),
            "{note}"
        );
        assert!(note.contains("size classes]"), "{note}");
    }

    /// The fixture report with learning's judgement `learned` (a `learned` object's JSON) on
    /// its first row.
    fn report_learned(learned: &str) -> IntervalReport {
        let mut r = report();
        let l: crate::analysis::learned::Learned = serde_json::from_str(learned).unwrap();
        r.devices[0].learned = Some(std::sync::Arc::new(l));
        r
    }

    /// What schemas/stat.schema.json finds wrong in the JSON line `v`, under paths that
    /// contain `under`.
    fn schema_errors(v: &serde_json::Value, under: &str) -> Vec<String> {
        let schema: serde_json::Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schemas/stat.schema.json"
        )))
        .unwrap();
        jsonschema::validator_for(&schema)
            .unwrap()
            .iter_errors(v)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .filter(|e| e.contains(under))
            .collect()
    }

    /// An idle row's learned object with every class at rest (each idle, its share of the
    /// requests learned) is what the schema describes: "idle" among a class's states.
    #[test]
    fn an_idle_rows_classes_at_rest_match_the_schema() {
        let r = report_learned(
            r#"{"state":"idle","intervals":100,"learned_s":100,"direction":"read",
            "size_class":"small","baseline_latency_ns":53005.5543,"baseline_p95_ns":71467.5148,
            "max_iops":19110.7411,"max_iops_at_least":true,"ceiling_at_least":true,
            "headroom_iops":19110.7411,"classes":[
              {"size_class":"small","share":0.817,"state":"idle","ratio":null,
               "baseline_latency_ns":53005.5543,"baseline_p95_ns":71467.5148,
               "max_iops":19110.7411,"max_iops_at_least":true},
              {"size_class":"medium","share":0.183,"state":"idle","ratio":null,
               "baseline_latency_ns":89715.5237,"baseline_p95_ns":120193.554,
               "max_iops":11347.7285,"max_iops_at_least":true}]}"#,
        );
        let env = Envelope::at("stat", SCHEMA_VERSION, 0);
        let v: serde_json::Value = serde_json::from_str(&json(&r, &env)).unwrap();
        let classes = &v["devices"][0]["learned"]["classes"];
        assert_eq!(classes[1]["state"], "idle", "{v}");
        assert_eq!(classes[1]["baseline_latency_ns"], 89715.5237, "{v}");
        // This test's envelope is a fixture's; the learned object is what is checked.
        let errors = schema_errors(&v, "/learned");
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn a_cgroups_io_pressure_is_in_its_note_where_it_has_one() {
        use crate::monitor::cgroups::{CgDir, CgroupIo, DevCgroups, ShareOf};
        let g = |id: u64, name: &str, share: f64, p: (Option<f64>, Option<f64>)| CgroupIo {
            id,
            name: name.into(),
            path: format!("/{name}"),
            read: CgDir {
                requests: 100,
                iops: 100.0,
                mean_ms: Some(2.0),
                ..Default::default()
            },
            write: CgDir::default(),
            share,
            share_of: ShareOf::DeviceTime,
            ratio: Some(1.0),
            baseline_ms: Some(2.0),
            baseline_of: None,
            held_by: None,
            role: None,
            pressure_some_pct: p.0,
            pressure_full_pct: p.1,
        };
        let c = DevCgroups {
            cgroups: vec![
                g(1, "db.service", 0.6, (Some(12.4), Some(3.2))),
                g(2, "job7", 0.3, (None, None)),
                g(3, "old", 0.1, (Some(1.0), None)),
            ],
            verdict: None,
        };
        let text = cgroup_notes("sda", &c);
        assert_eq!(
            text,
            "# sda: cgroups (share of device time): db.service 60 % 100/s 2.00 ms, 1.0x, \
             io.pressure some 12 % full 3 %; job7 30 % 100/s 2.00 ms, 1.0x; old 10 % 100/s \
             2.00 ms, 1.0x, io.pressure some 1 %\n"
        );
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["cgroups"][0]["pressure_full_pct"], 3.2);
        assert!(json["cgroups"][1]["pressure_some_pct"].is_null());
    }

    /// An EBS volume throttled by its IOPS cap 63 % of the interval (monitor::aws).
    fn throttled() -> crate::monitor::aws::AwsInterval {
        use crate::sys::ebs::{Cap, Kind, Share};
        crate::monitor::aws::AwsInterval {
            kind: Kind::EbsVolume,
            volume_id: Some("vol-0abc".into()),
            secs: 1.0,
            shares: vec![
                Share {
                    cap: Cap::VolumeIops,
                    exceeded_us: 630_000,
                    share: 0.63,
                },
                Share {
                    cap: Cap::InstanceIops,
                    exceeded_us: 10_000,
                    share: 0.01,
                },
            ],
            iops: 3000.0,
            bytes_per_s: 12e6,
            queue_length: 16,
            read_latency: Some(crate::monitor::aws::OwnLatency {
                requests: 3000,
                mean_ms: 0.5,
                p95_ms_at_most: Some(1.024),
            }),
            write_latency: None,
            effective_iops: None,
            effective_bytes_per_s: None,
            exceeded_total_s: vec![(Cap::VolumeIops, 12.5)],
            reader: Default::default(),
        }
    }

    #[test]
    fn an_aws_volume_gets_a_thr_column_a_clause_and_its_json() {
        let plain = render(
            &report(),
            Format::Text {
                wide: true,
                width: 200,
                color: false,
            },
            &Envelope::default(),
            false,
        );
        assert!(
            !plain.contains("thr%") && !plain.contains("throttled"),
            "{plain}"
        );
        let mut r = report();
        r.devices[0].aws = Some(std::sync::Arc::new(throttled()));
        let wide = render(
            &r,
            Format::Text {
                wide: true,
                width: 200,
                color: false,
            },
            &Envelope::default(),
            false,
        );
        let lines: Vec<&str> = wide.lines().collect();
        let head = lines.iter().find(|l| l.starts_with("Device")).unwrap();
        assert!(head.trim_end().ends_with("thr%"), "{wide}");
        let vda = lines.iter().find(|l| l.starts_with("vda")).unwrap();
        assert!(vda.trim_end().ends_with(" 63.0"), "{wide}");
        let dm = lines
            .iter()
            .find(|l| l.starts_with("vg0-root-long"))
            .unwrap();
        assert!(dm.trim_end().ends_with('-'), "{wide}");
        assert!(
            wide.contains("# vda: throttled by the volume's IOPS cap 63 % of this second\n"),
            "{wide}"
        );
        let env = Envelope::at("stat", SCHEMA_VERSION, 0);
        let v: serde_json::Value = serde_json::from_str(&json(&r, &env)).unwrap();
        let a = &v["devices"][0]["aws"];
        assert_eq!(
            (&a["kind"], &a["shares"][0]["cap"]),
            (&"ebs_volume".into(), &"volume_iops".into())
        );
        assert!(v["devices"][1].get("aws").is_none());
        // The device's own latency beside, as the schema says it.
        assert_eq!(a["read_latency"]["p95_ms_at_most"], 1.024);
        assert!(a.get("write_latency").is_none());
        // This test's envelope is a fixture's; the aws object is what is checked.
        let errors = schema_errors(&v, "/aws");
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn json_has_sysstat_keys_and_interval() {
        let env = Envelope::at("stat", SCHEMA_VERSION, 0);
        let v: serde_json::Value = serde_json::from_str(&json(&report(), &env)).unwrap();
        assert_eq!(v["schema_version"], 2);
        assert_eq!(
            (&v["kind"], &v["started"]),
            (&"stat".into(), &"1970-01-01T00:00:00.000Z".into())
        );
        assert_eq!(v["interval_s"], 1.0);
        let d = &v["devices"][0];
        assert_eq!(d["disk_device"], "vda");
        assert_eq!(d["r/s"], 99000.0);
        assert_eq!(d["rkB/s"], 800000.0);
        assert_eq!(d["util"], 99.9);
        assert_eq!(d["in_flight"], 3);
        assert!(d["d/s"].is_number());
        assert!(v["devices"][1]["r/s"].is_null());
        assert_eq!(v["devices"][1]["no_value"], "counter_went_backwards");
    }

    #[test]
    fn csv_rows_match_header() {
        let r = report();
        let h = preamble(Format::Csv, &[], false);
        let body = render(&r, Format::Csv, &Envelope::default(), false);
        let n = h.trim_end().split(',').count();
        for l in body.lines() {
            assert_eq!(l.split(',').count(), n, "{l}");
        }
    }
}
