//! The AWS EBS / instance-store statistics other tools print (issue 42, docs/caps.md), for
//! `iosat analyze --aws-stats DEV=FILE` beside a recording of the same period: `nvme amzn
//! stats` of nvme-cli's amzn plugin (`-o json`: one JSON object a run; or its normal text),
//! and `ebsnvme stats` of amazon-ec2-utils (`--json`, or its text; with `-i N`, a first
//! cumulative block and then each N seconds' differences). A FILE holds two or more runs
//! appended (`nvme amzn stats -o json /dev/nvme1n1 >> f` at the recording's start and at its
//! end), or one `ebsnvme stats -i N` session. Both print the same cumulative counters of log
//! page 0xD0 under the same names; their layouts were read in nvme-cli's
//! `plugins/amzn/amzn-nvme.c` and amazon-ec2-utils' `ebsnvme`. Pure.
//! Imports only: nothing.

/// One block of counters as a tool printed it (times in µs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Block {
    pub read_ops: u64,
    pub write_ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Time demand exceeded: volume IOPS, volume throughput, instance IOPS, instance
    /// throughput (on instance storage the instance's local-storage limits).
    pub exceeded_us: [u64; 4],
    pub queue_length: u64,
}

/// The caps the four exceeded times are of, in words.
pub const CAP_WORDS: [&str; 4] = [
    "the volume's IOPS cap",
    "the volume's throughput cap",
    "the instance's IOPS limit",
    "the instance's throughput limit",
];

/// What a file says about one period.
#[derive(Debug, Clone, PartialEq)]
pub struct Period {
    /// "nvme amzn stats" or "ebsnvme stats".
    pub tool: &'static str,
    /// The counters' growth over the period.
    pub delta: Block,
    /// The period's length when the file says it (`ebsnvme stats -i N`); None for
    /// snapshots, which carry no time: they are taken to bracket the recording.
    pub secs: Option<f64>,
    /// How many blocks the file holds.
    pub blocks: usize,
}

const KEYS: [&str; 11] = [
    "total_read_ops",
    "total_write_ops",
    "total_read_bytes",
    "total_write_bytes",
    "ebs_volume_performance_exceeded_iops",
    "ebs_volume_performance_exceeded_tp",
    "ec2_instance_ebs_performance_exceeded_iops",
    "ec2_instance_ebs_performance_exceeded_tp",
    "volume_queue_length",
    "total_read_time",
    "total_write_time",
];

fn block_of(get: impl Fn(&str) -> Option<u64>) -> Option<Block> {
    let v = |k: &str| get(k);
    Some(Block {
        read_ops: v(KEYS[0])?,
        write_ops: v(KEYS[1])?,
        read_bytes: v(KEYS[2])?,
        write_bytes: v(KEYS[3])?,
        exceeded_us: [v(KEYS[4])?, v(KEYS[5])?, v(KEYS[6])?, v(KEYS[7])?],
        queue_length: v(KEYS[8]).unwrap_or(0),
    })
}

/// JSON objects one after the other (each tool prints one per run).
fn json_blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    for (i, v) in serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .enumerate()
    {
        let v = v.map_err(|e| format!("object {}: {e}", i + 1))?;
        out.push(block_of(|k| v.get(k)?.as_u64()).ok_or(format!(
            "object {}: not `nvme amzn stats -o json` or `ebsnvme stats --json` output \
             (expected the keys total_read_ops ... ec2_instance_ebs_performance_exceeded_tp)",
            i + 1
        ))?);
    }
    Ok(out)
}

