//! How analysis figures are written for people: latency, IOPS, ratios. Pure string formatting.
//! Imports only: nothing.

/// A latency in nanoseconds, in the unit storage people read it in: µs below 10 µs, ms with
/// three significant digits up to 10 s, else seconds.
pub fn fmt_latency_ns(ns: f64) -> String {
    if !ns.is_finite() || ns <= 0.0 {
        return "0 ms".to_string();
    }
    let ms = ns / 1e6;
    if ns < 10_000.0 {
        format!("{:.1} µs", ns / 1e3)
    } else if ms < 1.0 {
        format!("{ms:.3} ms")
    } else if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 100.0 {
        format!("{ms:.1} ms")
    } else if ms < 10_000.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.1} s", ms / 1e3)
    }
}

/// IOPS: whole numbers from 100 up, one decimal below (128, 7113, 12.5).
pub fn fmt_iops(iops: f64) -> String {
    if iops >= 100.0 || iops == 0.0 {
        format!("{iops:.0}")
    } else if iops >= 10.0 {
        format!("{iops:.1}")
    } else {
        format!("{iops:.2}")
    }
}

/// A whole number with thousands separated, as the issue and the docs write them ("4,812").
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut s = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            s.push(',');
        }
        s.push(c);
    }
    s
}

/// A count in words: [`grouped`], singular for one ("1 interval", "3,000 requests").
pub fn counted(n: u64, what: &str) -> String {
    let plural = if n == 1 { "" } else { "s" };
    format!("{} {what}{plural}", grouped(n))
}

/// A saturation ratio as seed 000 prints it: two decimals below 1.2 (where 1.07x against
/// 1.1x matters), one decimal from there (1.5x, 3.6x, 13.9x).
pub fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() {
        return "-".to_string();
    }
    if r < 1.2 {
        format!("{r:.2}x")
    } else {
        format!("{r:.1}x")
    }
}

/// A fitted coefficient (σ, κ): four decimals, or three significant digits in scientific
/// notation when smaller than 0.001 (κ is often 1e-5).
pub fn fmt_coef(c: f64) -> String {
    if c == 0.0 || c.abs() >= 0.001 {
        format!("{c:.4}")
    } else {
        format!("{c:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_units() {
        assert_eq!(fmt_latency_ns(140_000.0), "0.140 ms");
        assert_eq!(fmt_latency_ns(1_950_000.0), "1.95 ms");
        assert_eq!(fmt_latency_ns(108_720_000.0), "109 ms");
        assert_eq!(fmt_latency_ns(2_516_430_000.0), "2516 ms");
        assert_eq!(fmt_latency_ns(5_000.0), "5.0 µs");
        assert_eq!(fmt_latency_ns(12_300_000_000.0), "12.3 s");
    }

    #[test]
    fn ratios_like_the_seed() {
        assert_eq!(fmt_ratio(0.15 / 0.14), "1.07x");
        assert_eq!(fmt_ratio(0.21 / 0.14), "1.5x");
        assert_eq!(fmt_ratio(0.50 / 0.14), "3.6x");
        assert_eq!(fmt_ratio(1.95 / 0.14), "13.9x");
    }

    #[test]
    fn coefficients() {
        assert_eq!(fmt_coef(0.0367), "0.0367");
        assert_eq!(fmt_coef(0.000059), "5.90e-5");
        assert_eq!(fmt_coef(0.0), "0.0000");
    }

    #[test]
    fn iops_precision() {
        assert_eq!(fmt_iops(7113.16), "7113");
        assert_eq!(fmt_iops(12.34), "12.3");
        assert_eq!(fmt_iops(1.234), "1.23");
    }
}
