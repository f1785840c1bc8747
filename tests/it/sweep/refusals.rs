//! Bad input gets one line and its exit code; tmpfs is refused unless allowed; a user's
//! output file is refused before the run.

use super::*;
use crate::util::assert_refusals;

#[test]
fn bad_input_gets_one_line_and_its_exit_code() {
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let missing = dir.path().join("no/such/dir");
    let missing = missing.to_str().unwrap();
    assert_refusals(&[
        (
            &["sweep", d, "--bs", "1000"],
            2,
            "'--bs' must be a multiple of 512 (got '1000')",
        ),
        (&["sweep", missing], 2, "does not exist"),
        (&["sweep", d, "--size", "900t"], 4, "too little free space"),
        (&["sweep", d, "--read-pct", "50"], 2, "'--read-pct'"),
        (&["sweep", d, "--levels", "4,2"], 2, "'--levels'"),
        (&["sweep", d, "--engine", "aio"], 2, "'--engine'"),
        (&["sweep", d, "--duration", "soon"], 2, "'--duration'"),
    ]);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn tmpfs_is_refused_unless_allowed() {
    let Ok(shm) = crate::util::tempdir_in("/dev/shm") else {
        crate::util::skip_lacking("no /dev/shm");
        return;
    };
    let d = shm.path().to_str().unwrap();
    let out = run(&[d, "--size", "4m", "--levels", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--allow-tmpfs"), "{}", stderr(&out));
    let mut args = vec![
        d,
        "--size",
        "4m",
        "--levels",
        "1",
        "--allow-tmpfs",
        "--json",
    ];
    args.extend(QUICK);
    let out = run(&args);
    if out.status.success() {
        let j = json_of(&out);
        let notes = j["notes"].to_string();
        assert!(notes.contains("tmpfs"), "{notes}");
        // The warning reaches stderr too: --json on stdout does not hide it.
        let err = stderr(&out);
        assert!(
            err.contains("iosat: warning:") && err.contains("tmpfs") && err.contains("memory"),
            "{err}"
        );
    } else {
        // tmpfs without O_DIRECT support (kernels before 6.6) must say so and name the flag.
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("--direct"), "{}", stderr(&out));
    }
    assert!(entries(shm.path()).is_empty());
}

#[test]
fn output_file_of_a_user_is_refused_before_the_run() {
    let dir = crate::util::tempdir().unwrap();
    let out = dir.path().join("sweep.json");
    std::fs::write(&out, "mine\n").unwrap();
    let sim_to = |path: &Path| {
        run(&[
            "--engine",
            "sim:units=4,service=8ms",
            "--levels",
            "1,2",
            "--json",
            "-o",
            path.to_str().unwrap(),
        ])
    };
    let o = sim_to(&out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("'-o'") && err.contains("sweep.json"), "{err}");
    assert!(o.stdout.is_empty(), "refused before anything ran");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine\n");
    // A new name is written, and rewritten by the same run after every level.
    let fresh = dir.path().join("new.json");
    let j = json_of(&sim_to(&fresh));
    let saved: Value = serde_json::from_slice(&std::fs::read(&fresh).unwrap()).unwrap();
    assert_eq!(saved["levels"], j["levels"]);
    assert_eq!(entries(dir.path()).len(), 2, "no temporary file left");
}
