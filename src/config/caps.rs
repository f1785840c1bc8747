//! Declared caps (issue 42) from the command line: `--cap-iops N` and `--cap-mbps N` for the
//! one device a command measures, saves or names, and `--cap DEV:KEY=N,…` per device for the
//! live views. Each value a positive finite number; a bad one is one line naming the flag and
//! the value (exit 2).
//! Imports only: cli/, error, analysis/declared.rs.

use crate::analysis::declared::{self, DeclaredCap};
use crate::cli::{CapArgs, DeviceCapArgs};
use crate::error::{Error, Result};

/// A declared cap as a device carries it, by the device's name as written (`nvme1n1`,
/// `/dev/sdb`, a dm name).
pub type DeviceCaps = Vec<(String, DeclaredCap)>;

/// `--cap-iops` and `--cap-mbps`: None when neither is given.
pub fn one(a: &CapArgs) -> Result<Option<DeclaredCap>> {
    let mut cap = DeclaredCap::default();
    if let Some(v) = &a.cap_iops {
        cap.iops = Some(value("--cap-iops", v)?);
    }
    if let Some(v) = &a.cap_mbps {
        cap.bytes_per_s = Some(value("--cap-mbps", v)? * 1e6);
    }
    Ok((!cap.is_empty()).then_some(cap))
}

fn value(flag: &str, v: &str) -> Result<f64> {
    declared::parse_value(v).ok_or_else(|| {
        Error::usage(
            flag,
            v,
            "must be a positive number (the device's provisioned figure)",
        )
    })
}

/// The caps of a live view: each `--cap DEV:…`, and `--cap-iops/--cap-mbps` for the one
/// device `named` (the DEVICE arguments, or `--device-include`): with none or several named,
/// or a glob, which device they declare is not said, and they are refused.
pub fn per_device(a: &DeviceCapArgs, named: &[String], names_flag: &str) -> Result<DeviceCaps> {
    let mut out = DeviceCaps::new();
    for spec in &a.cap {
        let (dev, cap) =
            declared::parse_spec(spec).map_err(|why| Error::usage("--cap", spec, why))?;
        out.push((dev, cap));
    }
    if let Some(cap) = one(&a.one)? {
        let (flag, v) = match (&a.one.cap_iops, &a.one.cap_mbps) {
            (Some(v), _) => ("--cap-iops", v),
            (None, Some(v)) => ("--cap-mbps", v),
            (None, None) => unreachable!("one() gave a cap"),
        };
        match named {
            [dev] if !dev.contains(['*', '?', '[']) => out.push((dev.clone(), cap)),
            _ => {
                return Err(Error::usage(
                    flag,
                    v,
                    format!(
                        "declares the cap of one device: name exactly one device ({names_flag}), \
                         or give each its own with --cap DEV:iops=N,mbps=N"
                    ),
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(iops: Option<&str>, mbps: Option<&str>, cap: &[&str]) -> DeviceCapArgs {
        DeviceCapArgs {
            one: CapArgs {
                cap_iops: iops.map(str::to_string),
                cap_mbps: mbps.map(str::to_string),
            },
            cap: cap.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn bad_values_name_the_flag_and_the_value() {
        for (iops, mbps, flag, v) in [
            (Some("0"), None, "--cap-iops", "0"),
            (Some("-5"), None, "--cap-iops", "-5"),
            (Some("abc"), None, "--cap-iops", "abc"),
            (None, Some("0"), "--cap-mbps", "0"),
        ] {
            let e = one(&args(iops, mbps, &[]).one).unwrap_err();
            let line = e.to_string();
            assert!(
                line.contains(flag) && line.contains(&format!("'{v}'")),
                "{line}"
            );
            assert!(!line.contains('\n'), "{line}");
            assert_eq!(e.exit_code(), crate::error::exit::USAGE);
        }
        let e = per_device(&args(None, None, &["sda:iops=-1"]), &[], "DEVICE").unwrap_err();
        assert!(e.to_string().contains("'--cap'"), "{e}");
    }

    #[test]
    fn one_cap_needs_one_named_device() {
        let a = args(Some("3000"), Some("125"), &["sdb:iops=16000"]);
        let caps = per_device(&a, &["nvme1n1".into()], "DEVICE").unwrap();
        assert_eq!(caps.len(), 2);
        assert_eq!(caps[1].0, "nvme1n1");
        assert_eq!(caps[1].1.iops, Some(3000.0));
        assert_eq!(caps[1].1.bytes_per_s, Some(125e6));
        for named in [
            vec![],
            vec!["a".to_string(), "b".into()],
            vec!["nvme*".into()],
        ] {
            let e = per_device(&a, &named, "DEVICE").unwrap_err().to_string();
            assert!(
                e.contains("--cap-iops") && e.contains("exactly one device"),
                "{e}"
            );
        }
    }
}
