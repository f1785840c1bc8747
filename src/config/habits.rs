//! iostat's and fio's flags (cli/habits.rs) given iostat's or fio's meaning where iosat has
//! one, or answered with one usage line naming iosat's way (exit 2). Never clap's "use
//! '-- -x'" tip: these flags are parsed, then explained here.
//! Must not import: cmd/, ui/.

use crate::cli::habits::{FioFlags, FioFsyncFlags, IostatFlags};
use crate::error::{Error, Result};

/// What iostat's flags ask of `iosat stat`, beyond the no-ops (`-x`, `-t`, `-k`, `-N`, `-y`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IostatHabits {
    /// `-d`: no avg-cpu line.
    pub no_cpu: bool,
    /// `-p`: show partitions.
    pub partitions: bool,
    /// `-p DEV,...`: these devices and their partitions (as globs `DEV*`).
    pub devices: Vec<String>,
    /// `-p 1 5`: the number clap took as -p's value is iostat's interval (no device name
    /// starts with a digit); it goes back in front of the positional arguments.
    pub positional: Option<String>,
}

/// iostat's flags on `iosat stat`.
pub fn iostat(f: &IostatFlags) -> Result<IostatHabits> {
    if f.m {
        return Err(Error::usage(
            "-m",
            "-m",
            "is iostat's MB/s; iosat stat prints kB/s (as iostat -k) in every format: divide \
             rkB/s and wkB/s by 1024, or read them from --json",
        ));
    }
    if f.s {
        return Err(Error::usage(
            "-s",
            "-s",
            "is iostat's short layout; iosat stat's default view already fits 80 columns \
             (--wide shows every column)",
        ));
    }
    if f.human {
        return Err(Error::usage(
            "--human",
            "--human",
            "is iostat's; iosat stat prints plain numbers (kB/s, ms) so that columns line up",
        ));
    }
    if let Some(g) = &f.g {
        return Err(Error::usage(
            "-g",
            g,
            "is iostat's device group; iosat stat has no groups: name the devices (globs \
             allowed: 'sd*') and read each line",
        ));
    }
    if let Some(j) = &f.j {
        return Err(Error::usage(
            "-j",
            j,
            "is iostat's persistent-name option; iosat stat takes /dev/disk/by-id/... paths \
             as DEVICE and shows dm names by default",
        ));
    }
    let mut h = IostatHabits {
        no_cpu: f.d,
        ..IostatHabits::default()
    };
    if let Some(p) = &f.p {
        h.partitions = true;
        if p.starts_with(|c: char| c.is_ascii_digit()) {
            h.positional = Some(p.clone());
        } else if !p.eq_ignore_ascii_case("ALL") {
            for d in p.split(',').map(str::trim) {
                let name = super::stat::device_pattern(d)
                    .map_err(|_| Error::usage("-p", d, "must be ALL or a device name list"))?;
                h.devices.push(format!("{name}*"));
            }
        }
    }
    Ok(h)
}

/// The command a fio flag was given to, for its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FioOn {
    Sweep,
    Fsync,
}

