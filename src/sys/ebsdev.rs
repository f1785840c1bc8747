//! Reading log page 0xD0 of an AWS EBS volume or EC2 instance storage (the layout and the
//! interval math are sys/ebs.rs): a device is looked at only when sysfs shows one of Amazon's
//! two model names, then identified through Identify Controller; the page is read through the
//! NVMe admin pass-through ioctl on the block device opened read-only, at most once per
//! second, each read timed, the reader switched off (one warning) after a slow read or when the
//! process lacks CAP_SYS_ADMIN. The ioctl stands behind [`Controller`], which tests drive.
//! Imports only: sys/.

use super::ebs::{self, Identity, Interval, IntervalError, Kind, Sample};
use super::Root;
use crate::sys::device::BlockDev;
use std::io;
use std::time::Duration;

/// The admin commands the reader sends; the real one is [`NvmeDev`], tests give pages.
pub trait Controller: Send {
    /// Identify Controller (CNS 1): 4,096 bytes.
    fn identify(&mut self) -> io::Result<Vec<u8>>;
    /// Get Log Page 0xD0 of namespace `nsid`, `len` bytes.
    fn log_page(&mut self, nsid: u32, len: usize) -> io::Result<Vec<u8>>;
}

/// `struct nvme_passthru_cmd` of <linux/nvme_ioctl.h> (72 bytes).
#[repr(C)]
#[derive(Default)]
struct AdminCmd {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
    timeout_ms: u32,
    result: u32,
}

/// NVME_IOCTL_ADMIN_CMD: _IOWR('N', 0x41, struct nvme_passthru_cmd).
const NVME_IOCTL_ADMIN_CMD: u64 = 0xC000_0000 | (72 << 16) | ((b'N' as u64) << 8) | 0x41;
const OPC_GET_LOG_PAGE: u8 = 0x02;
const OPC_IDENTIFY: u8 = 0x06;
const CNS_CONTROLLER: u32 = 1;

/// An NVMe block device opened read-only for admin commands.
pub struct NvmeDev {
    file: std::fs::File,
}

impl NvmeDev {
    pub fn open(path: &std::path::Path) -> io::Result<NvmeDev> {
        Ok(NvmeDev {
            file: std::fs::File::open(path)?,
        })
    }

    fn admin(&mut self, mut cmd: AdminCmd, len: usize) -> io::Result<Vec<u8>> {
        use std::os::fd::AsRawFd;
        let mut buf = vec![0u8; len];
        cmd.addr = buf.as_mut_ptr() as u64;
        cmd.data_len = u32::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: `cmd` is a valid nvme_passthru_cmd whose addr/data_len describe `buf`, which
        // lives (and is not moved) until the call returns; the kernel writes at most data_len
        // bytes there.
        let rc = unsafe {
            libc::ioctl(
                self.file.as_raw_fd(),
                NVME_IOCTL_ADMIN_CMD as _,
                &mut cmd as *mut AdminCmd,
            )
        };
        match rc {
            0 => Ok(buf),
            r if r < 0 => Err(io::Error::last_os_error()),
            status => Err(io::Error::other(format!(
                "the controller refused the command (NVMe status {status:#x})"
            ))),
        }
    }
}

impl Controller for NvmeDev {
    fn identify(&mut self) -> io::Result<Vec<u8>> {
        let cmd = AdminCmd {
            opcode: OPC_IDENTIFY,
            cdw10: CNS_CONTROLLER,
            ..AdminCmd::default()
        };
        self.admin(cmd, 4096)
    }

    fn log_page(&mut self, nsid: u32, len: usize) -> io::Result<Vec<u8>> {
        let dwords = u32::try_from(len / 4).unwrap_or(u32::MAX).max(1) - 1;
        let cmd = AdminCmd {
            opcode: OPC_GET_LOG_PAGE,
            nsid,
            // Log id in bits 0-7, number of dwords minus one (low 16 bits) in bits 16-31.
            cdw10: u32::from(ebs::LOG_PAGE) | ((dwords & 0xffff) << 16),
            cdw11: dwords >> 16,
            ..AdminCmd::default()
        };
        self.admin(cmd, len)
    }
}

