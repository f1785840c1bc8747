//! Declared caps (issue 42): the IOPS and bytes/s a user says a device was provisioned with
//! (a gp3 volume's 3,000 IOPS and 125 MB/s, an io2 volume's 16,000 IOPS), per direction where
//! the provider splits them ([`DeclaredCap`]); how to read one from a command line or a file
//! ([`parse_value`], [`parse_spec`]); and how a rate compares with it ([`CapUse`]: the share of
//! the declared figure the rate uses, on the dimension nearest its cap). A declaration is the
//! user's word, not a measurement: where no counter exists, a plateau at the declared figure is
//! "at the declared cap", and a plateau well below it is the device's own limit. Pure.
//! Imports only: analysis/.

use serde::{Deserialize, Serialize};

/// A rate within this fraction below its declared cap is at the cap (issue 42's acceptance:
/// "within 5 %"): a token bucket paces to well under 1 %, and the sweep's plateau and a live
/// interval's rate carry a few percent of noise on a host that takes the CPU away.
pub const AT_CAP: f64 = 0.95;

/// A rate more than this fraction above its declared cap does not sit at it: a burst allowed
/// before the cap, or a cap higher than the one declared.
pub const ABOVE_CAP: f64 = 1.05;

/// What a user declares a device was provisioned with; every figure optional, each one
/// positive and finite ([`DeclaredCap::check`]). Bytes are decimal (the `--cap-mbps` figure
/// × 10⁶), as every MB/s iosat prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeclaredCap {
    /// Requests per second, reads and writes together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_iops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_iops: Option<f64>,
    /// Bytes per second, reads and writes together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_bytes_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_bytes_per_s: Option<f64>,
}

/// One figure of a declared cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapDim {
    Iops,
    ReadIops,
    WriteIops,
    BytesPerS,
    ReadBytesPerS,
    WriteBytesPerS,
}

impl CapDim {
    pub const ALL: [CapDim; 6] = [
        CapDim::Iops,
        CapDim::ReadIops,
        CapDim::WriteIops,
        CapDim::BytesPerS,
        CapDim::ReadBytesPerS,
        CapDim::WriteBytesPerS,
    ];

    /// The key of the figure in `--cap DEV:KEY=N` and in the exporter's `cap` label.
    pub fn key(self) -> &'static str {
        match self {
            CapDim::Iops => "iops",
            CapDim::ReadIops => "read_iops",
            CapDim::WriteIops => "write_iops",
            CapDim::BytesPerS => "mbps",
            CapDim::ReadBytesPerS => "read_mbps",
            CapDim::WriteBytesPerS => "write_mbps",
        }
    }

    /// The exporter's `cap` label: "iops", "read_iops", "write_iops", "bytes", "read_bytes",
    /// "write_bytes" (the unit of the family says the rest).
    pub fn label(self) -> &'static str {
        match self {
            CapDim::Iops => "iops",
            CapDim::ReadIops => "read_iops",
            CapDim::WriteIops => "write_iops",
            CapDim::BytesPerS => "bytes",
            CapDim::ReadBytesPerS => "read_bytes",
            CapDim::WriteBytesPerS => "write_bytes",
        }
    }

    /// Whether the figure counts bytes (given in MB/s) rather than requests.
    pub fn is_bytes(self) -> bool {
        matches!(
            self,
            CapDim::BytesPerS | CapDim::ReadBytesPerS | CapDim::WriteBytesPerS
        )
    }

    /// The figure declared for `cap` as a person reads it: "3,000 IOPS", "125 MB/s",
    /// "16,000 read IOPS".
    pub fn figure(self, value: f64) -> String {
        let dir = match self {
            CapDim::ReadIops | CapDim::ReadBytesPerS => "read ",
            CapDim::WriteIops | CapDim::WriteBytesPerS => "write ",
            _ => "",
        };
        if self.is_bytes() {
            format!("{} {dir}MB/s", thousands(value / 1e6))
        } else {
            format!("{} {dir}IOPS", thousands(value))
        }
    }
}

/// A whole number with thousands separators ("3,000"); a fraction keeps one decimal ("62.5").
pub fn thousands(v: f64) -> String {
    if v.fract().abs() >= 0.05 && v < 1000.0 {
        return format!("{v:.1}");
    }
    // Whole (to the unit) and grouped by the one rule the words use; `as u64` saturates
    // where `{:.0}` would print every digit of a float beyond 2^64, which no figure reaches.
    let mut out = super::text::grouped(v.abs().round() as u64);
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// A rate against one figure of a declared cap.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CapUse {
    /// Which figure (the `cap` label of the exporter's ratio gauge).
    pub cap: CapDim,
    /// The declared figure (IOPS, or bytes/s).
    pub declared: f64,
    /// The rate compared with it, in the same unit.
    pub used: f64,
    /// used ÷ declared.
    pub ratio: f64,
}

