//! How analysis figures are written for people: latency, IOPS, ratios. Pure string formatting.
//! Imports only: nothing.

/// `format!("{v:.decimals$}")`, byte for byte, without Rust's exact float path for the usual
/// figures: core::fmt writes a fixed number of decimals by Grisu's exact mode, which gives up
/// and falls back to Dragon4 (bignum arithmetic) whenever the value's decimal expansion ends
/// within the digits asked for, as every whole number's does: on 1,000 devices a quarter of
/// `stat`'s text went there (issue 37's cost). Here the value's exact binary fraction
/// (m x 2^e) is scaled by 10^decimals and rounded half to even in integer arithmetic, which
/// is what core::fmt computes; up to three decimals and below 2^53, else core::fmt itself.
pub fn fixed(v: f64, decimals: usize) -> String {
    let mut s = String::with_capacity(24);
    fixed_into(&mut s, v, decimals);
    s
}

/// [`fixed`] appended to `s` (a view's cells: no string per figure).
pub fn fixed_into(s: &mut String, v: f64, decimals: usize) {
    const POW10: [u64; 4] = [1, 10, 100, 1000];
    if decimals >= POW10.len() || !v.is_finite() || v.abs() >= 9_007_199_254_740_992.0 {
        use std::fmt::Write;
        let _ = write!(s, "{v:.decimals$}");
        return;
    }
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    // v = m x 2^e exactly (subnormals: no implicit bit).
    let (m, e) = match biased {
        0 => (fraction, -1074),
        b => (fraction | 1 << 52, b - 1075),
    };
    let pow = POW10[decimals];
    let scaled: u128 = if e >= 0 {
        // |v| < 2^53: a whole number, m x 2^e below 2^53.
        (u128::from(m) << e) * u128::from(pow)
    } else {
        let k = e.unsigned_abs();
        let n = u128::from(m) * u128::from(pow);
        if k >= 127 {
            // Below 2^-74 x 1000: rounds to 0 (no tie: n < 2^63 < half).
            0
        } else {
            let (q, r, half) = (n >> k, n & ((1u128 << k) - 1), 1u128 << (k - 1));
            q + u128::from(r > half || (r == half && q & 1 == 1))
        }
    };
    // Below 2^53 x 1000 < 2^63: divided as a u64 (a u128 division is a libcall).
    let scaled = scaled as u64;
    let (whole, part) = (scaled / pow, scaled % pow);
    // core::fmt keeps the sign of a negative value that rounds to zero ("-0.00").
    if bits >> 63 == 1 {
        s.push('-');
    }
    s.push_str(itoa::Buffer::new().format(whole));
    if decimals > 0 {
        s.push('.');
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(part);
        for _ in digits.len()..decimals {
            s.push('0');
        }
        s.push_str(digits);
    }
}

/// `v` as serde_json writes a float, where `v` is a figure to the millionth from 0.001 up to
/// 10^6 (a judgement's ratio to its baseline: learn's ratio_figure), by [`json_decimal_into`].
/// Returns false, writing nothing, for any other value (the caller writes it by serde_json):
/// two of a judgement's floats a direction and interval were serde_json's shortest-digits
/// search (~170 instructions each), for figures that are six decimals at most (issue 37's
/// cost).
pub fn json_millionths_into(out: &mut Vec<u8>, v: f64) -> bool {
    if !(0.001..1e6).contains(&v) {
        return false;
    }
    // Below 10^12 and positive: through i64 (one conversion each way, where u64's take
    // several), exact, and the check below decides.
    let n = (v * 1e6 + 0.5) as i64;
    if n as f64 / 1e6 != v {
        return false;
    }
    json_decimal_into::<6>(out, n as u64);
    true
}

/// `v` as serde_json writes a float, where `v` is a whole number from 0 to 10^15 ("300.0"):
/// a judgement's headroom, in whole requests a second ([`super::state::headroom_iops`]).
/// Returns false, writing nothing, for any other value (the caller writes it by serde_json):
/// the headroom of each direction was serde_json's shortest-digits search (~170
/// instructions), for a figure that is an integer (issue 37's cost).
pub fn json_whole_into(out: &mut Vec<u8>, v: f64) -> bool {
    // Positive (not -0.0, which serde writes with its sign), below 10^15 (serde_json writes
    // every whole float there as its digits and ".0"), and whole: the conversion through
    // i64 (an instruction each way) truncates, so a whole number comes back as itself (NaN
    // fails the range).
    if !(v.is_sign_positive() && v < 1e15 && v == v as i64 as f64) {
        return false;
    }
    out.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
    out.extend_from_slice(b".0");
    true
}