/// The text layout: sections ("Total Ops", "EBS Volume Performance Exceeded (us)", ...) with
/// `  Read: N` / `  IOPS: N` lines; a block ends at its queue length line.
fn text_blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut cur: std::collections::HashMap<&'static str, u64> = Default::default();
    let mut section = "";
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        let head = t.trim_end_matches(':');
        let key_of = |sec: &str, item: &str| -> Option<&'static str> {
            Some(match (sec, item) {
                ("Total Ops", "Read") => KEYS[0],
                ("Total Ops", "Write") => KEYS[1],
                ("Total Bytes", "Read") => KEYS[2],
                ("Total Bytes", "Write") => KEYS[3],
                ("Total Time (us)", "Read") => KEYS[9],
                ("Total Time (us)", "Write") => KEYS[10],
                ("EBS Volume Performance Exceeded (us)", "IOPS") => KEYS[4],
                ("EBS Volume Performance Exceeded (us)", "Throughput") => KEYS[5],
                (
                    "EC2 Instance EBS Performance Exceeded (us)"
                    | "EC2 Instance Local Storage Performance Exceeded (us)",
                    "IOPS",
                ) => KEYS[6],
                (
                    "EC2 Instance EBS Performance Exceeded (us)"
                    | "EC2 Instance Local Storage Performance Exceeded (us)",
                    "Throughput",
                ) => KEYS[7],
                _ => return None,
            })
        };
        if let Some(q) = t.strip_prefix("Queue Length (point in time):") {
            let q = q
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("line {}: '{t}'", n + 1))?;
            cur.insert(KEYS[8], q);
            // Instance storage prints no volume section: its volume times are zero.
            for k in [KEYS[4], KEYS[5]] {
                cur.entry(k).or_insert(0);
            }
            let b = block_of(|k| cur.get(k).copied())
                .ok_or(format!("line {}: a block without all its counters", n + 1))?;
            out.push(b);
            cur.clear();
            continue;
        }
        if let Some((item, v)) = t.split_once(':').filter(|_| line.starts_with(' ')) {
            if let Some(k) = key_of(section, item.trim()) {
                let v = v
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| format!("line {}: '{t}'", n + 1))?;
                cur.insert(k, v);
            }
            continue;
        }
        if !t.is_empty() && !t.starts_with('[') && !t.starts_with('=') {
            section = head;
        }
    }
    Ok(out)
}

fn sub(a: &Block, b: &Block) -> Option<Block> {
    combine(a, b, u64::checked_sub, a.queue_length)
}

/// `a` + `b` (the queue length: `b`'s); None past 2^64, which no device's differences reach.
fn add(a: &Block, b: &Block) -> Option<Block> {
    combine(a, b, u64::checked_add, b.queue_length)
}

/// Each counter of `a` and `b` through `op` (None when one overflows), with `queue_length`.
fn combine(
    a: &Block,
    b: &Block,
    op: fn(u64, u64) -> Option<u64>,
    queue_length: u64,
) -> Option<Block> {
    let mut exceeded_us = [0; 4];
    for (i, e) in exceeded_us.iter_mut().enumerate() {
        *e = op(a.exceeded_us[i], b.exceeded_us[i])?;
    }
    Some(Block {
        read_ops: op(a.read_ops, b.read_ops)?,
        write_ops: op(a.write_ops, b.write_ops)?,
        read_bytes: op(a.read_bytes, b.read_bytes)?,
        write_bytes: op(a.write_bytes, b.write_bytes)?,
        exceeded_us,
        queue_length,
    })
}

/// A file of either tool, either layout, into the period it covers. Err says why, in words
/// the caller puts after the file's name.
pub fn parse(text: &str) -> Result<Period, String> {
    // A `#` line is a comment (the fixtures' sources); neither tool prints one.
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(|l| [l, "\n"])
        .collect();
    let text = kept.as_str();
    let polled = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Polling EBS stats every "))
        .and_then(|r| r.split_whitespace().next()?.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0);
    let json = text.trim_start().starts_with('{');
    let blocks = if json {
        json_blocks(text)?
    } else {
        text_blocks(text)?
    };
    let tool = if polled.is_some() || text.contains("Queue Length (point in time): ") {
        // ebsnvme prints a blank after the figure; nvme-cli's text has none.
        if polled.is_some() || text.contains(" \n") {
            "ebsnvme stats"
        } else {
            "nvme amzn stats"
        }
    } else {
        "nvme amzn stats or ebsnvme stats"
    };
    if blocks.len() < 2 {
        return Err(format!(
            "{} block{} of counters: two are needed (one run at the recording's start, one at \
             its end, appended to the file; or `ebsnvme stats -i 1` over it)",
            blocks.len(),
            if blocks.len() == 1 { "" } else { "s" }
        ));
    }
    if let Some(every) = polled {
        // The first block is cumulative, each next one the difference over `every` s.
        let mut delta = Block::default();
        for b in &blocks[1..] {
            delta = add(&delta, b)
                .ok_or("the differences add up past 2^64: not the output of a real device")?;
        }
        return Ok(Period {
            tool,
            delta,
            secs: Some(every * (blocks.len() - 1) as f64),
            blocks: blocks.len(),
        });
    }
    let (first, last) = (&blocks[0], &blocks[blocks.len() - 1]);
    let delta = sub(last, first).ok_or(
        "a counter went backwards between the first and the last run: the device was \
         reset or replaced (or the runs are of different devices)",
    )?;
    Ok(Period {
        tool,
        delta,
        secs: None,
        blocks: blocks.len(),
    })
}