/// Where a rate stands against its declared cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapPlace {
    /// Below [`AT_CAP`] of it.
    Below,
    /// From [`AT_CAP`] to [`ABOVE_CAP`] of it: the cap is the limit.
    At,
    /// Above [`ABOVE_CAP`] of it: not held by that cap.
    Above,
}

impl CapUse {
    pub fn place(&self) -> CapPlace {
        if self.ratio > ABOVE_CAP {
            CapPlace::Above
        } else if self.ratio >= AT_CAP {
            CapPlace::At
        } else {
            CapPlace::Below
        }
    }

    /// "the declared 3,000 IOPS cap".
    pub fn cap_words(&self) -> String {
        format!("the declared {} cap", self.cap.figure(self.declared))
    }

    /// A live interval against the cap, for `stat`'s and `top`'s judgement: "at 99 % of the
    /// declared 3,000 IOPS cap: the cap, not the device, is the limit".
    pub fn live_words(&self) -> String {
        let head = format!("at {:.0} % of {}", self.ratio * 100.0, self.cap_words());
        match self.place() {
            CapPlace::At => format!("{head}: the cap, not the device, is the limit"),
            CapPlace::Above => {
                format!("{head}: above it (a burst the cap allows, or a cap higher than declared)")
            }
            CapPlace::Below => head,
        }
    }
}

/// A run's intervals against a declared cap, in the words live `stat` printed under its table
/// (the recording page, `analyze` of a recording): "against the declared 1,000 IOPS cap: at
/// the cap (95 to 105 %) in 28 of 30 intervals with I/O, median 99 %; at the last interval at
/// 99 % of …". `uses` in time order; those without I/O are left out. None when none did I/O.
pub fn run_words(uses: &[CapUse]) -> Option<String> {
    let uses: Vec<&CapUse> = uses.iter().filter(|c| c.used > 0.0).collect();
    let last = uses.last()?;
    let at = uses.iter().filter(|c| c.place() == CapPlace::At).count();
    let mut shares: Vec<f64> = uses.iter().map(|c| c.ratio).collect();
    shares.sort_by(f64::total_cmp);
    Some(format!(
        "against {}: at the cap (95 to 105 %) in {at} of {} intervals with I/O, median {:.0} %; \
         at the last interval {}",
        last.cap_words(),
        uses.len(),
        shares[shares.len() / 2] * 100.0,
        last.live_words()
    ))
}

impl DeclaredCap {
    /// The declared figure of `dim`.
    pub fn get(&self, dim: CapDim) -> Option<f64> {
        match dim {
            CapDim::Iops => self.iops,
            CapDim::ReadIops => self.read_iops,
            CapDim::WriteIops => self.write_iops,
            CapDim::BytesPerS => self.bytes_per_s,
            CapDim::ReadBytesPerS => self.read_bytes_per_s,
            CapDim::WriteBytesPerS => self.write_bytes_per_s,
        }
    }

    fn slot(&mut self, dim: CapDim) -> &mut Option<f64> {
        match dim {
            CapDim::Iops => &mut self.iops,
            CapDim::ReadIops => &mut self.read_iops,
            CapDim::WriteIops => &mut self.write_iops,
            CapDim::BytesPerS => &mut self.bytes_per_s,
            CapDim::ReadBytesPerS => &mut self.read_bytes_per_s,
            CapDim::WriteBytesPerS => &mut self.write_bytes_per_s,
        }
    }

    /// Set `dim` (bytes/s for a bytes figure).
    pub fn set(&mut self, dim: CapDim, value: f64) {
        *self.slot(dim) = Some(value);
    }

    /// Nothing declared.
    pub fn is_empty(&self) -> bool {
        CapDim::ALL.iter().all(|d| self.get(*d).is_none())
    }