/// The decimal `n` / 10^`DECIMALS` (1 to 6 decimals) as serde_json writes the float that is
/// nearest to it, for a caller that knows that float reads back as this decimal and no
/// shorter one (a figure rounded to those decimals, within a range where the floats are far
/// finer than 10^-decimals): its whole part, then the decimals without trailing zeros, one at
/// least ("6.0", "1.023456"), which is the shortest decimal serde_json writes. A learned
/// object's seconds (to the millisecond) and a judgement's ratio (to the millionth) are
/// written so, not by serde_json's shortest-digits search (issue 37's cost).
/// `DECIMALS` a constant: the divisions by its power of ten are multiplications.
#[inline(always)]
pub fn json_decimal_into<const DECIMALS: u32>(out: &mut Vec<u8>, n: u64) {
    const { assert!(DECIMALS >= 1 && DECIMALS <= 6) };
    let (whole, mut frac) = (n / 10u64.pow(DECIMALS), n % 10u64.pow(DECIMALS));
    // The whole part (at most 20 digits) before the point, the decimals after it, in one
    // buffer written once: the whole part by itoa and the decimals by a second copy cost
    // ~200 instructions a row more in `stat --json` (steady devices, 600 samples, 00:18).
    const POINT: usize = 20;
    let mut buf = [0u8; POINT + 7];
    let end = POINT + 1 + DECIMALS as usize;
    // The decimals two at a time from the right, then without trailing zeros.
    let (mut at, mut left) = (end, DECIMALS);
    while left >= 2 {
        at -= 2;
        let p = 2 * (frac % 100) as usize;
        buf[at..at + 2].copy_from_slice(&DIGIT_PAIRS[p..p + 2]);
        frac /= 100;
        left -= 2;
    }
    if left == 1 {
        buf[at - 1] = b'0' + (frac % 10) as u8;
    }
    let mut end = end;
    while end > POINT + 2 && buf[end - 1] == b'0' {
        end -= 1;
    }
    buf[POINT] = b'.';
    let (mut at, mut w) = (POINT, whole);
    loop {
        at -= 1;
        buf[at] = b'0' + (w % 10) as u8;
        w /= 10;
        if w == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[at..end]);
}

/// "00" to "99", two bytes each.
const DIGIT_PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// A latency in nanoseconds, in the unit storage people read it in: µs below 10 µs, ms with
/// three significant digits up to 10 s, else seconds.
pub fn fmt_latency_ns(ns: f64) -> String {
    let mut s = String::with_capacity(16);
    fmt_latency_ns_into(&mut s, ns);
    s
}

/// [`fmt_latency_ns`] appended to `s`.
pub fn fmt_latency_ns_into(s: &mut String, ns: f64) {
    if !ns.is_finite() || ns <= 0.0 {
        s.push_str("0 ms");
        return;
    }
    let ms = ns / 1e6;
    // By fixed_into: core::fmt's exact path (Dragon4 for every whole figure) made the words
    // of a learned curve cost ~20,000 instructions each (issue 37's cost).
    let (v, decimals, unit) = if ns < 10_000.0 {
        (ns / 1e3, 1, " µs")
    } else if ms < 1.0 {
        (ms, 3, " ms")
    } else if ms < 10.0 {
        (ms, 2, " ms")
    } else if ms < 100.0 {
        (ms, 1, " ms")
    } else if ms < 10_000.0 {
        (ms, 0, " ms")
    } else {
        (ms / 1e3, 1, " s")
    };
    fixed_into(s, v, decimals);
    s.push_str(unit);
}

/// IOPS: whole numbers from 100 up, one decimal below (128, 7113, 12.5).
pub fn fmt_iops(iops: f64) -> String {
    let mut s = String::with_capacity(12);
    fmt_iops_into(&mut s, iops);
    s
}

/// [`fmt_iops`] appended to `s`.
pub fn fmt_iops_into(s: &mut String, iops: f64) {
    let decimals = if iops >= 100.0 || iops == 0.0 {
        0
    } else if iops >= 10.0 {
        1
    } else {
        2
    };
    fixed_into(s, iops, decimals);
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
    let mut s = String::with_capacity(8);
    fmt_ratio_into(&mut s, r);
    s
}