/// fio's flags without a one-to-one iosat flag: the first one given is answered.
pub fn fio(f: &FioFlags, on: FioOn) -> Result<()> {
    let sweep = on == FioOn::Sweep;
    let hint = |flag: &str, v: &Option<String>, sweep_way: &str, fsync_way: &str| match v {
        Some(v) => Err(Error::usage(
            flag,
            v,
            if sweep { sweep_way } else { fsync_way }.to_string(),
        )),
        None => Ok(()),
    };
    hint(
        "--iodepth",
        &f.iodepth,
        "is fio's queue depth; iosat sweep measures every depth in one run: --levels \
         1,2,4,...,N (or --levels N for that depth alone)",
        "is fio's queue depth; iosat fsync's concurrency is its committers: --committers \
         1,2,...,N",
    )?;
    hint(
        "--numjobs",
        &f.numjobs,
        "is fio's job count; iosat sweep sets requests in flight with --levels and spreads a \
         level over threads with --threads N",
        "is fio's job count; iosat fsync runs concurrent committers: --committers N",
    )?;
    hint(
        "--ioengine",
        &f.ioengine,
        "is fio's; iosat sweep's is --engine uring|sync",
        "is fio's; iosat fsync's write paths are --methods (fsync, fdatasync, odsync, \
         rwf_dsync, odirect_fsync, ...)",
    )?;
    hint(
        "--filename",
        &f.filename,
        "is fio's; iosat sweep takes the target as its argument: iosat sweep FILE|DIR|DEVICE",
        "is fio's; iosat fsync takes a directory as its argument: iosat fsync DIR",
    )?;
    hint(
        "--directory",
        &f.directory,
        "is fio's; iosat sweep takes the directory as its argument: iosat sweep DIR",
        "is fio's; iosat fsync takes the directory as its argument: iosat fsync DIR",
    )?;
    hint(
        "--output-format",
        &f.output_format,
        "is fio's; iosat prints text, or --json, --csv, --markdown (and --html FILE)",
        "is fio's; iosat prints text, or --json, --csv, --markdown (and --html FILE)",
    )?;
    hint(
        "--name",
        &f.name,
        "is fio's job name; iosat runs one sweep per command, named by its target",
        "is fio's job name; iosat runs one fsync test per command, named by its directory",
    )?;
    hint(
        "--time_based",
        &f.time_based,
        "is fio's; iosat sweep is always time based: --duration per level (--runtime)",
        "is fio's; iosat fsync is always time based: --duration per case (--runtime)",
    )?;
    Ok(())
}

/// fio's flags that `iosat fsync` answers (sweep has them as its own flags).
pub fn fio_fsync(f: &FioFsyncFlags) -> Result<()> {
    let answers: [(&str, &Option<String>, &str); 6] = [
        (
            "--rw",
            &f.rw,
            "is fio's pattern; iosat fsync always writes: --mode overwrite|append|both (the \
             read and write patterns are iosat sweep's --pattern)",
        ),
        (
            "--size",
            &f.size,
            "is fio's file size; iosat fsync sizes its files itself: --sizes sets the bytes \
             per commit (fio's --bs)",
        ),
        (
            "--fsync",
            &f.fsync,
            "is fio's; iosat fsync measures a commit after every write: --methods fsync",
        ),
        (
            "--fdatasync",
            &f.fdatasync,
            "is fio's; iosat fsync measures a commit after every write: --methods fdatasync",
        ),
        (
            "--sync",
            &f.sync,
            "is fio's O_SYNC; iosat fsync's is --methods osync (or odsync for O_DSYNC)",
        ),
        (
            "--direct",
            &f.direct,
            "is fio's O_DIRECT; iosat fsync's are --methods odirect, odirect_fsync, \
             odirect_fdatasync (O_DIRECT alone is not durable)",
        ),
    ];
    for (flag, v, why) in answers {
        if let Some(v) = v {
            return Err(Error::usage(flag, v, why));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_of_named_devices_are_globs() {
        let h = iostat(&IostatFlags {
            p: Some("sda,/dev/mapper/vg0-root".into()),
            d: true,
            ..Default::default()
        })
        .unwrap();
        assert!(h.partitions && h.no_cpu);
        assert_eq!(h.devices, ["sda*", "vg0-root*"]);
        let all = iostat(&IostatFlags {
            p: Some("ALL".into()),
            ..Default::default()
        })
        .unwrap();
        assert!(all.partitions && all.devices.is_empty());
        let num = iostat(&IostatFlags {
            p: Some("1".into()),
            ..Default::default()
        })
        .unwrap();
        assert!(num.partitions && num.devices.is_empty());
        assert_eq!(num.positional.as_deref(), Some("1"));
        let e = iostat(&IostatFlags {
            m: true,
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("'-m' is iostat's MB/s"), "{e}");
    }
}
