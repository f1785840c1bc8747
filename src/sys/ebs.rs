//! AWS EBS volumes and EC2 instance-store NVMe, the pure part: recognising one from its
//! Identify Controller data (vendor id, model, serial), the volume id from the serial, the
//! vendor log page 0xD0 parsed from its public layout (docs/caps.md, with the sources), and two
//! samples of it turned into an interval: the share of the interval throttled by each cap,
//! counters that went backwards (no value, and why) and counters that wrapped. No IO: the
//! device side (ioctl, rate limit, cost) is sys/ebsdev.rs.
//! Imports only: nothing.

use std::fmt;

/// The PCI vendor id Amazon's NVMe controllers report (Identify Controller, bytes 0-1).
pub const VENDOR_AMAZON: u16 = 0x1d0f;
/// The model string (Identify Controller, bytes 24-63, space-padded) of an EBS volume.
pub const MODEL_EBS: &str = "Amazon Elastic Block Store";
/// The model string of EC2 instance storage (local NVMe).
pub const MODEL_INSTANCE: &str = "Amazon EC2 NVMe Instance Storage";
/// The vendor-specific log page identifier of the statistics.
pub const LOG_PAGE: u8 = 0xD0;
/// The first four bytes of the page on an EBS volume.
pub const MAGIC_EBS: u32 = 0x3C23_B510;
/// The first four bytes of the page on instance storage.
pub const MAGIC_INSTANCE: u32 = 0xEC2C_0D7E;
/// The base page: counters and the two latency histograms.
pub const BASE_LEN: usize = 4096;
/// The base page followed by the per-request-size histograms (version 1).
pub const DETAIL_LEN: usize = 8192;

// Byte offsets of the layout (docs/caps.md).
const OFF_COUNTERS: usize = 8;
const COUNTERS_END: usize = OFF_COUNTERS + 11 * 8;
const OFF_READ_HIST: usize = 512;
const HIST_LEN: usize = 8 + 64 * 24;
const OFF_WRITE_HIST: usize = OFF_READ_HIST + HIST_LEN;
const OFF_NUM_SIZES: usize = OFF_WRITE_HIST + HIST_LEN;
const OFF_SIZES: usize = OFF_NUM_SIZES + 4;
const MAX_BINS: usize = 64;
const MAX_SIZES: usize = 8;
const DETAIL_BINS: usize = 32;

/// What sort of Amazon NVMe device this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    EbsVolume,
    InstanceStore,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::EbsVolume => "EBS volume",
            Kind::InstanceStore => "EC2 instance storage",
        }
    }

    /// The caps whose counters mean something on this kind: instance storage has no volume
    /// cap (its page counts only the instance's).
    pub fn caps(self) -> &'static [Cap] {
        match self {
            Kind::EbsVolume => &Cap::ALL,
            Kind::InstanceStore => &[Cap::InstanceIops, Cap::InstanceThroughput],
        }
    }
}

/// The fields of Identify Controller that say who made a controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdCtrl {
    pub vid: u16,
    pub serial: String,
    pub model: String,
}

/// Vendor id, serial (bytes 4-23) and model (bytes 24-63) of an Identify Controller data
/// structure; None when shorter than 64 bytes.
pub fn parse_identify(buf: &[u8]) -> Option<IdCtrl> {
    let text = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .trim_end_matches(['\0', ' '])
            .trim()
            .to_string()
    };
    Some(IdCtrl {
        vid: u16::from_le_bytes(buf.get(0..2)?.try_into().ok()?),
        serial: text(buf.get(4..24)?),
        model: text(buf.get(24..64)?),
    })
}

/// An Amazon NVMe device as its controller names it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Identity {
    pub kind: Kind,
    /// `vol-0abc…` (EBS only, from the serial number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_id: Option<String>,
    pub serial: String,
}