/// Whether the model the kernel shows for a device (`<sys>/dev/block/M:m/device/model`) is
/// one of Amazon's: the only test made on every device, and it opens nothing.
pub fn looks_amazon(root: &Root, dev: &BlockDev) -> bool {
    let p = root.sys.join(format!(
        "dev/block/{}:{}/device/model",
        dev.major, dev.minor
    ));
    std::fs::read_to_string(p).is_ok_and(|m| {
        let m = m.trim();
        m == ebs::MODEL_EBS || m == ebs::MODEL_INSTANCE
    })
}

/// The identity sysfs shows (the kernel's copy of Identify Controller: `device/model`,
/// `device/serial`, and the PCI vendor id `device/device/vendor`), for when the controller
/// cannot be asked itself; None unless all three say Amazon.
pub fn sysfs_identity(root: &Root, dev: &BlockDev) -> Option<Identity> {
    let dir = root
        .sys
        .join(format!("dev/block/{}:{}/device", dev.major, dev.minor));
    let read = |rel: &str| std::fs::read_to_string(dir.join(rel)).ok();
    let vendor = read("device/vendor")?;
    let id = ebs::IdCtrl {
        vid: u16::from_str_radix(vendor.trim().trim_start_matches("0x"), 16).ok()?,
        serial: read("serial")?.trim().to_string(),
        model: read("model")?.trim().to_string(),
    };
    ebs::identify(&id)
}

/// One line for a failed open or command: a refusal names the capability it takes.
fn explain(e: &io::Error, what: &str) -> String {
    if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) {
        format!("{what}: {e}: reading the AWS statistics needs CAP_SYS_ADMIN")
    } else {
        format!("{what}: {e}")
    }
}

/// A read longer than this switches the reader off: a log page is a small admin command
/// answered in well under a millisecond; 100 ms stalls a once-a-second tick by a tenth, which
/// no statistic is worth (and is far above the host's 1-3.5 ms steals).
pub const SLOW_READ: Duration = Duration::from_millis(100);
/// The shortest time between two reads.
pub const MIN_PERIOD: Duration = Duration::from_secs(1);

/// Why `sample` gave no counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRead {
    /// Less than [`MIN_PERIOD`] since the last read.
    TooSoon,
    /// The reader is off, and why (said once as a warning when it switched off).
    Off(String),
    /// This read failed (the reader stays on).
    Failed(String),
}

/// What reads have cost so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cost {
    pub reads: u64,
    pub last_us: u64,
    pub max_us: u64,
    pub total_us: u64,
}

/// The reader of one device's statistics.
pub struct Sampler {
    name: String,
    identity: Identity,
    nsid: u32,
    ctl: Box<dyn Controller>,
    clock: Box<dyn FnMut() -> Duration + Send>,
    last_read: Option<Duration>,
    cost: Cost,
    off: Option<String>,
    warnings: Vec<String>,
}

fn host_clock() -> Box<dyn FnMut() -> Duration + Send> {
    Box::new(|| Duration::from_nanos(super::clock::monotonic_ns()))
}

impl Sampler {
    /// The reader of a block device, or None when it is not an EBS volume or instance
    /// storage (then nothing was opened unless sysfs showed an Amazon model). Err: an Amazon
    /// model in sysfs whose controller could not be opened or identified (the message says
    /// why; nothing else was read).
    pub fn open(root: &Root, dev: &BlockDev) -> Result<Option<Sampler>, String> {
        if !looks_amazon(root, dev) {
            return Ok(None);
        }
        let node = std::path::Path::new("/dev").join(&dev.name);
        let ctl = NvmeDev::open(&node)
            .map_err(|e| explain(&e, &format!("opening {}", node.display())))?;
        // The namespace id of the block device (sysfs `nsid`), else 1 as nvme-cli asks.
        let nsid = std::fs::read_to_string(
            root.sys
                .join(format!("dev/block/{}:{}/nsid", dev.major, dev.minor)),
        )
        .ok()
        .and_then(|s| s.trim().parse().ok());
        Sampler::with(&dev.name, Box::new(ctl), nsid, host_clock())
    }

