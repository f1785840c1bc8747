//! Who suffers and who loads a saturated device (issue 40): from one interval's cgroups on the
//! device (each one's share of the device's time, its latency against its own baseline, the
//! limit it is held at) and the device's recent intervals, the victims (latency well above their
//! own baseline while the device is saturated), the likely aggressors (a share of the device's
//! time above their usual one), ranked, with the strength of the correlation between each
//! aggressor's share and the first victim's latency over the recent intervals — stated as
//! correlation, never as proof — the cgroups held by their own limit (throttled, not victims of
//! the device), and the setting that would protect the victim. Pure.
//! Imports only: analysis/, units.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// A cgroup's latency this many times its baseline, while the device is saturated, makes it a
/// victim (the house's saturated threshold).
pub const VICTIM_RATIO: f64 = 1.5;
/// A share of the device's time this much above its usual one makes a cgroup a likely
/// aggressor; one with no usual share needs [`NEW_AGGRESSOR_SHARE`].
pub const SHARE_RISE: f64 = 0.10;
pub const NEW_AGGRESSOR_SHARE: f64 = 0.25;
/// Requests a cgroup needs in an interval to be judged (or to learn from it).
pub const MIN_REQUESTS: u64 = 5;
/// Calm intervals a cgroup's own baseline needs before it is used (else the device's).
pub const MIN_BASELINE_INTERVALS: u32 = 3;
/// A cgroup with this share of the device's time is alone on it: its latency then is its own
/// (no one else can have raised it), whatever the device's state.
pub const ALONE_SHARE: f64 = 0.9;
/// Intervals the correlation is taken over.
pub const HISTORY: usize = 120;
/// Intervals with both figures a correlation needs to be stated.
pub const MIN_CORRELATED: usize = 5;
/// A cgroup whose tasks all stalled on I/O (`io.pressure` full) for this share of an interval
/// (%), and at least [`VICTIM_RATIO`] times its own usual, is a victim where its latency does
/// not say so.
pub const PRESSURE_FULL_PCT: f64 = 10.0;

/// What a cgroup's ratio is taken against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BaselineOf {
    /// Its own latency while the device was not saturated.
    Own,
    /// The device's baseline (one request in flight), until it has its own.
    Device,
}

/// A cgroup's role in a saturated interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Victim,
    Aggressor,
    /// Held by its own limit: slow because of it, not because of the device.
    Throttled,
}

/// A throttle on a cgroup and device (its own or an ancestor's): cgroup v2 `io.max`, v1
/// `blkio.throttle.*_device`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    /// "riops", "wiops", "rbps", "wbps".
    pub kind: String,
    pub value: u64,
    /// The file that sets it.
    pub file: String,
}

impl Limit {
    /// Is a cgroup doing `read`/`write` (IOPS, bytes/s) at this limit (within 10 % below it,
    /// or above it)?
    pub fn holds(&self, read: (f64, f64), write: (f64, f64)) -> bool {
        let at = match self.kind.as_str() {
            "riops" => read.0,
            "wiops" => write.0,
            "rbps" => read.1,
            "wbps" => write.1,
            _ => return false,
        };
        self.value > 0 && at >= 0.9 * self.value as f64
    }

    /// "io.max riops=500 (/sys/fs/cgroup/x/io.max)".
    pub fn text(&self) -> String {
        let setting = if self.file.ends_with("io.max") {
            format!("io.max {}={}", self.kind, self.value)
        } else {
            let f = self.file.rsplit('/').next().unwrap_or(&self.file);
            format!("{f} {}", self.value)
        };
        format!("{setting} ({})", self.file)
    }
}

/// One cgroup of the interval, as the verdict needs it.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    pub id: u64,
    pub name: &'a str,
    /// Its path, and whether it is in cgroup v1's blkio hierarchy (the settings differ).
    pub path: &'a str,
    pub v1: bool,
    pub share: f64,
    pub ratio: Option<f64>,
    pub baseline_ms: Option<f64>,
    /// The baseline is its own (else the device's).
    pub own_baseline: bool,
    pub requests: u64,
    pub held_by: Option<&'a Limit>,
    /// IOPS read and write.
    pub iops: (f64, f64),
    /// Its `io.pressure` full over the interval (% of it; cgroup v2 only) and its usual one
    /// while the device was calm (None: not learned yet).
    pub pressure_full_pct: Option<f64>,
    pub usual_pressure_pct: Option<f64>,
}