/// The identity of a controller if it is an EBS volume or EC2 instance storage: Amazon's
/// vendor id and one of the two model names; None for any other device.
pub fn identify(id: &IdCtrl) -> Option<Identity> {
    if id.vid != VENDOR_AMAZON {
        return None;
    }
    let kind = if id.model == MODEL_EBS {
        Kind::EbsVolume
    } else if id.model == MODEL_INSTANCE {
        Kind::InstanceStore
    } else {
        return None;
    };
    Some(Identity {
        kind,
        volume_id: (kind == Kind::EbsVolume)
            .then(|| volume_id(&id.serial))
            .flatten(),
        serial: id.serial.clone(),
    })
}

/// The volume id an EBS serial number carries: "vol0abc…" → "vol-0abc…" (a serial already
/// in the `vol-` form is kept); None when the serial is not a volume's.
pub fn volume_id(serial: &str) -> Option<String> {
    let s = serial.trim();
    let rest = s.strip_prefix("vol")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest);
    (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| format!("vol-{rest}"))
}

/// One bin of a latency histogram: requests that completed in [lower, upper) µs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Bin {
    pub lower_us: u64,
    pub upper_us: u64,
    pub count: u64,
}

/// The read and write latency counts of one request-size range (version 1 pages).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SizeHistogram {
    /// The range (low, high] in bytes; u32::MAX as `high` means "and above".
    pub size_low: u32,
    pub size_high: u32,
    pub read: Vec<u64>,
    pub write: Vec<u64>,
}

/// The counters of one read of log page 0xD0. Times are in microseconds, all cumulative
/// since the device attached (queue length: at the time of the read).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    pub kind: Kind,
    pub version: u32,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_time_us: u64,
    pub write_time_us: u64,
    /// Time demand exceeded the volume's provisioned IOPS / throughput.
    pub volume_iops_exceeded_us: u64,
    pub volume_throughput_exceeded_us: u64,
    /// Time demand exceeded the instance's IOPS / throughput limit.
    pub instance_iops_exceeded_us: u64,
    pub instance_throughput_exceeded_us: u64,
    pub queue_length: u64,
    /// The device's own latency histograms (empty when the page has none).
    pub read_latency: Vec<Bin>,
    pub write_latency: Vec<Bin>,
    /// Per request-size histograms (8,192-byte version-1 pages only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_size: Vec<SizeHistogram>,
}

impl Counters {
    /// The cumulative exceeded time of a cap, in µs.
    pub fn exceeded_us(&self, cap: Cap) -> u64 {
        match cap {
            Cap::VolumeIops => self.volume_iops_exceeded_us,
            Cap::VolumeThroughput => self.volume_throughput_exceeded_us,
            Cap::InstanceIops => self.instance_iops_exceeded_us,
            Cap::InstanceThroughput => self.instance_throughput_exceeded_us,
        }
    }
}

/// Why a page is not a statistics page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageError {
    /// Shorter than the counters (96 bytes).
    Truncated(usize),
    /// Neither the EBS nor the instance-storage magic.
    Magic(u32),
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            PageError::Truncated(n) => write!(
                f,
                "log page 0xD0 is {n} bytes, shorter than its {COUNTERS_END} bytes of counters"
            ),
            PageError::Magic(m) => write!(
                f,
                "log page 0xD0 starts with {m:#010x}, not an EBS ({MAGIC_EBS:#010x}) or \
                 instance-storage ({MAGIC_INSTANCE:#010x}) statistics page"
            ),
        }
    }
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A latency histogram at `at`: its bin count (at most 64 are read), then 24-byte bins of
/// lower and upper bound (µs) and a 32-bit count. Empty when the page stops before it.
fn histogram(b: &[u8], at: usize) -> Vec<Bin> {
    let Some(n) = u64_at(b, at) else {
        return Vec::new();
    };
    let n = n.min(MAX_BINS as u64) as usize;
    (0..n)
        .map_while(|i| {
            let o = at + 8 + i * 24;
            Some(Bin {
                lower_us: u64_at(b, o)?,
                upper_us: u64_at(b, o + 8)?,
                count: u64::from(u32_at(b, o + 16)?),
            })
        })
        .collect()
}

