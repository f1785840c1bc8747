//! A stable fuzz harness (issue 12): the parsers users feed files to, run on mutations of the
//! fixtures under tests/fixtures, each input bounded in time. Targets: the diskstats parser,
//! the recording/pt-stalk reader (and the replay's series), the fio, sysbench and iostat
//! importers, `report` (load + every renderer, charts included) on arbitrary JSON, the learned
//! state file and the learned state after loading (intervals added, then estimated and
//! judged), the profile file and the profile commands (`show`, `list` of a fuzzed profile),
//! the web-config file, and the AWS log page 0xD0 parser and its intervals (pages built from
//! the documented layout, docs/caps.md).
//!
//! `cargo test` runs each target for a few seconds (`IOSAT_FUZZ_SECS`, default 2; seed
//! `IOSAT_FUZZ_SEED`, default 1, so a run is reproducible); `scripts/fuzz.sh` runs them for
//! minutes. A panic or an input that takes longer than `IOSAT_FUZZ_HANG_SECS` (default 20)
//! fails the test and leaves the input in target/fuzz-failures/. Mutations are drawn through
//! `arbitrary::Unstructured` from a seeded xorshift stream.

use arbitrary::Unstructured;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn fixture_text(rel: &str) -> Vec<u8> {
    std::fs::read(crate::util::fixture(rel)).unwrap()
}

/// A deterministic byte stream for `Unstructured`.
struct XorShift(u64);

impl XorShift {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                (self.0 >> 24) as u8
            })
            .collect()
    }
}

/// Numbers that break arithmetic: extremes, signs, exponents, non-numbers.
const NASTY: &[&str] = &[
    "0",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967295",
    "4294967296",
    "1e16",
    "1e308",
    "-1e308",
    "1e-320",
    "NaN",
    "inf",
    "99999999999999999999999999",
    "",
    "\u{0}",
    "\u{fffd}",
];

