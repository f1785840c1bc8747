//! The binary's command-line contract: help, version, usage errors.

use crate::util::iosat;

#[test]
fn help_lists_every_subcommand() {
    let out = iosat().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for sub in [
        "stat", "info", "sweep", "fsync", "analyze", "report", "compare",
    ] {
        assert!(text.contains(sub), "--help lacks {sub}:\n{text}");
    }
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let out = iosat().args(["stat", "--no-such-flag"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