/// The per-size histograms of a version-1 8,192-byte page: the number of ranges and their
/// upper sizes in the base page, then per range 32 read and 32 write counts (u64) from byte
/// 4,096; the bins' bounds are the base write histogram's.
fn by_size(b: &[u8], bins: usize) -> Vec<SizeHistogram> {
    let n = u32_at(b, OFF_NUM_SIZES).unwrap_or(0).min(MAX_SIZES as u32) as usize;
    let bins = bins.min(DETAIL_BINS);
    let mut low = 0;
    let mut out = Vec::new();
    for i in 0..n {
        let Some(high) = u32_at(b, OFF_SIZES + 4 * i) else {
            break;
        };
        let base = BASE_LEN + i * 2 * DETAIL_BINS * 8;
        let counts = |from: usize| -> Option<Vec<u64>> {
            (0..bins).map(|k| u64_at(b, from + k * 8)).collect()
        };
        let (Some(read), Some(write)) = (counts(base), counts(base + DETAIL_BINS * 8)) else {
            break;
        };
        out.push(SizeHistogram {
            size_low: low,
            size_high: high,
            read,
            write,
        });
        low = high;
    }
    out
}

/// Parse a log page 0xD0 (4,096 or 8,192 bytes, little-endian). The counters need the first
/// 96 bytes; histograms the page holds in full are read, a page cut short keeps what it has.
pub fn parse_page(b: &[u8]) -> Result<Counters, PageError> {
    if b.len() < COUNTERS_END {
        return Err(PageError::Truncated(b.len()));
    }
    let magic = u32_at(b, 0).unwrap_or(0);
    let kind = match magic {
        MAGIC_EBS => Kind::EbsVolume,
        MAGIC_INSTANCE => Kind::InstanceStore,
        m => return Err(PageError::Magic(m)),
    };
    let c = |i: usize| u64_at(b, OFF_COUNTERS + 8 * i).unwrap_or(0);
    let version = u32_at(b, 4).unwrap_or(0);
    let read_latency = histogram(b, OFF_READ_HIST);
    let write_latency = histogram(b, OFF_WRITE_HIST);
    let by_size = if version == 1 && b.len() >= DETAIL_LEN {
        by_size(b, write_latency.len())
    } else {
        Vec::new()
    };
    Ok(Counters {
        kind,
        version,
        read_ops: c(0),
        write_ops: c(1),
        read_bytes: c(2),
        write_bytes: c(3),
        read_time_us: c(4),
        write_time_us: c(5),
        volume_iops_exceeded_us: c(6),
        volume_throughput_exceeded_us: c(7),
        instance_iops_exceeded_us: c(8),
        instance_throughput_exceeded_us: c(9),
        queue_length: c(10),
        read_latency,
        write_latency,
        by_size,
    })
}

/// A cap whose exceeded time the page counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    VolumeIops,
    VolumeThroughput,
    InstanceIops,
    InstanceThroughput,
}

impl Cap {
    pub const ALL: [Cap; 4] = [
        Cap::VolumeIops,
        Cap::VolumeThroughput,
        Cap::InstanceIops,
        Cap::InstanceThroughput,
    ];

    /// The exporter's labels: `cap` ("volume" | "instance") and `dim` ("iops" | "throughput").
    pub fn labels(self) -> (&'static str, &'static str) {
        match self {
            Cap::VolumeIops => ("volume", "iops"),
            Cap::VolumeThroughput => ("volume", "throughput"),
            Cap::InstanceIops => ("instance", "iops"),
            Cap::InstanceThroughput => ("instance", "throughput"),
        }
    }
}

/// One read of the page and when it was taken (host CLOCK_MONOTONIC, ns: the middle of the
/// read).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Sample {
    pub at_ns: u64,
    pub counters: Counters,
}