/// One cgroup's figures of one interval, kept for the correlation.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub id: u64,
    pub share: f64,
    pub ratio: Option<f64>,
    pub requests: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Victim {
    pub id: u64,
    pub name: String,
    /// Its latency over its own baseline; None when its io.pressure alone names it.
    pub ratio: Option<f64>,
    pub baseline_ms: Option<f64>,
    pub baseline_of: Option<BaselineOf>,
    /// Named by its `io.pressure` (its latency alone does not say so): full over the interval
    /// and its usual, % of an interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pressure_full_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usual_pressure_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aggressor {
    pub id: u64,
    pub name: String,
    pub share: f64,
    /// Its share while the device was not saturated (None: not seen then).
    pub usual_share: Option<f64>,
    /// Pearson's r between its share and the first victim's ratio over the recent intervals,
    /// and how many intervals it is over (None: too few, or no victim).
    pub correlation: Option<f64>,
    pub intervals: usize,
    pub strength: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throttled {
    pub id: u64,
    pub name: String,
    pub limit: Limit,
}

/// The verdict of one device's saturated interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub victims: Vec<Victim>,
    pub aggressors: Vec<Aggressor>,
    pub throttled: Vec<Throttled>,
    /// The setting that would protect the first victim (a starting point, not a tuned value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protect: Option<String>,
    /// All of it in one sentence.
    pub sentence: String,
}

impl Verdict {
    pub fn role_of(&self, id: u64) -> Option<Role> {
        if self.throttled.iter().any(|t| t.id == id) {
            Some(Role::Throttled)
        } else if self.victims.iter().any(|v| v.id == id) {
            Some(Role::Victim)
        } else if self.aggressors.iter().any(|a| a.id == id) {
            Some(Role::Aggressor)
        } else {
            None
        }
    }
}