/// [`fmt_ratio`] appended to `s`.
pub fn fmt_ratio_into(s: &mut String, r: f64) {
    if !r.is_finite() {
        s.push('-');
        return;
    }
    fixed_into(s, r, if r < 1.2 { 2 } else { 1 });
    s.push('x');
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

    /// json_millionths_into writes what serde_json writes, wherever it writes: every
    /// millionth from 0.001 to 3, then a spread of them up to 10^6, and it declines the rest;
    /// json_decimal_into writes a figure to the millisecond as serde_json does too.
    #[test]
    fn millionths_are_written_as_serde_json_writes_them() {
        let check = |n: u64| {
            let v = n as f64 / 1e6;
            let mut out = Vec::new();
            if json_millionths_into(&mut out, v) {
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    serde_json::to_string(&v).unwrap(),
                    "{n} millionths"
                );
                true
            } else {
                false
            }
        };
        for n in 1_000..=3_000_000 {
            assert!(check(n), "{n} millionths declined");
        }
        let mut n: u64 = 3_000_001;
        while n < 1_000_000_000_000 {
            assert!(check(n), "{n} millionths declined");
            n += n / 997 + 7_919;
        }
        // The learned object's seconds, to the millisecond (learned::write_seconds_ms): every
        // millisecond up to 1,000 s, then a spread of them up to 10^12 s.
        let seconds = |n: u64| {
            let mut out = Vec::new();
            json_decimal_into::<3>(&mut out, n);
            let v = n as f64 / 1e3;
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&v).unwrap(),
                "{n} ms"
            );
        };
        (0..=1_000_000).for_each(seconds);
        let mut n: u64 = 1_000_001;
        while n < 1_000_000_000_000_000 {
            seconds(n);
            n += n / 991 + 104_729;
        }
        // Not figures to the millionth, or out of the range: declined.
        for v in [
            0.1234567,
            1.0 / 3.0,
            1e6,
            0.0009,
            -1.0,
            f64::NAN,
            f64::INFINITY,
        ] {
            assert!(!json_millionths_into(&mut Vec::new(), v), "{v}");
        }
    }

    /// json_whole_into writes what serde_json writes for every whole number up to 2·10^6,
    /// then a spread of them up to 10^15, and declines the rest (fractions, -0.0, 10^15 and
    /// above, where serde_json writes an exponent).
    #[test]
    fn whole_numbers_are_written_as_serde_json_writes_them() {
        let check = |v: f64| {
            let mut out = Vec::new();
            assert!(json_whole_into(&mut out, v), "{v} declined");
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&v).unwrap(),
                "{v}"
            );
        };
        (0..=2_000_000u64).for_each(|n| check(n as f64));
        let mut n: u64 = 2_000_001;
        while n < 1_000_000_000_000_000 {
            check(n as f64);
            n += n / 991 + 104_729;
        }
        check(999_999_999_999_999.0);
        for v in [
            0.5,
            300.0055432561029,
            -0.0,
            -1.0,
            1e15,
            1e16,
            f64::NAN,
            f64::INFINITY,
        ] {
            assert!(!json_whole_into(&mut Vec::new(), v), "{v}");
        }
    }

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

    /// The words' figures by `fixed` are core::fmt's, byte for byte: each unit's and
    /// precision's range, its edges and the values either side of them (as before 2026-12-04,
    /// when they were written by `format!`).
    #[test]
    fn latency_iops_and_ratio_words_are_cores_formatting() {
        let mut values = vec![0.0, -1.0, f64::NAN, f64::INFINITY, 1e300];
        for e in -3..12 {
            let p = 10f64.powi(e);
            for m in [1.0, 1.0049, 1.005, 2.5, 4.99, 5.0, 9.995, 9.9999] {
                let v = p * m;
                values.extend([v, f64::from_bits(v.to_bits() + 1), v - p / 1e4]);
            }
        }
        for v in values {
            let ms = v / 1e6;
            let old_latency = if !v.is_finite() || v <= 0.0 {
                "0 ms".to_string()
            } else if v < 10_000.0 {
                format!("{:.1} µs", v / 1e3)
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
            };
            assert_eq!(fmt_latency_ns(v), old_latency, "{v:e} ns");
            let old_iops = if v >= 100.0 || v == 0.0 {
                format!("{v:.0}")
            } else if v >= 10.0 {
                format!("{v:.1}")
            } else {
                format!("{v:.2}")
            };
            assert_eq!(fmt_iops(v), old_iops, "{v:e} IOPS");
            let r = v / 1e3;
            let old_ratio = if !r.is_finite() {
                "-".to_string()
            } else if r < 1.2 {
                format!("{r:.2}x")
            } else {
                format!("{r:.1}x")
            };
            assert_eq!(fmt_ratio(r), old_ratio, "{r:e} ratio");
        }
    }

    /// `fixed` is core::fmt's `{:.N}` byte for byte: whole numbers, exact ties (x.5, x.25,
    /// x.125, ... where the rounding is half to even), their neighbours one ulp away, the
    /// figures a view prints (rates, awaits, ratios), tiny and subnormal values, negative
    /// ones and -0.0, the edges of 2^53, and values core::fmt is left with.
    #[test]
    fn fixed_is_cores_fixed_formatting_byte_for_byte() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            1.5,
            2.5,
            -2.5,
            0.25,
            0.125,
            0.0625,
            2.675,
            1.005,
            0.045,
            599.5,
            1e-300,
            5e-324,
            -5e-324,
            -0.0004,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9_007_199_254_740_991.0,
            9_007_199_254_740_992.0,
            1e300,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for n in 0..2000u32 {
            let x = f64::from(n);
            values.extend([
                x,
                -x,
                x / 2.0,
                x / 4.0,
                x / 8.0,
                x / 16.0,
                x / 1000.0,
                x / 3.0,
            ]);
        }
        // A xorshift's bits as floats: every exponent and fraction, and figures of a view.
        let mut r = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..50_000 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            values.push(f64::from_bits(r));
            values.push((r % 10_000_000) as f64 / 1000.0);
            values.push((r >> 11) as f64 / (1u64 << 53) as f64 * 1e4);
        }
        for v in values {
            for up in [v, f64::from_bits(v.to_bits().wrapping_add(1))] {
                for d in 0..=4 {
                    assert_eq!(fixed(up, d), format!("{up:.d$}"), "{up:e} to {d}");
                }
            }
        }
    }
}