    /// The declared figures, in a fixed order.
    pub fn figures(&self) -> impl Iterator<Item = (CapDim, f64)> + '_ {
        CapDim::ALL
            .into_iter()
            .filter_map(|d| self.get(d).map(|v| (d, v)))
    }

    /// The declaration in words: "3,000 IOPS, 125 MB/s".
    pub fn words(&self) -> String {
        let parts: Vec<String> = self.figures().map(|(d, v)| d.figure(v)).collect();
        parts.join(", ")
    }

    /// Every figure positive and finite (a file someone else planted may hold anything):
    /// Err names the first that is not, by its key.
    pub fn check(&self) -> Result<(), String> {
        for (d, v) in self.figures() {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{} must be a positive number, not {v}", d.key()));
            }
        }
        Ok(())
    }

    /// The figures of `other` where `self` has none (a command line's over a profile's).
    pub fn or(self, other: DeclaredCap) -> DeclaredCap {
        let mut out = self;
        for (d, v) in other.figures() {
            out.slot(d).get_or_insert(v);
        }
        out
    }

    /// Each declared figure against the rates of an interval or a plateau (per direction,
    /// requests and bytes per second).
    pub fn uses(
        &self,
        read_iops: f64,
        write_iops: f64,
        read_bps: f64,
        write_bps: f64,
    ) -> Vec<CapUse> {
        self.figures()
            .map(|(cap, declared)| {
                let used = match cap {
                    CapDim::Iops => read_iops + write_iops,
                    CapDim::ReadIops => read_iops,
                    CapDim::WriteIops => write_iops,
                    CapDim::BytesPerS => read_bps + write_bps,
                    CapDim::ReadBytesPerS => read_bps,
                    CapDim::WriteBytesPerS => write_bps,
                };
                CapUse {
                    cap,
                    declared,
                    used,
                    ratio: used / declared,
                }
            })
            .collect()
    }

    /// The figure the rates come nearest to (the highest share): the cap that binds first.
    pub fn nearest(
        &self,
        read_iops: f64,
        write_iops: f64,
        read_bps: f64,
        write_bps: f64,
    ) -> Option<CapUse> {
        self.uses(read_iops, write_iops, read_bps, write_bps)
            .into_iter()
            .filter(|u| u.ratio.is_finite())
            .max_by(|a, b| a.ratio.total_cmp(&b.ratio))
    }

    /// A sweep's plateau (or its highest throughput) against the declaration: `read_share` of
    /// the requests are reads (1 when unknown).
    pub fn against_total(&self, iops: f64, bytes_per_s: f64, read_share: f64) -> Option<CapUse> {
        let r = read_share.clamp(0.0, 1.0);
        self.nearest(
            iops * r,
            iops * (1.0 - r),
            bytes_per_s * r,
            bytes_per_s * (1.0 - r),
        )
    }
}