/// The period set beside the recording of device `dev`: `rec_secs` the recording's span,
/// `rec_requests` the requests /proc/diskstats counted for the device over it. Snapshots
/// carry no time: the period is taken to be the recording's, which the two counts of
/// requests check (more than 10 % apart: they are not of the same period, and it is said).
pub fn beside(p: &Period, dev: &str, rec_secs: f64, rec_requests: f64) -> Vec<String> {
    let secs = p.secs.unwrap_or(rec_secs);
    let ops = p.delta.read_ops as f64 + p.delta.write_ops as f64;
    let whose = match p.secs {
        Some(s) => format!("{} over {s:.0} s", p.tool),
        None => format!(
            "{}, {} runs, taken as bracketing the recording's {rec_secs:.0} s",
            p.tool, p.blocks
        ),
    };
    let shares: Vec<String> = p
        .delta
        .exceeded_us
        .iter()
        .zip(CAP_WORDS)
        .filter(|(us, _)| **us > 0)
        .map(|(us, w)| {
            format!(
                "throttled by {w} {:.1} % of the time",
                (*us as f64 / 1e6 / secs * 100.0).min(100.0)
            )
        })
        .collect();
    let mut out = vec![format!(
        "{dev} ({whose}): {}.",
        if shares.is_empty() {
            "no cap throttled it".to_string()
        } else {
            shares.join(", ")
        }
    )];
    let apart = if rec_requests > 0.0 {
        (ops - rec_requests).abs() / rec_requests
    } else if ops > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    let counts = format!(
        "the device counted {:.0} requests, /proc/diskstats {rec_requests:.0} over the recording",
        ops
    );
    out.push(if apart <= 0.10 {
        format!(
            "{dev}: {counts} ({:.1} % apart): the same period.",
            apart * 100.0
        )
    } else {
        format!(
            "{dev}: {counts}: more than 10 % apart, so the counters are not of the recording's \
             period (or not of this device); the shares above are of another period."
        )
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_from_two_json_runs() {
        let p = parse(include_str!(
            "../../tests/fixtures/aws/nvme-amzn-stats.json"
        ))
        .unwrap();
        assert_eq!(p.tool, "nvme amzn stats or ebsnvme stats"); // the JSON is the same
        assert_eq!((p.blocks, p.secs), (2, None));
        assert_eq!(p.delta.read_ops + p.delta.write_ops, 600_000);
        assert_eq!(p.delta.exceeded_us, [378_000_000, 0, 6_000_000, 0]);
        let lines = beside(&p, "nvme1n1", 600.0, 598_800.0);
        assert_eq!(
            lines[0],
            "nvme1n1 (nvme amzn stats or ebsnvme stats, 2 runs, taken as bracketing the \
             recording's 600 s): throttled by the volume's IOPS cap 63.0 % of the time, \
             throttled by the instance's IOPS limit 1.0 % of the time."
        );
        assert!(
            lines[1].ends_with("(0.2 % apart): the same period."),
            "{lines:?}"
        );
        let far = beside(&p, "nvme1n1", 600.0, 300_000.0);
        assert!(far[1].contains("not of the recording's period"), "{far:?}");
    }

    #[test]
    fn a_polled_ebsnvme_session_sums_its_differences() {
        let p = parse(include_str!(
            "../../tests/fixtures/aws/ebsnvme-stats-i1.txt"
        ))
        .unwrap();
        assert_eq!(p.tool, "ebsnvme stats");
        assert_eq!((p.blocks, p.secs), (3, Some(2.0)));
        assert_eq!(p.delta.read_ops, 6000);
        assert_eq!(p.delta.exceeded_us, [1_300_000, 0, 0, 0]);
        let lines = beside(&p, "nvme1n1", 2.0, 6000.0);
        assert!(
            lines[0].contains("volume's IOPS cap 65.0 % of the time"),
            "{lines:?}"
        );
    }

    #[test]
    fn bad_files_say_why() {
        let one = "{\"total_read_ops\":1,\"total_write_ops\":0,\"total_read_bytes\":0,\
            \"total_write_bytes\":0,\"ebs_volume_performance_exceeded_iops\":0,\
            \"ebs_volume_performance_exceeded_tp\":0,\"ec2_instance_ebs_performance_exceeded_iops\":0,\
            \"ec2_instance_ebs_performance_exceeded_tp\":0,\"volume_queue_length\":0}";
        assert!(parse(one).unwrap_err().contains("1 block of counters"));
        let back = format!("{}\n{}", one.replace(":1,", ":5,"), one);
        assert!(parse(&back).unwrap_err().contains("went backwards"));
        assert!(parse("{\"x\": 1}{\"x\": 2}")
            .unwrap_err()
            .contains("expected the keys"));
        assert!(parse("{").is_err());
    }
}