/// The share of an interval one cap throttled.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Share {
    pub cap: Cap,
    pub exceeded_us: u64,
    /// exceeded / interval, at most 1.
    pub share: f64,
}

/// Two samples of one device turned into an interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Interval {
    pub secs: f64,
    /// One per cap of the device's kind ([`Kind::caps`]).
    pub shares: Vec<Share>,
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_time_us: u64,
    pub write_time_us: u64,
    /// The device's queue length at the later read.
    pub queue_length: u64,
    /// The requests each latency bin gained (empty when either read has no histogram or
    /// the bins' bounds changed). A bin's count is 32 bits on the page and wraps after
    /// 2^32 requests (three days at 16,000 IOPS in one bin): a smaller count is a wrap, the
    /// 64-bit counters above having already ruled out a reset.
    pub read_latency: Vec<Bin>,
    pub write_latency: Vec<Bin>,
    /// Counters that wrapped past 2^64 during the interval (their delta is still right).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub wrapped: Vec<&'static str>,
}

/// Why two samples give no interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntervalError {
    /// The later sample is not later.
    NotLater,
    /// The page's kind changed between the reads: another device answered.
    KindChanged,
    /// A cumulative counter went down without wrapping: the device was reset or replaced
    /// (a volume detached and another attached under the same name).
    Backwards(&'static str),
}

impl fmt::Display for IntervalError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            IntervalError::NotLater => write!(f, "the second sample is not later than the first"),
            IntervalError::KindChanged => write!(
                f,
                "the statistics page changed kind between two reads: another device answered"
            ),
            IntervalError::Backwards(c) => write!(
                f,
                "the device's {c} counter went backwards: the device was reset or replaced, \
                 no value for this interval"
            ),
        }
    }
}

/// Slack on the elapsed time allowed to an exceeded-time counter's wrapped delta: the
/// device's clock and the host's are not the same, and each read lands somewhere inside the
/// ioctl. One second covers any read the sampler keeps (a slow read switches it off).
const TIME_SLACK_US: u64 = 1_000_000;

/// How far a cumulative counter advanced from `prev` to `now`, and whether it wrapped; None
/// when it went backwards. A decrease is read as a wrap only when it is one: `prev` in the top
/// half of the range and the wrapped delta within `limit` (the largest advance possible in
/// the interval). Any other decrease is a reset.
fn advance(prev: u64, now: u64, limit: u64) -> Option<(u64, bool)> {
    if now >= prev {
        return Some((now - prev, false));
    }
    let d = now.wrapping_sub(prev);
    (prev >= 1 << 63 && d <= limit).then_some((d, true))
}