/// A positive, finite number as a cap's figure ("3000", "125", "62.5"); None when it is not.
pub fn parse_value(s: &str) -> Option<f64> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// `--cap DEV:iops=3000,mbps=125` (keys: iops, read_iops, write_iops, mbps, read_mbps,
/// write_mbps): the device as written and its declaration. Err says what is wrong, in words
/// the caller puts after the flag and the value.
pub fn parse_spec(s: &str) -> Result<(String, DeclaredCap), String> {
    let (dev, figures) = s
        .rsplit_once(':')
        .filter(|(d, f)| !d.is_empty() && !f.is_empty())
        .ok_or("expected DEV:KEY=N[,KEY=N…], e.g. nvme1n1:iops=3000,mbps=125")?;
    let mut cap = DeclaredCap::default();
    for part in figures.split(',') {
        let (k, v) = part
            .split_once('=')
            .ok_or(format!("expected KEY=N, not '{part}'"))?;
        let dim = CapDim::ALL
            .into_iter()
            .find(|d| d.key() == k.trim())
            .ok_or(format!(
                "unknown key '{k}' (keys: iops, read_iops, write_iops, mbps, read_mbps, \
                 write_mbps)"
            ))?;
        let v = parse_value(v).ok_or(format!("{k} must be a positive number, not '{v}'"))?;
        cap.set(dim, if dim.is_bytes() { v * 1e6 } else { v });
    }
    Ok((dev.to_string(), cap))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_must_be_positive_numbers() {
        assert_eq!(parse_value("3000"), Some(3000.0));
        assert_eq!(parse_value("62.5"), Some(62.5));
        for bad in ["0", "-5", "abc", "", "inf", "NaN", "1e400"] {
            assert_eq!(parse_value(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_spec_names_the_device_and_its_figures() {
        let (dev, cap) = parse_spec("nvme1n1:iops=3000,mbps=125").unwrap();
        assert_eq!(dev, "nvme1n1");
        assert_eq!((cap.iops, cap.bytes_per_s), (Some(3000.0), Some(125e6)));
        assert_eq!(cap.words(), "3,000 IOPS, 125 MB/s");
        let (dev, cap) = parse_spec("/dev/sdb:read_iops=16000").unwrap();
        assert_eq!((dev.as_str(), cap.read_iops), ("/dev/sdb", Some(16000.0)));
        for (bad, says) in [
            ("nvme1n1", "expected DEV:"),
            ("nvme1n1:", "expected DEV:"),
            (":iops=1", "expected DEV:"),
            ("sda:iops", "expected KEY=N"),
            ("sda:speed=3", "unknown key 'speed'"),
            ("sda:iops=0", "iops must be a positive number, not '0'"),
            ("sda:mbps=-5", "mbps must be a positive number, not '-5'"),
        ] {
            let e = parse_spec(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_planted_value_is_refused_by_its_key() {
        let cap = DeclaredCap {
            iops: Some(3000.0),
            write_bytes_per_s: Some(-1.0),
            ..Default::default()
        };
        assert_eq!(
            cap.check().unwrap_err(),
            "write_mbps must be a positive number, not -1"
        );
        let nan = DeclaredCap {
            iops: Some(f64::NAN),
            ..Default::default()
        };
        assert!(nan.check().is_err());
        assert!(DeclaredCap::default().check().is_ok());
    }

    #[test]
    fn the_nearest_figure_binds_and_is_worded() {
        let cap = DeclaredCap {
            iops: Some(3000.0),
            bytes_per_s: Some(125e6),
            ..Default::default()
        };
        // 2,970 IOPS of 4 KiB: 99 % of the IOPS cap, 10 % of the bytes.
        let u = cap.nearest(2970.0, 0.0, 2970.0 * 4096.0, 0.0).unwrap();
        assert_eq!(u.cap, CapDim::Iops);
        assert_eq!(u.place(), CapPlace::At);
        assert_eq!(
            u.live_words(),
            "at 99 % of the declared 3,000 IOPS cap: the cap, not the device, is the limit"
        );
        // 1,000 IOPS of 128 KiB: 105 % of the bytes cap binds, not the IOPS one.
        let u = cap.nearest(500.0, 500.0, 65.5e6, 65.5e6).unwrap();
        assert_eq!((u.cap, u.place()), (CapDim::BytesPerS, CapPlace::At));
        assert_eq!(u.cap_words(), "the declared 125 MB/s cap");
        let u = cap.nearest(1500.0, 0.0, 0.0, 0.0).unwrap();
        assert_eq!(u.live_words(), "at 50 % of the declared 3,000 IOPS cap");
        let u = cap.nearest(3600.0, 0.0, 0.0, 0.0).unwrap();
        assert_eq!(u.place(), CapPlace::Above);
        // Per direction: writes against the write cap only.
        let split = DeclaredCap {
            read_iops: Some(1000.0),
            write_iops: Some(500.0),
            ..Default::default()
        };
        let u = split.against_total(600.0, 0.0, 0.0).unwrap();
        assert_eq!((u.cap, u.used, u.ratio), (CapDim::WriteIops, 600.0, 1.2));
        assert_eq!(split.words(), "1,000 read IOPS, 500 write IOPS");
    }

    #[test]
    fn a_command_line_figure_wins_over_a_profile_one() {
        let cli = DeclaredCap {
            iops: Some(1000.0),
            ..Default::default()
        };
        let file = DeclaredCap {
            iops: Some(3000.0),
            bytes_per_s: Some(125e6),
            ..Default::default()
        };
        let c = cli.or(file);
        assert_eq!((c.iops, c.bytes_per_s), (Some(1000.0), Some(125e6)));
    }

    #[test]
    fn a_run_is_summed_up_against_its_cap() {
        let cap = DeclaredCap {
            iops: Some(1000.0),
            ..Default::default()
        };
        let uses: Vec<CapUse> = [990.0, 0.0, 400.0, 1000.0, 1200.0]
            .iter()
            .filter_map(|&r| cap.nearest(r, 0.0, 0.0, 0.0))
            .collect();
        assert_eq!(
            run_words(&uses).unwrap(),
            "against the declared 1,000 IOPS cap: at the cap (95 to 105 %) in 2 of 4 intervals \
             with I/O, median 100 %; at the last interval at 120 % of the declared 1,000 IOPS \
             cap: above it (a burst the cap allows, or a cap higher than declared)"
        );
        assert_eq!(run_words(&uses[1..2]), None);
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(16000.0), "16,000");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
        assert_eq!(thousands(62.5), "62.5");
    }
}