/// One mutation of `input`, chosen by `u`: byte flips, deletions, duplications, splices of
/// another seed, a number replaced by a nasty one, a line repeated or dropped.
fn mutate(u: &mut Unstructured, input: &[u8], seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    let rounds = u.int_in_range(1..=4u8).unwrap_or(1);
    for _ in 0..rounds {
        let len = v.len().max(1);
        let at = u.choose_index(len).unwrap_or(0).min(v.len());
        match u.int_in_range(0..=9u8).unwrap_or(0) {
            0 => {
                if let Some(b) = v.get_mut(at) {
                    *b ^= 1 << u.int_in_range(0..=7u8).unwrap_or(0);
                }
            }
            1 => {
                let n = u.int_in_range(1..=64usize).unwrap_or(1);
                let end = (at + n).min(v.len());
                v.drain(at..end);
            }
            2 => {
                let n = u.int_in_range(1..=256usize).unwrap_or(1);
                let end = (at + n).min(v.len());
                let chunk = v[at..end].to_vec();
                v.splice(at..at, chunk);
            }
            3 => {
                if let Ok(other) = u.choose(seeds) {
                    let from = u
                        .choose_index(other.len().max(1))
                        .unwrap_or(0)
                        .min(other.len());
                    let n = u.int_in_range(1..=512usize).unwrap_or(1);
                    let end = (from + n).min(other.len());
                    v.splice(at..at, other[from..end].iter().copied());
                }
            }
            4 | 5 => {
                // Replace the number at or after `at` by a nasty one.
                let start = (at..v.len()).find(|&i| v[i].is_ascii_digit());
                if let Some(s) = start {
                    let e = (s..v.len())
                        .find(|&i| !(v[i].is_ascii_digit() || b".eE+-".contains(&v[i])))
                        .unwrap_or(v.len());
                    let n = u.choose(NASTY).unwrap_or(&"0");
                    v.splice(s..e, n.bytes());
                }
            }
            6 => {
                // Repeat a line.
                let s = v[..at]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                let e = v[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(v.len(), |p| at + p + 1);
                let line = v[s..e].to_vec();
                let times = u.int_in_range(1..=3usize).unwrap_or(1);
                for _ in 0..times {
                    v.splice(e..e, line.iter().copied());
                }
            }
            8 | 9 => {
                // A field of a whitespace-separated line (a diskstats counter, an iostat
                // column) set to a nasty number.
                let s = v[..at]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                let e = v[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(v.len(), |p| at + p);
                let line = String::from_utf8_lossy(&v[s..e]).into_owned();
                let mut fields: Vec<String> =
                    line.split_ascii_whitespace().map(str::to_string).collect();
                if !fields.is_empty() {
                    let k = u.choose_index(fields.len()).unwrap_or(0);
                    fields[k] = u.choose(NASTY).unwrap_or(&"0").to_string();
                    let lead = if line.starts_with(' ') { " " } else { "" };
                    v.splice(s..e, format!("{lead}{}", fields.join(" ")).into_bytes());
                }
            }
            _ => {
                let b: u8 = u.arbitrary().unwrap_or(0xff);
                v.insert(at, b);
            }
        }
    }
    v
}

/// JSON-aware mutation for `report`: one to three places of the document changed (a number
/// set to an extreme, a value retyped or nulled, a key dropped, an array emptied or grown), so
/// the document still loads and reaches the renderers.
fn mutate_json(u: &mut Unstructured, v: &mut serde_json::Value) {
    use serde_json::Value;
    fn paths(v: &Value, at: &mut Vec<String>, out: &mut Vec<String>) {
        out.push(at.join("/"));
        match v {
            Value::Object(m) => m.iter().for_each(|(k, x)| {
                at.push(k.replace('~', "~0").replace('/', "~1"));
                paths(x, at, out);
                at.pop();
            }),
            Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| {
                at.push(i.to_string());
                paths(x, at, out);
                at.pop();
            }),
            _ => {}
        }
    }
    let mut all = Vec::new();
    paths(v, &mut Vec::new(), &mut all);
    let rounds = u.int_in_range(1..=3u8).unwrap_or(1);
    for _ in 0..rounds {
        let Ok(p) = u.choose(&all) else { return };
        let ptr = if p.is_empty() {
            String::new()
        } else {
            format!("/{p}")
        };
        let nasty = match u.int_in_range(0..=11u8).unwrap_or(0) {
            0 => serde_json::json!(1e16),
            1 => serde_json::json!(1e308),
            2 => serde_json::json!(-1e308),
            3 => serde_json::json!(u64::MAX),
            4 => serde_json::json!(i64::MIN),
            5 => serde_json::json!(0),
            6 => serde_json::json!(-1),
            7 => serde_json::json!(5e-324),
            8 => Value::Null,
            9 => serde_json::json!("x"),
            10 => serde_json::json!([]),
            _ => serde_json::json!(1e9),
        };
        if let Some(x) = v.pointer_mut(&ptr) {
            match x {
                Value::Array(a) if u.ratio(1u8, 2).unwrap_or(false) && a.len() < 64 => {
                    let first = a.first().cloned().unwrap_or(Value::Null);
                    a.push(first);
                }
                _ => *x = nasty,
            }
        }
    }
}

/// Run `f` on generated inputs for the time budget; a panic or a hang fails with the input
/// saved. Returns how many inputs ran.
fn fuzz(
    name: &str,
    gen: impl Fn(&mut Unstructured) -> Vec<u8> + Send + 'static,
    f: fn(&[u8]),
) -> u64 {
    let secs = env_u64("IOSAT_FUZZ_SECS", 2);
    let hang = Duration::from_secs(env_u64("IOSAT_FUZZ_HANG_SECS", 20));
    let seed = env_u64("IOSAT_FUZZ_SEED", 1);
    let current: Arc<Mutex<Vec<u8>>> = Arc::default();
    let started_ms = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let ran = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let worker = {
        let (current, started_ms, done, ran) = (
            current.clone(),
            started_ms.clone(),
            done.clone(),
            ran.clone(),
        );
        std::thread::spawn(move || {
            let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let deadline = Instant::now() + Duration::from_secs(secs);
            while Instant::now() < deadline {
                let raw = rng.bytes(4096);
                let mut u = Unstructured::new(&raw);
                let input = gen(&mut u);
                *current.lock().unwrap() = input.clone();
                started_ms.store(t0.elapsed().as_millis() as u64 + 1, SeqCst);
                f(&input);
                started_ms.store(0, SeqCst);
                ran.fetch_add(1, SeqCst);
            }
            done.store(true, SeqCst);
        })
    };
    loop {
        std::thread::sleep(Duration::from_millis(50));
        if worker.is_finished() {
            break;
        }
        let s = started_ms.load(SeqCst);
        if s > 0 && (t0.elapsed().as_millis() as u64).saturating_sub(s) > hang.as_millis() as u64 {
            let input = current.lock().map(|c| c.clone()).unwrap_or_default();
            let p = save_failure(name, "hang", &input);
            panic!(
                "fuzz {name}: an input ran longer than {hang:?}; saved in {}",
                p.display()
            );
        }
    }
    if let Err(e) = worker.join() {
        let input = current
            .lock()
            .map(|c| c.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        let p = save_failure(name, "panic", &input);
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        panic!(
            "fuzz {name}: panicked ({msg}); input saved in {}",
            p.display()
        );
    }
    assert!(done.load(SeqCst));
    let n = ran.load(SeqCst);
    eprintln!("fuzz {name}: {n} inputs in {secs} s, no panic, no hang");
    n
}

fn save_failure(name: &str, what: &str, input: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let h = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let p = dir.join(format!("{name}-{what}-{h:016x}"));
    let _ = std::fs::write(&p, input);
    p
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn seeds(rels: &[&str]) -> Vec<Vec<u8>> {
    rels.iter().map(|r| fixture_text(r)).collect()
}

fn byte_gen(rels: &'static [&'static str]) -> impl Fn(&mut Unstructured) -> Vec<u8> + Send {
    let s = seeds(rels);
    move |u| {
        let base = u.choose(&s).cloned().unwrap_or_default();
        mutate(u, &base, &s)
    }
}

const RECORDINGS: &[&str] = &[
    "report/loop.rec",
    "stat/pair.rec",
    "stat/profiled.rec",
    "stat/pt-stalk.diskstats",
    "import/iosat-loop.rec",
    "import/pt-stalk-loop.diskstats",
];

#[test]
fn fuzz_diskstats_parser() {
    let n = fuzz("diskstats", byte_gen(RECORDINGS), |b| {
        let t = text(b);
        let _ = iosat::sys::diskstats::parse(&t);
        for l in t.lines() {
            let _ = iosat::sys::diskstats::parse_line(l);
        }
    });
    assert!(n > 0);
}

#[test]
fn fuzz_recording_and_pt_stalk_reader() {
    let n = fuzz("recording", byte_gen(RECORDINGS), |b| {
        let (t, _) = iosat::sys::fs::text_of(b.to_vec());
        let _ = iosat::monitor::record::parse(&t);
        if let Ok(store) =
            iosat::monitor::series::SeriesStore::from_text(&t, Some(iosat::learn::in_memory()))
        {
            let mut profiles = iosat::profile::ProfileCache::new(None, iosat::sys::Root::default());
            let _ = store.series(&mut profiles);
        }
        let _ = iosat::import::parse(Path::new("fuzz.rec"), &t);
    });
    assert!(n > 0);
}

#[test]
fn fuzz_fio_sysbench_iostat_importers() {
    const IMPORTS: &[&str] = &[
        "import/fio-qd1.json",
        "import/fio-multi.json",
        "import/fio-randrw-qd4.json",
        "import/fio-randwrite-fsync4.json",
        "import/sysbench-t1.txt",
        "import/sysbench-rndrw-t2.txt",
        "import/iostat-x.txt",
        "import/iostat-xt-iso.txt",
        "import/iostat-human.txt",
        "import/iostat.json",
    ];
    let n = fuzz("importers", byte_gen(IMPORTS), |b| {
        let t = text(b);
        let p = Path::new("fuzz.txt");
        let _ = iosat::import::fio::parse(p, &t);
        let _ = iosat::import::sysbench::parse(p, &t);
        let _ = iosat::import::iostat::parse(p, &t);
        if let Ok(imp) = iosat::import::parse(p, &t) {
            if let Ok(r) = iosat::import::report::build(&[imp], &[]) {
                let _ = serde_json::to_string(&r);
            }
        }
    });
    assert!(n > 0);
}

#[test]
fn fuzz_report_on_arbitrary_json() {
    let docs: Vec<serde_json::Value> = [
        "report/sim_sweep.json",
        "report/fsync.json",
        "report/seed000_levels.json",
    ]
    .iter()
    .map(|r| serde_json::from_slice(&fixture_text(r)).unwrap())
    .collect();
    let gen = move |u: &mut Unstructured| {
        if u.ratio(1u8, 5).unwrap_or(false) {
            // Raw bytes of a document, mutated blindly.
            let d = u.choose(&docs).cloned().unwrap_or_default();
            let s = serde_json::to_vec(&d).unwrap();
            return mutate(u, &s, &[]);
        }
        let mut d = u.choose(&docs).cloned().unwrap_or_default();
        mutate_json(u, &mut d);
        serde_json::to_vec(&d).unwrap()
    };
    let n = fuzz("report", gen, |b| {
        if let Ok(r) = iosat::report::load(&text(b)) {
            use iosat::report::Format;
            for f in [
                Format::TEXT,
                Format::Json,
                Format::Csv,
                Format::Markdown,
                Format::Html,
            ] {
                let _ = iosat::report::render(&r, f);
            }
        }
    });
    assert!(n > 0);
}

#[test]
fn fuzz_learned_state_file() {
    let n = fuzz("learned", byte_gen(&["learn/state.json"]), |b| {
        use iosat::learn::model::{Dir, SizeClass};
        if let Ok((Some(model), _)) = iosat::learn::store::parse(&text(b), "fuzz", None) {
            for dir in [Dir::Read, Dir::Write] {
                for class in [SizeClass::Small, SizeClass::Medium, SizeClass::Large] {
                    if let Some(s) = model.series(dir, class) {
                        let _ = iosat::learn::estimate::estimate(s, Some(2e6));
                    }
                }
            }
            let c = model.compacted();
            let _ = iosat::learn::store::render("fuzz", None, &c);
        }
    });
    assert!(n > 0);
}

/// Issue 39: the learned state *after loading*: a fuzzed state file that loads, then
/// intervals added to it (points of the input's own bytes, extremes included), then an
/// estimate of every series and a judgement: what `stat` does with a loaded file. Before the
/// file checks, a series of fewer than 9 buckets panicked at the first interval (case 3).
#[test]
fn fuzz_learned_state_after_loading() {
    let n = fuzz("learned-loaded", byte_gen(&["learn/state.json"]), |b| {
        use iosat::learn::model::{Dir, Point, SizeClass};
        let Ok((Some(mut model), _)) = iosat::learn::store::parse(&text(b), "fuzz", None) else {
            return;
        };
        // Points from the input's bytes: ordinary ones and extremes.
        const X: [f64; 8] = [1.0, 0.5, 3.0, 1e3, 1e9, 1e300, 1e-300, 0.0];
        let last = model.last_wall_ns.unwrap_or(0);
        for (i, w) in b.chunks(4).take(64).enumerate() {
            let g = |k: usize| X[usize::from(*w.get(k).unwrap_or(&0)) % X.len()];
            let p = Point {
                dir: if i % 3 == 0 { Dir::Write } else { Dir::Read },
                wall_ns: last.saturating_add(i as i64 * 1_000_000_000),
                interval_s: 1.0,
                whole_s: 1.0,
                requests: 100.0 * g(0),
                busy_ms: 1000.0 * g(1),
                bytes: 4096.0 * 100.0 * g(2),
                pcts_ns: (g(3) > 1.0).then(|| [1e6 * g(3), 3e6 * g(3), 9e6 * g(3)]),
                device_ns: None,
                other_requests: 0.0,
            };
            model.add_interval(p.wall_ns, 1.0, &[p]);
        }
        for dir in [Dir::Read, Dir::Write] {
            for class in [SizeClass::Small, SizeClass::Medium, SizeClass::Large] {
                if let Some(s) = model.series(dir, class) {
                    let c = iosat::learn::estimate::estimate(s, Some(2e6));
                    if let Some(base) = &c.baseline {
                        let ratio = 3e6 / base.latency_ns;
                        let _ = iosat::learn::State::of_ratio(Some(ratio));
                    }
                }
            }
        }
        let _ = iosat::learn::store::render("fuzz", None, &model.compacted());
    });
    assert!(n > 0);
}

/// The profile commands on a fuzzed profile: parsed as `profile list/show` read it, then
/// shown and listed in text and JSON (escapes and absurd dates included).
#[test]
fn fuzz_profile_commands() {
    let n = fuzz(
        "profile-cmd",
        byte_gen(&["profile/saved-0.1.read.json"]),
        |b| {
            use iosat::report::Format;
            let Ok(p) = iosat::profile::parse_profile("fuzz\u{1b}[2J", &text(b)) else {
                return;
            };
            let l = iosat::profile::Listed {
                id: "fuzz".into(),
                direction: p.direction,
                path: PathBuf::from("/nonexistent/fuzz.read.json"),
                profile: p,
            };
            let one = std::slice::from_ref(&l);
            let text_fmt = Format::Text {
                wide: false,
                width: 80,
                color: false,
            };
            for f in [text_fmt, Format::Json] {
                let shown = iosat::report::profile::show(one, f);
                let listed = iosat::report::profile::list("/nonexistent", one, f);
                assert!(
                    !shown.contains('\u{1b}') && !listed.contains('\u{1b}'),
                    "{shown}"
                );
            }
            let _ = l.profile.judged_against();
        },
    );
    assert!(n > 0);
}

#[test]
fn fuzz_profile_file() {
    let n = fuzz("profile", byte_gen(&["profile/saved-0.1.read.json"]), |b| {
        let _ = iosat::profile::parse_profile("fuzz", &text(b));
    });
    assert!(n > 0);
}

#[test]
fn fuzz_web_config() {
    let n = fuzz("webconfig", byte_gen(&["exporter/web-config.yml"]), |b| {
        let _ = iosat::exporter::webconfig::parse(&text(b), Path::new("/nonexistent"));
    });
    assert!(n > 0);
}

/// Log pages 0xD0 built from the documented layout (docs/caps.md): an EBS page of 4,096
/// bytes and an instance-storage page of 8,192 (version 1, three size ranges), counters near
/// the top of their range so that mutations cross it.
fn aws_pages() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (len, magic, version) in [(4096usize, 0x3C23_B510u32, 0u32), (8192, 0xEC2C_0D7E, 1)] {
        let mut b = vec![0u8; len];
        b[0..4].copy_from_slice(&magic.to_le_bytes());
        b[4..8].copy_from_slice(&version.to_le_bytes());
        for i in 0..11u64 {
            let o = 8 + 8 * i as usize;
            b[o..o + 8].copy_from_slice(&(u64::MAX - i * 1000).to_le_bytes());
        }
        for at in [512usize, 2056] {
            b[at..at + 8].copy_from_slice(&28u64.to_le_bytes());
            for k in 0..28 {
                let o = at + 8 + k * 24;
                b[o..o + 8].copy_from_slice(&(1u64 << k).to_le_bytes());
                b[o + 8..o + 16].copy_from_slice(&(2u64 << k).to_le_bytes());
                b[o + 16..o + 20].copy_from_slice(&(k as u32 * 7).to_le_bytes());
            }
        }
        if len == 8192 {
            b[3600..3604].copy_from_slice(&3u32.to_le_bytes());
            for (i, s) in [4096u32, 65536, u32::MAX].iter().enumerate() {
                b[3604 + 4 * i..3608 + 4 * i].copy_from_slice(&s.to_le_bytes());
            }
            for (i, c) in b[4096..].chunks_mut(8).enumerate() {
                c.copy_from_slice(&(i as u64).to_le_bytes());
            }
        }
        out.push(b);
    }
    out
}

#[test]
fn fuzz_aws_log_page() {
    let seeds = aws_pages();
    let gen = move |u: &mut Unstructured| {
        let base = u.choose(&seeds).cloned().unwrap_or_default();
        mutate(u, &base, &seeds)
    };
    let n = fuzz("aws-log-page", gen, |b| {
        use iosat::sys::ebs;
        if let Ok(c) = ebs::parse_page(b) {
            for &cap in c.kind.caps() {
                let _ = c.exceeded_us(cap);
            }
        }
        let _ = ebs::parse_identify(b).map(|i| ebs::identify(&i));
        // A second read: each counter advanced (wrapping) by the u64 at the same place in
        // the reserved bytes 96-183 (zero in the seeds, so mutations make the advances), and
        // the interval both ways round.
        let Ok(p) = ebs::parse_page(b) else {
            return;
        };
        let x = |i: usize| {
            b.get(96 + 8 * i..104 + 8 * i)
                .map_or(0, |w| u64::from_le_bytes(w.try_into().unwrap()))
        };
        let mut q = p.clone();
        for (i, f) in [
            &mut q.read_ops,
            &mut q.write_ops,
            &mut q.read_bytes,
            &mut q.write_bytes,
            &mut q.read_time_us,
            &mut q.write_time_us,
            &mut q.volume_iops_exceeded_us,
            &mut q.volume_throughput_exceeded_us,
            &mut q.instance_iops_exceeded_us,
            &mut q.instance_throughput_exceeded_us,
            &mut q.queue_length,
        ]
        .into_iter()
        .enumerate()
        {
            *f = f.wrapping_add(x(i));
        }
        let s = |at_ns, counters| ebs::Sample { at_ns, counters };
        let (a, c) = (s(1_000_000_000, p), s(2_000_000_000, q));
        if let Ok(i) = ebs::interval(&a, &c) {
            assert!(i.shares.iter().all(|s| (0.0..=1.0).contains(&s.share)));
        }
        let _ = ebs::interval(&c, &a);
    });
    assert!(n > 0);
}

/// `nvme amzn stats` / `ebsnvme stats` output (import::amzn, `analyze --aws-stats`): any
/// mutation of the two fixtures parses or is refused, and what parses sets beside a recording
/// without a panic (a counter near the top of its range, a zero-second period).
#[test]
fn fuzz_aws_stats_output() {
    const AWS: &[&str] = &["aws/nvme-amzn-stats.json", "aws/ebsnvme-stats-i1.txt"];
    let n = fuzz("aws-stats", byte_gen(AWS), |b| {
        if let Ok(p) = iosat::import::amzn::parse(&text(b)) {
            let _ = iosat::import::amzn::beside(&p, "nvme1n1", 600.0, 1000.0);
            let _ = iosat::import::amzn::beside(&p, "nvme1n1", 0.0, 0.0);
        }
    });
    assert!(n > 0);
}