/// Pearson's correlation of paired samples; None when either does not vary.
pub fn pearson(xy: &[(f64, f64)]) -> Option<f64> {
    let n = xy.len() as f64;
    if xy.len() < 2 {
        return None;
    }
    let (mx, my) = (
        xy.iter().map(|p| p.0).sum::<f64>() / n,
        xy.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for &(x, y) in xy {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// "strong", "moderate", "weak" for a correlation; what too few intervals are called.
pub fn strength(r: Option<f64>) -> &'static str {
    match r {
        Some(r) if r >= 0.7 => "strong",
        Some(r) if r >= 0.4 => "moderate",
        Some(_) => "weak",
        None => "not measurable yet",
    }
}

/// The verdict of a saturated interval: `rows` the device's cgroups of the interval, `history`
/// its recent intervals (this one last), `usual` each cgroup's share while the device was not
/// saturated.
pub fn verdict(
    rows: &[Candidate<'_>],
    history: &VecDeque<Vec<Seen>>,
    usual: &dyn Fn(u64) -> Option<f64>,
) -> Verdict {
    let throttled: Vec<Throttled> = rows
        .iter()
        .filter_map(|r| {
            Some(Throttled {
                id: r.id,
                name: r.name.to_string(),
                limit: r.held_by?.clone(),
            })
        })
        .collect();
    let held = |id: u64| throttled.iter().any(|t| t.id == id);
    // Likely aggressors first: a share of the device's time above their usual one.
    let mut aggressors: Vec<Aggressor> = rows
        .iter()
        .filter(|r| !held(r.id))
        .filter_map(|r| {
            let u = usual(r.id);
            let rose = match u {
                Some(u) => r.share >= u + SHARE_RISE,
                None => r.share >= NEW_AGGRESSOR_SHARE,
            };
            rose.then(|| Aggressor {
                id: r.id,
                name: r.name.to_string(),
                share: r.share,
                usual_share: u,
                correlation: None,
                intervals: 0,
                strength: strength(None),
            })
        })
        .collect();
    aggressors.sort_by(|a, b| {
        let rise = |x: &Aggressor| x.share - x.usual_share.unwrap_or(0.0);
        rise(b).total_cmp(&rise(a))
    });
    // Victims: slower than their own baseline (never the device's: a cgroup new to the device
    // has no usual latency to have risen from), not held, not loading the device themselves.
    // Where the latency does not say so (no own baseline yet, or below the threshold), its
    // io.pressure can: its tasks all stalled on I/O for a tenth of the interval or more, and
    // 1.5x its own usual (learned while the device was calm) or more.
    let mut victims: Vec<Victim> = rows
        .iter()
        .filter(|r| !held(r.id) && r.requests >= MIN_REQUESTS)
        .filter(|r| !aggressors.iter().any(|a| a.id == r.id))
        .filter_map(|r| {
            let by_latency = r
                .ratio
                .filter(|&x| r.own_baseline && x >= VICTIM_RATIO)
                .map(|x| Victim {
                    id: r.id,
                    name: r.name.to_string(),
                    ratio: Some(x),
                    baseline_ms: r.baseline_ms,
                    baseline_of: Some(BaselineOf::Own),
                    pressure_full_pct: None,
                    usual_pressure_pct: None,
                });
            by_latency.or_else(|| {
                let (full, usual) = (r.pressure_full_pct?, r.usual_pressure_pct?);
                (full >= PRESSURE_FULL_PCT && full >= usual * VICTIM_RATIO).then(|| Victim {
                    id: r.id,
                    name: r.name.to_string(),
                    ratio: None,
                    baseline_ms: None,
                    baseline_of: None,
                    pressure_full_pct: Some(full),
                    usual_pressure_pct: Some(usual),
                })
            })
        })
        .collect();
    // By latency ratio first, then by pressure.
    victims.sort_by(|a, b| {
        let key = |v: &Victim| (v.ratio.unwrap_or(0.0), v.pressure_full_pct.unwrap_or(0.0));
        let (ka, kb) = (key(a), key(b));
        kb.0.total_cmp(&ka.0).then(kb.1.total_cmp(&ka.1))
    });
    match victims.first().map(|v| v.id) {
        Some(v) => {
            for a in &mut aggressors {
                (a.correlation, a.intervals) = correlate(history, a.id, v);
                a.strength = strength(a.correlation);
            }
        }
        // No one suffers: a large share alone makes no one an aggressor.
        None => aggressors.clear(),
    }
    let protect = protect(rows, &victims, &aggressors);
    let sentence = sentence(&victims, &aggressors, &throttled, protect.as_deref());
    Verdict {
        victims,
        aggressors,
        throttled,
        protect,
        sentence,
    }
}

/// The correlation of `aggressor`'s share with `victim`'s ratio over the intervals where the
/// victim had requests (the aggressor's share 0 where it had none).
fn correlate(history: &VecDeque<Vec<Seen>>, aggressor: u64, victim: u64) -> (Option<f64>, usize) {
    let pairs: Vec<(f64, f64)> = history
        .iter()
        .filter_map(|i| {
            let v = i
                .iter()
                .find(|s| s.id == victim && s.requests >= MIN_REQUESTS)?;
            let a = i
                .iter()
                .find(|s| s.id == aggressor)
                .map_or(0.0, |s| s.share);
            Some((a, v.ratio?))
        })
        .collect();
    if pairs.len() < MIN_CORRELATED {
        return (None, pairs.len());
    }
    (pearson(&pairs), pairs.len())
}

/// The setting that would protect the first victim from the first aggressor.
fn protect(rows: &[Candidate<'_>], victims: &[Victim], aggressors: &[Aggressor]) -> Option<String> {
    let first = victims.first()?.id;
    let v = rows.iter().find(|r| r.id == first)?;
    let a = aggressors
        .first()
        .and_then(|a| rows.iter().find(|r| r.id == a.id));
    if !v.v1 {
        // cgroup v2: a latency target on the victim protects it from every sibling.
        let target_us = v
            .baseline_ms
            .map(|b| ((b * 1.5 * 1000.0) / 100.0).ceil() * 100.0)?;
        let whose = if v.own_baseline {
            "its baseline"
        } else {
            "the device's baseline: it has none of its own yet"
        };
        let mut s = format!(
            "io.latency target={target_us:.0} (µs, 1.5x {whose}) on {}",
            v.path
        );
        if let Some(a) = a {
            s.push_str(&format!(
                ", or io.weight higher on {} than on {}",
                v.path, a.path
            ));
        }
        return Some(s);
    }
    // cgroup v1: no latency target; a throttle on the aggressor.
    let a = a?;
    let (kind, rate) = if a.iops.0 >= a.iops.1 {
        ("read", a.iops.0)
    } else {
        ("write", a.iops.1)
    };
    Some(format!(
        "blkio.throttle.{kind}_iops_device at about {:.0} (half its rate now: a starting point) \
         on {}",
        (rate / 2.0).max(1.0),
        a.path
    ))
}

fn sentence(
    victims: &[Victim],
    aggressors: &[Aggressor],
    throttled: &[Throttled],
    protect: Option<&str>,
) -> String {
    let mut parts = Vec::new();
    if let Some(v) = victims.first() {
        match (v.ratio, v.pressure_full_pct) {
            (Some(r), _) => parts.push(format!("{} waits {r:.1}x its usual latency", v.name)),
            (None, Some(f)) => parts.push(format!(
                "{}'s tasks all stalled on I/O {f:.0} % of the interval (io.pressure full; \
                 usually {:.0} %)",
                v.name,
                v.usual_pressure_pct.unwrap_or(0.0)
            )),
            (None, None) => {}
        }
    }
    if let Some(a) = aggressors.first() {
        let usual = match a.usual_share {
            Some(u) => format!(" (usually {:.0} %)", u * 100.0),
            None => String::new(),
        };
        let corr = match a.correlation {
            Some(r) => format!(
                "; {} correlation with the victim's latency (r = {r:.2} over {} intervals), not \
                 proof",
                a.strength, a.intervals
            ),
            None if victims.is_empty() => String::new(),
            None => format!(
                "; correlation not measurable yet ({} intervals)",
                a.intervals
            ),
        };
        parts.push(format!(
            "{} takes {:.0} % of the device's time{usual}{corr}",
            a.name,
            a.share * 100.0
        ));
    }
    for t in throttled {
        parts.push(format!("{} is throttled by {}", t.name, t.limit.text()));
    }
    if let Some(p) = protect {
        parts.push(format!("to protect {}: {p}", victims[0].name));
    }
    if parts.is_empty() {
        return "no cgroup stands out".to_string();
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand<'a>(id: u64, name: &'a str, share: f64, ratio: f64) -> Candidate<'a> {
        Candidate {
            id,
            name,
            path: name,
            v1: false,
            share,
            ratio: Some(ratio),
            baseline_ms: Some(2.0),
            own_baseline: true,
            requests: 100,
            held_by: None,
            iops: (400.0, 0.0),
            pressure_full_pct: None,
            usual_pressure_pct: None,
        }
    }

    fn seen(id: u64, share: f64, ratio: f64) -> Seen {
        Seen {
            id,
            share,
            ratio: Some(ratio),
            requests: 100,
        }
    }

    #[test]
    fn the_victim_and_the_aggressor_with_the_strength_of_their_correlation() {
        // 10 calm intervals (db alone, ratio 1), then 10 with batch taking 90 %.
        let mut h = VecDeque::new();
        for i in 0..20 {
            if i < 10 {
                h.push_back(vec![seen(1, 1.0, 1.0 + i as f64 * 0.01)]);
            } else {
                h.push_back(vec![seen(1, 0.1, 4.0), seen(2, 0.9, 1.0)]);
            }
        }
        let rows = [cand(1, "/db", 0.1, 4.0), cand(2, "/batch", 0.9, 1.0)];
        let v = verdict(&rows, &h, &|id| (id == 1).then_some(1.0));
        assert_eq!(v.victims.len(), 1);
        assert_eq!(v.victims[0].name, "/db");
        assert_eq!(v.aggressors.len(), 1);
        let a = &v.aggressors[0];
        assert_eq!(a.name, "/batch");
        assert!(a.correlation.unwrap() > 0.99, "{a:?}");
        assert_eq!(a.strength, "strong");
        assert_eq!(a.intervals, 20);
        assert!(v.sentence.contains("not proof"), "{}", v.sentence);
        assert!(
            v.protect
                .as_deref()
                .unwrap()
                .starts_with("io.latency target=3000"),
            "{:?}",
            v.protect
        );
        assert_eq!(v.role_of(1), Some(Role::Victim));
        assert_eq!(v.role_of(2), Some(Role::Aggressor));
    }

    #[test]
    fn a_cgroup_at_its_own_limit_is_throttled_not_a_victim() {
        let l = Limit {
            kind: "riops".into(),
            value: 100,
            file: "/sys/fs/cgroup/blkio/x/blkio.throttle.read_iops_device".into(),
        };
        assert!(l.holds((95.0, 0.0), (0.0, 0.0)));
        assert!(!l.holds((50.0, 0.0), (0.0, 0.0)));
        let mut slow = cand(1, "/x", 0.2, 5.0);
        slow.held_by = Some(&l);
        let v = verdict(&[slow], &VecDeque::new(), &|_| None);
        assert!(v.victims.is_empty());
        assert_eq!(v.role_of(1), Some(Role::Throttled));
        assert!(v.sentence.contains("blkio.throttle.read_iops_device 100"));
    }

    #[test]
    fn too_few_intervals_give_no_correlation_and_say_so() {
        let mut h = VecDeque::new();
        h.push_back(vec![seen(1, 0.1, 4.0), seen(2, 0.9, 1.0)]);
        let rows = [cand(1, "/db", 0.1, 4.0), cand(2, "/batch", 0.9, 1.0)];
        let v = verdict(&rows, &h, &|_| None);
        assert_eq!(v.aggressors[0].correlation, None);
        // Without a victim there is no aggressor, however large a share.
        let calm = [cand(1, "/db", 0.1, 1.0), cand(2, "/batch", 0.9, 1.0)];
        assert!(verdict(&calm, &h, &|_| None).aggressors.is_empty());
        assert!(v.sentence.contains("not measurable yet"), "{}", v.sentence);
        // No one stands out on a device everyone shares as usual.
        let rows = [cand(1, "/a", 0.5, 1.0), cand(2, "/b", 0.5, 1.0)];
        let v = verdict(&rows, &h, &|_| Some(0.5));
        assert!(v.victims.is_empty() && v.aggressors.is_empty());
        assert_eq!(v.sentence, "no cgroup stands out");
    }

    #[test]
    fn a_pressure_rise_names_the_victim_where_its_latency_does_not() {
        let mut h = VecDeque::new();
        h.push_back(vec![seen(1, 0.1, 1.2), seen(2, 0.9, 1.0)]);
        // /db's latency is only 1.2x its own baseline (ambiguous), but its tasks all stalled
        // on I/O 35 % of the interval against a usual 4 %.
        let mut db = cand(1, "/db", 0.1, 1.2);
        db.pressure_full_pct = Some(35.0);
        db.usual_pressure_pct = Some(4.0);
        let rows = [db.clone(), cand(2, "/batch", 0.9, 1.0)];
        let v = verdict(&rows, &h, &|id| (id == 1).then_some(1.0));
        assert_eq!(v.victims.len(), 1, "{v:?}");
        assert_eq!(v.victims[0].ratio, None);
        assert_eq!(v.victims[0].pressure_full_pct, Some(35.0));
        assert!(
            v.sentence
                .starts_with("/db's tasks all stalled on I/O 35 % of the interval"),
            "{}",
            v.sentence
        );
        assert!(v.sentence.contains("usually 4 %"), "{}", v.sentence);
        assert_eq!(v.role_of(2), Some(Role::Aggressor));
        // No own baseline at all (a cgroup new to judging): the pressure still names it, and
        // the latency target it is given says whose baseline it comes from.
        let mut new = db.clone();
        new.own_baseline = false;
        let v = verdict(&[new, cand(2, "/batch", 0.9, 1.0)], &h, &|id| {
            (id == 1).then_some(1.0)
        });
        assert_eq!(v.role_of(1), Some(Role::Victim));
        assert!(
            v.protect
                .as_deref()
                .unwrap()
                .contains("the device's baseline"),
            "{:?}",
            v.protect
        );
        // Not named: under a tenth of the interval; or no rise over its own usual; or no usual
        // to rise from.
        for (full, usual) in [(8.0, Some(1.0)), (30.0, Some(25.0)), (35.0, None)] {
            let mut q = cand(1, "/db", 0.1, 1.2);
            q.pressure_full_pct = Some(full);
            q.usual_pressure_pct = usual;
            let v = verdict(&[q, cand(2, "/batch", 0.9, 1.0)], &h, &|id| {
                (id == 1).then_some(1.0)
            });
            assert!(v.victims.is_empty(), "{full} {usual:?}: {v:?}");
        }
        // A latency victim ranks before a pressure one, and its ratio is the sentence's.
        let mut other = cand(3, "/web", 0.05, 2.5);
        other.pressure_full_pct = Some(1.0);
        let v = verdict(&[db, cand(2, "/batch", 0.85, 1.0), other], &h, &|id| {
            (id != 2).then_some(1.0)
        });
        assert_eq!(v.victims.len(), 2);
        assert_eq!(v.victims[0].name, "/web");
        assert!(v.sentence.starts_with("/web waits 2.5x"), "{}", v.sentence);
    }

    #[test]
    fn pearson_of_a_line_and_of_a_constant() {
        assert!((pearson(&[(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(pearson(&[(1.0, 2.0), (1.0, 4.0)]), None);
    }
}