/// The interval between two samples of one device: the share of it each cap throttled, the
/// operations, bytes and device time in it. Err when the samples are not in order, another
/// device answered or a counter went backwards (reset or replaced).
pub fn interval(prev: &Sample, now: &Sample) -> Result<Interval, IntervalError> {
    if now.at_ns <= prev.at_ns {
        return Err(IntervalError::NotLater);
    }
    let (p, n) = (&prev.counters, &now.counters);
    if p.kind != n.kind {
        return Err(IntervalError::KindChanged);
    }
    let elapsed_ns = now.at_ns - prev.at_ns;
    let elapsed_us = (elapsed_ns / 1000).max(1);
    let mut wrapped = Vec::new();
    let mut step = |name: &'static str, a: u64, b: u64, limit: u64| {
        let (d, w) = advance(a, b, limit).ok_or(IntervalError::Backwards(name))?;
        if w {
            wrapped.push(name);
        }
        Ok::<u64, IntervalError>(d)
    };
    // Counts and bytes have no rate bound the host knows: a wrap is read from the top half
    // of the range alone (a 64-bit counter of bytes wraps after 16 EiB).
    let any = 1u64 << 62;
    let read_ops = step("read operations", p.read_ops, n.read_ops, any)?;
    let write_ops = step("write operations", p.write_ops, n.write_ops, any)?;
    let read_bytes = step("read bytes", p.read_bytes, n.read_bytes, any)?;
    let write_bytes = step("write bytes", p.write_bytes, n.write_bytes, any)?;
    let read_time_us = step("read time", p.read_time_us, n.read_time_us, any)?;
    let write_time_us = step("write time", p.write_time_us, n.write_time_us, any)?;
    // An exceeded-time counter cannot advance faster than time itself.
    let time_limit = elapsed_us.saturating_add(TIME_SLACK_US);
    let mut shares = Vec::new();
    for &cap in p.kind.caps() {
        let name = match cap {
            Cap::VolumeIops => "volume IOPS exceeded",
            Cap::VolumeThroughput => "volume throughput exceeded",
            Cap::InstanceIops => "instance IOPS exceeded",
            Cap::InstanceThroughput => "instance throughput exceeded",
        };
        let d = step(name, p.exceeded_us(cap), n.exceeded_us(cap), time_limit)?;
        shares.push(Share {
            cap,
            exceeded_us: d,
            share: (d as f64 / elapsed_us as f64).min(1.0),
        });
    }
    Ok(Interval {
        secs: elapsed_ns as f64 / 1e9,
        shares,
        read_ops,
        write_ops,
        read_bytes,
        write_bytes,
        read_time_us,
        write_time_us,
        queue_length: n.queue_length,
        read_latency: bins_delta(&p.read_latency, &n.read_latency),
        write_latency: bins_delta(&p.write_latency, &n.write_latency),
        wrapped,
    })
}

/// Per-bin growth of a latency histogram between two reads, its 32-bit counts wrapping.
fn bins_delta(prev: &[Bin], now: &[Bin]) -> Vec<Bin> {
    let same = prev.len() == now.len()
        && prev
            .iter()
            .zip(now)
            .all(|(a, b)| (a.lower_us, a.upper_us) == (b.lower_us, b.upper_us));
    if !same {
        return Vec::new();
    }
    prev.iter()
        .zip(now)
        .map(|(a, b)| Bin {
            lower_us: b.lower_us,
            upper_us: b.upper_us,
            count: u64::from((b.count as u32).wrapping_sub(a.count as u32)),
        })
        .collect()
}

/// Synthetic pages built from the documented layout (docs/caps.md), for the tests.
#[cfg(test)]
pub(crate) mod synth {
    use super::*;