    /// A reader over any controller and clock (tests); identifies the controller first.
    pub fn with(
        name: &str,
        mut ctl: Box<dyn Controller>,
        nsid: Option<u32>,
        clock: Box<dyn FnMut() -> Duration + Send>,
    ) -> Result<Option<Sampler>, String> {
        let page = ctl
            .identify()
            .map_err(|e| explain(&e, &format!("identifying the controller of {name}")))?;
        let Some(identity) = ebs::parse_identify(&page).and_then(|i| ebs::identify(&i)) else {
            return Ok(None);
        };
        let nsid = match identity.kind {
            Kind::EbsVolume => 1,
            Kind::InstanceStore => nsid.unwrap_or(u32::MAX),
        };
        Ok(Some(Sampler {
            name: name.to_string(),
            identity,
            nsid,
            ctl,
            clock,
            last_read: None,
            cost: Cost::default(),
            off: None,
            warnings: Vec::new(),
        }))
    }

    /// The device's kernel name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    pub fn cost(&self) -> Cost {
        self.cost
    }

    /// Why the reader is off, if it is.
    pub fn off_reason(&self) -> Option<&str> {
        self.off.as_deref()
    }

    /// The warnings said since the last call (one when the reader switched off).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    fn switch_off(&mut self, why: String) -> NotRead {
        self.warnings.push(why.clone());
        self.off = Some(why.clone());
        NotRead::Off(why)
    }

    /// Read the counters now, unless the reader is off or read less than a second ago.
    pub fn sample(&mut self) -> Result<Sample, NotRead> {
        if let Some(why) = &self.off {
            return Err(NotRead::Off(why.clone()));
        }
        let t0 = (self.clock)();
        if self
            .last_read
            .is_some_and(|l| t0.saturating_sub(l) < MIN_PERIOD)
        {
            return Err(NotRead::TooSoon);
        }
        self.last_read = Some(t0);
        let len = match self.identity.kind {
            Kind::EbsVolume => ebs::BASE_LEN,
            Kind::InstanceStore => ebs::DETAIL_LEN,
        };
        let got = self.ctl.log_page(self.nsid, len);
        let took = (self.clock)().saturating_sub(t0);
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.cost.reads += 1;
        self.cost.last_us = us;
        self.cost.max_us = self.cost.max_us.max(us);
        self.cost.total_us = self.cost.total_us.saturating_add(us);
        let page = match got {
            Ok(p) => p,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
                return Err(self.switch_off(format!(
                    "{}: reading its {} statistics (NVMe log page 0xD0) needs CAP_SYS_ADMIN",
                    self.name,
                    self.identity.kind.as_str()
                )));
            }
            Err(e) => {
                return Err(NotRead::Failed(format!(
                    "{}: log page 0xD0: {e}",
                    self.name
                )))
            }
        };
        if took > SLOW_READ {
            self.switch_off(format!(
                "{}: reading log page 0xD0 took {} ms (more than {} ms): no longer read",
                self.name,
                took.as_millis(),
                SLOW_READ.as_millis()
            ));
        }
        let counters =
            ebs::parse_page(&page).map_err(|e| NotRead::Failed(format!("{}: {e}", self.name)))?;
        let at = t0 + took / 2;
        Ok(Sample {
            at_ns: u64::try_from(at.as_nanos()).unwrap_or(u64::MAX),
            counters,
        })
    }

    /// The interval between two samples of this device (sys::ebs::interval).
    pub fn interval(&self, prev: &Sample, now: &Sample) -> Result<Interval, IntervalError> {
        ebs::interval(prev, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::ebs::synth;
    use std::sync::{Arc, Mutex};

    /// A fake controller: an identify page, a queue of answers to Get Log Page, the commands
    /// it received, and the time each read takes on a shared fake clock.
    struct Fake {
        id: Vec<u8>,
        pages: Vec<io::Result<Vec<u8>>>,
        asked: Arc<Mutex<Vec<(u32, usize)>>>,
        now: Arc<Mutex<Duration>>,
        read_takes: Duration,
    }

    impl Controller for Fake {
        fn identify(&mut self) -> io::Result<Vec<u8>> {
            Ok(self.id.clone())
        }
        fn log_page(&mut self, nsid: u32, len: usize) -> io::Result<Vec<u8>> {
            self.asked.lock().unwrap().push((nsid, len));
            *self.now.lock().unwrap() += self.read_takes;
            self.pages.remove(0)
        }
    }

    struct Rig {
        sampler: Option<Sampler>,
        asked: Arc<Mutex<Vec<(u32, usize)>>>,
        now: Arc<Mutex<Duration>>,
    }

    fn rig(model: &str, pages: Vec<io::Result<Vec<u8>>>, read_takes: Duration) -> Rig {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let now = Arc::new(Mutex::new(Duration::from_secs(100)));
        let fake = Fake {
            id: synth::identify(0x1d0f, "vol0123456789abcdef0", model),
            pages,
            asked: asked.clone(),
            now: now.clone(),
            read_takes,
        };
        let clock_now = now.clone();
        let clock = Box::new(move || *clock_now.lock().unwrap());
        let sampler = Sampler::with("nvme1n1", Box::new(fake), Some(3), clock).unwrap();
        Rig {
            sampler,
            asked,
            now,
        }
    }

    fn counters(v: u64) -> [u64; 11] {
        [v, v, v, v, v, v, v * 1000, 0, 0, 0, 2]
    }

    #[test]
    fn a_fake_ebs_controller_is_sampled_once_a_second_and_gives_shares() {
        let pages = vec![
            Ok(synth::page(ebs::BASE_LEN, ebs::MAGIC_EBS, 0, counters(100))),
            Ok(synth::page(ebs::BASE_LEN, ebs::MAGIC_EBS, 0, counters(350))),
        ];
        let mut r = rig(ebs::MODEL_EBS, pages, Duration::from_micros(300));
        let s = r.sampler.as_mut().unwrap();
        assert_eq!(
            s.identity().volume_id.as_deref(),
            Some("vol-0123456789abcdef0")
        );
        let a = s.sample().unwrap();
        // Asked again at once: not read.
        assert_eq!(s.sample(), Err(NotRead::TooSoon));
        *r.now.lock().unwrap() += Duration::from_secs(1);
        let b = s.sample().unwrap();
        // EBS is asked for 4,096 bytes of namespace 1, twice (the early call read nothing).
        assert_eq!(*r.asked.lock().unwrap(), [(1, 4096), (1, 4096)]);
        let i = s.interval(&a, &b).unwrap();
        // 250 ms of volume-IOPS throttling in 1 s + the 300 µs read.
        assert!((i.shares[0].share - 0.25 / 1.0003).abs() < 1e-6, "{i:?}");
        let c = s.cost();
        assert_eq!((c.reads, c.last_us, c.max_us), (2, 300, 300));
        assert!(s.take_warnings().is_empty());
    }

    #[test]
    fn instance_storage_is_asked_for_8192_bytes_of_its_own_namespace() {
        let pages = vec![Ok(synth::page(
            ebs::DETAIL_LEN,
            ebs::MAGIC_INSTANCE,
            1,
            counters(1),
        ))];
        let mut r = rig(ebs::MODEL_INSTANCE, pages, Duration::ZERO);
        let s = r.sampler.as_mut().unwrap();
        assert_eq!(s.identity().volume_id, None);
        assert_eq!(s.sample().unwrap().counters.by_size.len(), 3);
        assert_eq!(*r.asked.lock().unwrap(), [(3, 8192)]);
    }

    #[test]
    fn another_controller_is_never_asked_for_the_page() {
        let r = rig("QEMU NVMe Ctrl", vec![], Duration::ZERO);
        assert!(r.sampler.is_none());
        assert!(r.asked.lock().unwrap().is_empty());
    }

    #[test]
    fn lacking_cap_sys_admin_says_so_once_and_reads_no_more() {
        let pages = vec![Err(io::Error::from_raw_os_error(libc::EACCES))];
        let mut r = rig(ebs::MODEL_EBS, pages, Duration::ZERO);
        let s = r.sampler.as_mut().unwrap();
        let e = s.sample().unwrap_err();
        assert!(
            matches!(&e, NotRead::Off(m) if m.contains("CAP_SYS_ADMIN")),
            "{e:?}"
        );
        *r.now.lock().unwrap() += Duration::from_secs(5);
        assert!(matches!(s.sample(), Err(NotRead::Off(_))));
        assert_eq!(r.asked.lock().unwrap().len(), 1);
        let w = s.take_warnings();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].lines().count(), 1);
    }

    #[test]
    fn a_slow_read_switches_the_reader_off_with_one_warning() {
        let p = synth::page(ebs::BASE_LEN, ebs::MAGIC_EBS, 0, counters(1));
        let mut r = rig(
            ebs::MODEL_EBS,
            vec![Ok(p.clone()), Ok(p)],
            Duration::from_millis(150),
        );
        let s = r.sampler.as_mut().unwrap();
        // The slow read's counters are kept; the next call reads nothing.
        assert!(s.sample().is_ok());
        *r.now.lock().unwrap() += Duration::from_secs(2);
        assert!(matches!(s.sample(), Err(NotRead::Off(m)) if m.contains("150 ms")));
        assert_eq!(r.asked.lock().unwrap().len(), 1);
        assert_eq!(s.take_warnings().len(), 1);
        assert_eq!(s.cost().max_us, 150_000);
    }

    #[test]
    fn a_bad_page_or_a_failed_read_leaves_the_reader_on() {
        let mut bad = synth::page(ebs::BASE_LEN, ebs::MAGIC_EBS, 0, counters(1));
        bad[0] = 0;
        let pages = vec![
            Ok(bad),
            Err(io::Error::from_raw_os_error(libc::EIO)),
            Ok(synth::page(ebs::BASE_LEN, ebs::MAGIC_EBS, 0, counters(1))),
        ];
        let mut r = rig(ebs::MODEL_EBS, pages, Duration::ZERO);
        let s = r.sampler.as_mut().unwrap();
        for _ in 0..2 {
            assert!(matches!(s.sample(), Err(NotRead::Failed(_))));
            *r.now.lock().unwrap() += Duration::from_secs(1);
        }
        assert!(s.sample().is_ok());
        assert!(s.off_reason().is_none());
    }

    #[test]
    fn a_refused_identify_names_the_capability() {
        struct Refuses;
        impl Controller for Refuses {
            fn identify(&mut self) -> io::Result<Vec<u8>> {
                Err(io::Error::from_raw_os_error(libc::EPERM))
            }
            fn log_page(&mut self, _: u32, _: usize) -> io::Result<Vec<u8>> {
                panic!("asked for the page of an unidentified controller")
            }
        }
        let e = Sampler::with("nvme1n1", Box::new(Refuses), None, host_clock()).err();
        let e = e.unwrap();
        assert!(e.contains("nvme1n1") && e.contains("CAP_SYS_ADMIN"), "{e}");
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn the_ioctl_number_is_the_kernels() {
        assert_eq!(std::mem::size_of::<AdminCmd>(), 72);
        assert_eq!(NVME_IOCTL_ADMIN_CMD, 0xC048_4E41);
    }
}
