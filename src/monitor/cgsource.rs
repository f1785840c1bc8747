//! The live side of who loads a disk (issue 40): each tick, the block-latency source's
//! per-cgroup rows (sys::bpf), the names of cgroups not seen before (sys::cgroups' tree, walked
//! again only when an unknown id appears, at most once a tick) and the limits the busiest
//! cgroups are under (their own and their ancestors', read again every [`SETTINGS_EVERY`]
//! ticks), as one [`CgSample`] for the recording and the replayer. Entries of cgroups gone from
//! the hierarchy are removed from the kernel's map.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use super::cgroups::{row_of, CgName, CgSample};
use crate::analysis::who::Limit;
use crate::sys::bpf::BlockLatency;
use crate::sys::cgroups::{self, Hierarchy, Tree};
use crate::sys::Root;
use std::collections::{HashMap, HashSet};

/// Cgroups walked at most.
pub const MAX_CGROUPS: usize = 10_000;
/// Cgroups whose limits are read (the busiest by requests so far).
pub const LIMITS_OF: usize = 16;
/// Ticks between two readings of a cgroup's limits.
pub const SETTINGS_EVERY: u32 = 5;
/// Cgroups whose `io.pressure` is read each tick (the busiest by requests, cgroup v2 only).
pub const PRESSURE_OF: usize = 64;

#[derive(Debug, Default)]
pub struct CgSource {
    tree: Option<Tree>,
    /// Ids whose name went out in a sample of this run.
    named: HashSet<u64>,
    /// Ids looked for in a fresh walk and not found (gone, or beyond the walk's bound).
    unknown: HashSet<u64>,
    limits: HashMap<u64, Vec<(u32, u32, Limit)>>,
    ticks: u32,
}

impl CgSource {
    /// A new run (a new recording segment): names go out again.
    pub fn new_run(&mut self) {
        self.named.clear();
    }

    /// One sample; Err with the reason when the kernel's map can't be read.
    pub fn read(&mut self, root: &Root, blk: &mut BlockLatency) -> Result<CgSample, String> {
        let (raw, unattributed) = blk.read_cgroups()?;
        let ids: HashSet<u64> = raw.iter().map(|r| r.cgroup).collect();
        let missing = |t: &Option<Tree>, u: &HashSet<u64>| {
            ids.iter()
                .any(|id| !u.contains(id) && t.as_ref().and_then(|t| t.by_id(*id)).is_none())
        };
        if missing(&self.tree, &self.unknown) {
            let t = cgroups::tree(root, MAX_CGROUPS);
            // Gone from the hierarchy (or never found): their entries leave the kernel's map.
            let gone: HashSet<u64> = ids
                .iter()
                .copied()
                .filter(|id| t.by_id(*id).is_none() && !t.cut)
                .collect();
            if !gone.is_empty() {
                blk.forget_cgroups(&gone)?;
            }
            self.unknown = ids
                .iter()
                .copied()
                .filter(|id| t.by_id(*id).is_none())
                .collect();
            self.tree = Some(t);
        }
        let tree = self.tree.as_ref();
        let mut names = Vec::new();
        for &id in &ids {
            if self.named.contains(&id) {
                continue;
            }
            if let Some(c) = tree.and_then(|t| t.by_id(id)) {
                names.push((
                    id,
                    CgName {
                        name: c.name.clone(),
                        path: c.path.clone(),
                        v1: c.hierarchy == Hierarchy::V1,
                    },
                ));
                self.named.insert(id);
            }
        }
        names.sort_by_key(|n| n.0);
        // The busiest cgroups' limits, on every device they use.
        if self.ticks % SETTINGS_EVERY == 0 {
            let mut busy: HashMap<u64, u64> = HashMap::new();
            for r in &raw {
                *busy.entry(r.cgroup).or_default() += r.ios;
            }
            let mut busy: Vec<(u64, u64)> = busy.into_iter().collect();
            busy.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            self.limits.clear();
            for (id, _) in busy.into_iter().take(LIMITS_OF) {
                let Some(c) = tree.and_then(|t| t.by_id(id)) else {
                    continue;
                };
                let s = cgroups::read_settings_up(root, c);
                let l: Vec<(u32, u32, Limit)> = s
                    .limits
                    .iter()
                    .map(|l| {
                        (
                            l.major,
                            l.minor,
                            Limit {
                                kind: l.kind.io_max_key().to_string(),
                                value: l.value,
                                file: l.file.clone(),
                            },
                        )
                    })
                    .collect();
                if !l.is_empty() {
                    self.limits.insert(id, l);
                }
            }
        }
        // The busiest v2 cgroups' io.pressure, every tick (its totals are cumulative: each
        // interval's share comes from two readings).
        let mut busy: HashMap<u64, u64> = HashMap::new();
        for r in &raw {
            *busy.entry(r.cgroup).or_default() += r.ios;
        }
        let mut busy: Vec<(u64, u64)> = busy.into_iter().collect();
        busy.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut pressure = Vec::new();
        for (id, _) in busy.into_iter().take(PRESSURE_OF) {
            let Some(c) = tree.and_then(|t| t.by_id(id)) else {
                continue;
            };
            if let Some(p) = cgroups::read_pressure(c) {
                pressure.push((id, p.some.total_us, p.full.map(|f| f.total_us)));
            }
        }
        pressure.sort_by_key(|p| p.0);
        self.ticks = self.ticks.wrapping_add(1);
        let mut limits: Vec<(u64, u32, u32, Limit)> = self
            .limits
            .iter()
            .flat_map(|(id, l)| l.iter().map(|(ma, mi, l)| (*id, *ma, *mi, l.clone())))
            .collect();
        limits.sort_by(|a, b| (a.0, a.1, a.2, &a.3.kind).cmp(&(b.0, b.1, b.2, &b.3.kind)));
        Ok(CgSample {
            rows: raw.iter().map(row_of).collect(),
            names,
            limits,
            unattributed,
            pressure,
        })
    }
}