    /// The counters in layout order: read ops, write ops, read bytes, write bytes, read
    /// time, write time, volume IOPS exceeded, volume throughput exceeded, instance IOPS
    /// exceeded, instance throughput exceeded, queue length.
    pub fn page(len: usize, magic: u32, version: u32, counters: [u64; 11]) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[0..4].copy_from_slice(&magic.to_le_bytes());
        b[4..8].copy_from_slice(&version.to_le_bytes());
        for (i, v) in counters.iter().enumerate() {
            let o = OFF_COUNTERS + 8 * i;
            b[o..o + 8].copy_from_slice(&v.to_le_bytes());
        }
        // Histograms: bins [2^k, 2^(k+1)) µs, k = 0..n, counts 10·(k+1) (reads) and
        // 20·(k+1) (writes).
        let n = 28usize;
        for (at, mul) in [(OFF_READ_HIST, 10u32), (OFF_WRITE_HIST, 20)] {
            if at + HIST_LEN > len {
                continue;
            }
            b[at..at + 8].copy_from_slice(&(n as u64).to_le_bytes());
            for k in 0..n {
                let o = at + 8 + k * 24;
                b[o..o + 8].copy_from_slice(&(1u64 << k).to_le_bytes());
                b[o + 8..o + 16].copy_from_slice(&(1u64 << (k + 1)).to_le_bytes());
                b[o + 16..o + 20].copy_from_slice(&(mul * (k as u32 + 1)).to_le_bytes());
                b[o + 20..o + 24].copy_from_slice(&0xdead_beefu32.to_le_bytes());
            }
        }
        if len >= DETAIL_LEN {
            // Three size ranges: (0, 4 KiB], (4 KiB, 64 KiB], (64 KiB, max].
            let sizes = [4096u32, 65536, u32::MAX];
            b[OFF_NUM_SIZES..OFF_NUM_SIZES + 4].copy_from_slice(&3u32.to_le_bytes());
            for (i, s) in sizes.iter().enumerate() {
                let o = OFF_SIZES + 4 * i;
                b[o..o + 4].copy_from_slice(&s.to_le_bytes());
                let base = BASE_LEN + i * 2 * DETAIL_BINS * 8;
                for k in 0..DETAIL_BINS {
                    let r = base + k * 8;
                    let w = base + DETAIL_BINS * 8 + k * 8;
                    b[r..r + 8].copy_from_slice(&((i * 100 + k) as u64).to_le_bytes());
                    b[w..w + 8].copy_from_slice(&((i * 1000 + k) as u64).to_le_bytes());
                }
            }
        }
        b
    }

    pub fn identify(vid: u16, serial: &str, model: &str) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        b[0..2].copy_from_slice(&vid.to_le_bytes());
        let pad = |s: &str, n: usize| format!("{s:<n$}").into_bytes();
        b[4..24].copy_from_slice(&pad(serial, 20)[..20]);
        b[24..64].copy_from_slice(&pad(model, 40)[..40]);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::synth::{identify as id_page, page};
    use super::*;

    const C: [u64; 11] = [100, 200, 409_600, 819_200, 5000, 9000, 11, 12, 13, 14, 7];

    #[test]
    fn an_ebs_volume_is_recognised_and_its_volume_id_read_from_the_serial() {
        let id = parse_identify(&id_page(0x1d0f, "vol0abc123def4567890", MODEL_EBS)).unwrap();
        assert_eq!(id.model, MODEL_EBS);
        let who = identify(&id).unwrap();
        assert_eq!(who.kind, Kind::EbsVolume);
        assert_eq!(who.volume_id.as_deref(), Some("vol-0abc123def4567890"));
        let inst = parse_identify(&id_page(0x1d0f, "AWS1234567890ABCDEF0", MODEL_INSTANCE));
        let who = identify(&inst.unwrap()).unwrap();
        assert_eq!((who.kind, who.volume_id), (Kind::InstanceStore, None));
    }

    #[test]
    fn any_other_controller_is_not_amazon() {
        // Amazon's model on another vendor, another model on Amazon's vendor id.
        for (vid, model) in [
            (0x144d, MODEL_EBS),
            (0x1d0f, "Amazon Something Else"),
            (0x8086, "INTEL SSDPE2KX010T8"),
        ] {
            let id = parse_identify(&id_page(vid, "vol0abc", model)).unwrap();
            assert_eq!(identify(&id), None, "{vid:#x} {model}");
        }
        assert_eq!(parse_identify(&[0u8; 63]), None);
        assert_eq!(volume_id("vol-0abc"), Some("vol-0abc".into()));
        assert_eq!(volume_id("S3EVNX0K123456"), None);
        assert_eq!(volume_id("vol"), None);
        assert_eq!(volume_id("vol0a b"), None);
    }

    #[test]
    fn a_4096_byte_ebs_page_gives_every_counter_and_both_histograms() {
        let c = parse_page(&page(BASE_LEN, MAGIC_EBS, 0, C)).unwrap();
        assert_eq!(c.kind, Kind::EbsVolume);
        let got = [
            c.read_ops,
            c.write_ops,
            c.read_bytes,
            c.write_bytes,
            c.read_time_us,
            c.write_time_us,
            c.volume_iops_exceeded_us,
            c.volume_throughput_exceeded_us,
            c.instance_iops_exceeded_us,
            c.instance_throughput_exceeded_us,
            c.queue_length,
        ];
        assert_eq!(got, C);
        assert_eq!(c.read_latency.len(), 28);
        // The reserved half of each bin is not part of the count.
        assert_eq!(
            c.read_latency[3],
            Bin {
                lower_us: 8,
                upper_us: 16,
                count: 40
            }
        );
        assert_eq!(c.write_latency[27].count, 560);
        assert!(c.by_size.is_empty());
    }

    #[test]
    fn an_8192_byte_instance_store_page_gives_the_size_histograms() {
        let c = parse_page(&page(DETAIL_LEN, MAGIC_INSTANCE, 1, C)).unwrap();
        assert_eq!(c.kind, Kind::InstanceStore);
        assert_eq!(c.instance_iops_exceeded_us, 13);
        assert_eq!(c.by_size.len(), 3);
        let s = &c.by_size[1];
        assert_eq!((s.size_low, s.size_high), (4096, 65536));
        assert_eq!(
            s.read.len(),
            28,
            "as many counts as the write histogram has bins"
        );
        assert_eq!((s.read[5], s.write[5]), (105, 1005));
        assert_eq!(c.by_size[2].size_high, u32::MAX);
        // A version-0 page of 8,192 bytes has no size histograms.
        assert!(parse_page(&page(DETAIL_LEN, MAGIC_EBS, 0, C))
            .unwrap()
            .by_size
            .is_empty());
    }

    #[test]
    fn a_wrong_magic_or_a_truncated_page_is_refused() {
        let mut p = page(BASE_LEN, MAGIC_EBS, 0, C);
        p[0] ^= 1;
        assert!(matches!(parse_page(&p), Err(PageError::Magic(m)) if m == MAGIC_EBS ^ 1));
        assert!(parse_page(&p)
            .unwrap_err()
            .to_string()
            .contains("0x3c23b511"));
        assert_eq!(parse_page(&p[..95]), Err(PageError::Truncated(95)));
        assert_eq!(parse_page(&[]), Err(PageError::Truncated(0)));
        // Cut inside the read histogram: the counters stay, the histograms keep what is whole.
        let p = page(BASE_LEN, MAGIC_EBS, 0, C);
        let c = parse_page(&p[..OFF_READ_HIST + 8 + 24 * 5 + 10]).unwrap();
        assert_eq!(
            (c.read_ops, c.read_latency.len(), c.write_latency.len()),
            (100, 5, 0)
        );
        // An absurd bin count reads at most 64 bins.
        let mut p = page(BASE_LEN, MAGIC_EBS, 0, C);
        p[OFF_READ_HIST..OFF_READ_HIST + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(parse_page(&p).unwrap().read_latency.len(), 64);
    }

    fn sample(at_s: u64, magic: u32, c: [u64; 11]) -> Sample {
        Sample {
            at_ns: at_s * 1_000_000_000,
            counters: parse_page(&page(BASE_LEN, magic, 0, c)).unwrap(),
        }
    }

    #[test]
    fn two_samples_give_the_share_throttled_by_each_cap() {
        let a = sample(10, MAGIC_EBS, C);
        let mut c = C;
        c[0] += 5000; // reads
        c[6] += 630_000; // volume IOPS: 0.63 s of the second
        c[9] += 1_000; // instance throughput: 1 ms
        let b = sample(11, MAGIC_EBS, c);
        let i = interval(&a, &b).unwrap();
        assert_eq!(i.read_ops, 5000);
        let share = |cap| i.shares.iter().find(|s| s.cap == cap).unwrap().share;
        assert!((share(Cap::VolumeIops) - 0.63).abs() < 1e-9);
        assert_eq!(share(Cap::VolumeThroughput), 0.0);
        assert!((share(Cap::InstanceThroughput) - 0.001).abs() < 1e-9);
        assert_eq!(i.shares.len(), 4);
        // Instance storage has only the instance's caps.
        let i = interval(&sample(1, MAGIC_INSTANCE, C), &sample(2, MAGIC_INSTANCE, c)).unwrap();
        let caps: Vec<Cap> = i.shares.iter().map(|s| s.cap).collect();
        assert_eq!(caps, [Cap::InstanceIops, Cap::InstanceThroughput]);
        // More exceeded time than elapsed (clock skew) is said as the whole interval.
        let mut d = C;
        d[6] += 1_200_000;
        let i = interval(&a, &sample(11, MAGIC_EBS, d)).unwrap();
        assert_eq!(i.shares[0].share, 1.0);
    }

    #[test]
    fn latency_bins_give_their_growth_and_their_32_bit_counts_wrap() {
        let mut a = sample(10, MAGIC_EBS, C);
        let mut b = sample(11, MAGIC_EBS, C);
        a.counters.read_latency[2].count = u64::from(u32::MAX) - 4;
        b.counters.read_latency[2].count = 5;
        b.counters.read_latency[3].count += 7;
        let i = interval(&a, &b).unwrap();
        assert_eq!(
            i.read_latency[2],
            Bin {
                lower_us: 4,
                upper_us: 8,
                count: 10
            }
        );
        assert_eq!(i.read_latency[3].count, 7);
        assert_eq!(i.write_latency.iter().map(|b| b.count).sum::<u64>(), 0);
        // Bounds changed between the reads: no histogram rather than a wrong one.
        b.counters.write_latency[0].upper_us = 3;
        assert!(interval(&a, &b).unwrap().write_latency.is_empty());
    }

    #[test]
    fn a_counter_going_backwards_gives_no_value_and_says_why() {
        let a = sample(10, MAGIC_EBS, C);
        for k in [0usize, 3, 6, 9] {
            let mut c = C;
            c[k] -= 1;
            let e = interval(&a, &sample(11, MAGIC_EBS, c)).unwrap_err();
            assert!(matches!(e, IntervalError::Backwards(_)), "{k}: {e:?}");
            assert!(e.to_string().contains("reset or replaced"));
        }
        // A volume replaced by a fresh one: everything small again.
        let e = interval(&a, &sample(11, MAGIC_EBS, [0; 11])).unwrap_err();
        assert_eq!(e, IntervalError::Backwards("read operations"));
        assert_eq!(interval(&a, &a), Err(IntervalError::NotLater));
        let e = interval(&a, &sample(11, MAGIC_INSTANCE, C)).unwrap_err();
        assert_eq!(e, IntervalError::KindChanged);
    }

    #[test]
    fn a_counter_wrap_is_a_wrap_not_a_reset() {
        let mut c = C;
        c[2] = u64::MAX - 999; // read bytes about to wrap
        c[6] = u64::MAX - 99_999; // volume IOPS exceeded, 0.1 s before the wrap
        let a = sample(10, MAGIC_EBS, c);
        let mut d = c;
        d[2] = 24; // 1000 bytes to the wrap, then 24
        d[6] = 400_000; // 0.1 s, then 0.4 s
        let i = interval(&a, &sample(11, MAGIC_EBS, d)).unwrap();
        assert_eq!(i.read_bytes, 1024);
        assert!((i.shares[0].share - 0.5).abs() < 1e-9);
        assert_eq!(i.wrapped, ["read bytes", "volume IOPS exceeded"]);
        // Histograms: same counts, no growth.
        assert_eq!(i.read_latency.len(), 28);
        assert!(i.read_latency.iter().all(|b| b.count == 0));
        // A "wrap" of an exceeded-time counter by more than the elapsed time is a reset.
        let mut e = c;
        e[6] = 5_000_000;
        let r = interval(&a, &sample(11, MAGIC_EBS, e));
        assert_eq!(r, Err(IntervalError::Backwards("volume IOPS exceeded")));
    }
}
