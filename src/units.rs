//! Units, one way for every command: sizes (`4k`, `4K`, `4KiB`, `1g`, `512`), durations (`500ms`,
//! `2s`, `1.5`, bare seconds, `100us`, `250ns`, `1m`), human formatting of bytes, and UTC
//! timestamps. Pure; errors are reasons in words, and config/ adds the flag and the value.
//! Imports only: nothing.

/// A size in bytes: a whole or decimal number with an optional binary unit (k, m, g, t;
/// also written kb, kib, K, KiB, ...); the result must be a whole number of bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: u64 = match unit.trim() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(
            "is not a size (use a number with an optional k, m, g or t suffix, e.g. 4k, 1g, 512)"
                .into(),
        ),
    };
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') {
        return Err("is not a size (use e.g. 4k, 1m, 512)".into());
    }
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mult).ok_or_else(|| "is too large".into());
    }
    let v: f64 = num
        .parse()
        .map_err(|_| "is not a size (use e.g. 4k, 1m, 512)".to_string())?;
    let bytes = v * mult as f64;
    if bytes >= u64::MAX as f64 {
        return Err("is too large".into());
    }
    if bytes.fract() != 0.0 {
        return Err("is not a whole number of bytes".into());
    }
    Ok(bytes as u64)
}

/// A duration in nanoseconds: a number with an optional unit (`ns`, `us`/`µs`, `ms`, `s`,
/// `m`/`min`, `h`); a bare number is seconds, as iostat's interval and fio's `--runtime` are.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err("is not a duration (use e.g. 2, 2s, 500ms, 100us)".into()),
    };
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') {
        return Err("is not a duration (use e.g. 2, 2s, 500ms, 100us)".into());
    }
    let v: f64 = num
        .parse()
        .map_err(|_| "is not a duration (use e.g. 2, 2s, 500ms, 100us)".to_string())?;
    let ns = (v * scale).round();
    if !ns.is_finite() || ns >= u64::MAX as f64 {
        return Err("is too long".into());
    }
    Ok(ns as u64)
}

/// Bytes for people: `512 B`, `4.0 KiB`, `1.5 GiB` (binary units, one decimal).
/// `text` padded with spaces to `width` characters, on the left when `right` (right-aligned),
/// else on the right; never cut. By hand rather than `format!("{:>w$}")`, whose width must fit
/// in a u16: a table cell of 65,536 characters (a device name in a fuzzed recording) panicked
/// with "Formatting argument out of range".
pub fn pad(text: &str, width: usize, right: bool) -> String {
    let fill = width.saturating_sub(text.chars().count());
    let mut out = String::with_capacity(text.len() + fill);
    let spaces = " ".repeat(fill);
    if right {
        out.push_str(&spaces);
    }
    out.push_str(text);
    if !right {
        out.push_str(&spaces);
    }
    out
}

/// A time left, as a person says it: "12 s", "3 min", "1 h 05 min" (rounded up to the unit
/// shown, so an estimate does not promise less than it has).
pub fn duration_words(secs: f64) -> String {
    let s = secs.max(0.0).ceil() as u64;
    if s < 90 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", s.div_ceil(60))
    } else {
        let m = s.div_ceil(60);
        format!("{} h {:02} min", m / 60, m % 60)
    }
}

pub fn human_bytes(bytes: u64) -> String {
    const U: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

/// A block or record size as it is configured: exact, in the largest binary unit that divides
/// it (`512 B`, `4 KiB`, `16 KiB`, `1 MiB`).
pub fn block_size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

/// Decimal seconds as the kernel and pt-stalk print them (`350735.47`, `1344561790.012145298`,
/// `7`) → ns, exactly (no float rounding; digits past the ninth decimal are dropped). None
/// for anything but digits with at most one decimal point.
pub fn decimal_seconds_ns(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    if sec.is_empty() || !sec.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ns: u64 = 0;
    for (i, b) in frac.bytes().take(9).enumerate() {
        ns += u64::from(b - b'0') * 10u64.pow(8 - i as u32);
    }
    sec.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(ns)
}

/// Wall-clock nanoseconds since the epoch → `2026-11-22T13:35:45.123Z`.
pub fn iso_utc(wall_ns: i64) -> String {
    let secs = wall_ns.div_euclid(1_000_000_000);
    let ms = wall_ns.rem_euclid(1_000_000_000) / 1_000_000;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    format!(
        "{}T{:02}:{:02}:{:02}.{ms:03}Z",
        iso_utc_days(days),
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// The last second [`iso_utc`] writes as a date (9999-12-31T23:59:59Z): beyond it, or before
/// the epoch, a timestamp read from a file is not a date a run can have.
pub const LAST_DATE_UNIX_S: u64 = 253_402_300_799;

/// A `started_unix_s` read from a file as a date, or, when no run can have started then, the
/// number said plainly ("not a date: 1e19 s since the epoch"), never a wrapped year or an
/// overflow.
pub fn utc_of_unix_s(unix_s: u64) -> String {
    if unix_s > LAST_DATE_UNIX_S {
        return format!("not a date: {unix_s} s since the epoch");
    }
    // Within i64 nanoseconds up to 2262; later dates are written to the second.
    match (unix_s as i64).checked_mul(1_000_000_000) {
        Some(ns) => iso_utc(ns),
        None => {
            let d = iso_utc((unix_s % 86_400) as i64 * 1_000_000_000);
            let days = (unix_s / 86_400) as i64;
            // The date of `days` after the epoch, through the day count alone.
            let date = iso_utc_days(days);
            format!("{date}{}", &d[10..])
        }
    }
}

/// `YYYY-MM-DD` of a day count since 1970-01-01: the proleptic Gregorian date (Howard
/// Hinnant's civil_from_days), the one date arithmetic of [`iso_utc`] and [`utc_of_unix_s`].
fn iso_utc_days(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A string read from a file or a device (a profile's host, a model name, a result's
/// envelope) as it may reach a terminal: every control character (C0, DEL, C1) written as
/// `\xNN` or `\u{NN}`, so an escape sequence planted in a file cannot drive the terminal.
/// Borrowed when there is nothing to escape (the usual case).
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if (c as u32) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `2026-11-22T13:35:45.123Z` (what [`iso_utc`] writes; 0–9 decimals, `Z` only) → wall-clock
/// nanoseconds since the epoch; None for anything else.
pub fn parse_iso_utc(s: &str) -> Option<i64> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (h, mi, sec) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let frac_ns = if frac.is_empty() {
        0
    } else {
        decimal_seconds_ns(&format!("0.{frac}"))? as i64
    };
    // Proleptic Gregorian date → days since 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = y - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + mi * 60 + sec) * 1_000_000_000 + frac_ns)
}

/// A time in ns as milliseconds with `decimals` places and the unit ("8.123 ms"): the one
/// fixed-precision millisecond format (fmt_latency_ns in analysis/text.rs picks its own).
pub fn ms(ns: f64, decimals: usize) -> String {
    format!("{} ms", ms_number(ns, decimals))
}

/// [`ms`] without the unit, for a table cell whose header names it.
pub fn ms_number(ns: f64, decimals: usize) -> String {
    format!("{:.decimals$}", ns / 1e6)
}

/// Nanoseconds as seconds: the float nearest the decimal `ns` prints as, moved nine places
/// (46326.1827 ns is 0.0000463261827 s), where `ns / 1e9` rounds that decimal's float a
/// second time and prints float noise (0.000046326182699999996: the exporter's baseline
/// gauges, stop 87). Exact for figures of up to nine decimal places whose digits fit in 2^53
/// (every learned figure: nine significant digits); any other as `ns / 1e9`.
pub fn ns_to_s(ns: f64) -> f64 {
    // 10^0 to 10^22: each exact in a float (5^22 < 2^53).
    const P: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    if ns.is_finite() {
        for k in 0..=9 {
            // The decimal m / 10^k is the figure when its float is the figure's (m < 2^53:
            // an integer the float holds exactly); then m / 10^(k + 9), one correctly
            // rounded division of two exact values, is the float nearest that decimal moved.
            let m = (ns * P[k]).round();
            if m.abs() >= 9_007_199_254_740_992.0 {
                break;
            }
            if m / P[k] == ns {
                return m / P[k + 9];
            }
        }
    }
    ns / 1e9
}

/// A latency in microseconds with sensible precision for a table cell; "-" when unknown.
pub fn us_cell(ns: Option<f64>) -> String {
    let Some(v) = ns.filter(|v| v.is_finite()).map(|ns| ns / 1e3) else {
        return "-".into();
    };
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 1000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A nanosecond figure moved nine places prints as its own digits (the exporter's
    /// seconds): 46326.1827 ns as 0.0000463261827, where `/ 1e9` gave 0.000046326182699999996.
    #[test]
    fn nanoseconds_as_seconds_print_as_their_digits() {
        assert_eq!(46_326.182_7f64 / 1e9, 0.000_046_326_182_699_999_996);
        assert_eq!(ns_to_s(46_326.182_7).to_string(), "0.0000463261827");
        assert_eq!(ns_to_s(2_466_000.0).to_string(), "0.002466");
        assert_eq!(ns_to_s(0.0), 0.0);
        assert_eq!(ns_to_s(-1_500.0).to_string(), "-0.0000015");
        assert!(ns_to_s(f64::NAN).is_nan());
        // Figures of nine significant digits over the range of a device's latencies: each
        // prints as its decimal, moved (a fixed xorshift).
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = 100_000_000 + x % 900_000_000;
            let places = (x >> 40) % 10;
            let text = format!("{digits}e-{places}");
            let ns: f64 = text.parse().unwrap();
            let want: f64 = format!("{digits}e-{}", places + 9).parse().unwrap();
            assert_eq!(ns_to_s(ns), want, "{text}");
        }
        // Beyond nine places, or beyond 2^53: as / 1e9.
        assert_eq!(ns_to_s(0.123_456_789_012_345), 0.123_456_789_012_345 / 1e9);
        assert_eq!(ns_to_s(1e300), 1e300 / 1e9);
    }

    #[test]
    fn duration_words_round_up_to_the_unit_shown() {
        assert_eq!(duration_words(0.2), "1 s");
        assert_eq!(duration_words(89.0), "89 s");
        assert_eq!(duration_words(90.0), "2 min");
        assert_eq!(duration_words(3599.0), "60 min");
        assert_eq!(duration_words(3600.0), "1 h 00 min");
        assert_eq!(duration_words(3901.0), "1 h 06 min");
        assert_eq!(duration_words(-5.0), "0 s");
    }

    #[test]
    fn pad_aligns_and_takes_any_width() {
        assert_eq!(pad("ab", 4, true), "  ab");
        assert_eq!(pad("ab", 4, false), "ab  ");
        assert_eq!(pad("abcdef", 4, false), "abcdef");
        assert_eq!(pad("é", 2, true), " é");
        let long = "x".repeat(70_000);
        assert_eq!(pad(&long, 70_001, true).len(), 70_001);
    }

    #[test]
    fn iso_dates_read_back() {
        for ns in [
            0,
            1_700_000_000_123_000_000,
            951_782_400_000_000_000,
            -86_400_000_000_000,
        ] {
            assert_eq!(parse_iso_utc(&iso_utc(ns)), Some(ns), "{}", iso_utc(ns));
        }
        assert_eq!(
            parse_iso_utc("2026-11-22T07:50:58Z"),
            parse_iso_utc("2026-11-22T07:50:58.000Z")
        );
        for bad in [
            "",
            "11/22/26 03:53:25",
            "2026-11-22T07:50:58",
            "2026-13-01T00:00:00Z",
            "2026-11-22T07:50:58.x1Z",
        ] {
            assert_eq!(parse_iso_utc(bad), None, "{bad}");
        }
    }

    #[test]
    fn sizes_take_every_common_spelling() {
        for (t, want) in [
            ("512", 512),
            ("4k", 4096),
            ("4K", 4096),
            ("4KiB", 4096),
            ("4kb", 4096),
            ("1g", 1 << 30),
            ("1G", 1 << 30),
            ("1.5m", 3 << 19),
            ("2t", 2 << 40),
            (" 64KiB ", 65536),
        ] {
            assert_eq!(parse_size(t), Ok(want), "{t}");
        }
        for bad in ["", "k", "4x", "-1", "1.k", "0.3", "99999999999t", ".5k"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_take_units_and_bare_seconds() {
        for (t, want) in [
            ("2", 2_000_000_000),
            ("0.5", 500_000_000),
            ("2s", 2_000_000_000),
            ("500ms", 500_000_000),
            ("500MS", 500_000_000),
            ("100us", 100_000),
            ("100µs", 100_000),
            ("250ns", 250),
            ("1m", 60_000_000_000),
            ("1min", 60_000_000_000),
            ("1h", 3_600_000_000_000),
            ("1.5ms", 1_500_000),
        ] {
            assert_eq!(parse_duration_ns(t), Ok(want), "{t}");
        }
        for bad in ["", "s", "2x", "-1", "1.", ".5s", "1e3", "inf"] {
            assert!(parse_duration_ns(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn human_formats() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(1 << 30), "1.0 GiB");
        assert_eq!(block_size(512), "512 B");
        assert_eq!(block_size(16384), "16 KiB");
        assert_eq!(block_size(1 << 20), "1 MiB");
        assert_eq!(block_size(1536), "1536 B");
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            iso_utc(1_795_095_345_123_000_000),
            "2026-11-19T13:35:45.123Z"
        );
    }

    /// Issue 39 case 10: escape sequences from a file never reach the terminal raw, and an
    /// absurd timestamp is said as a number, never a wrapped year or an overflow.
    #[test]
    fn case10_control_characters_are_escaped_and_absurd_dates_said_plainly() {
        assert!(matches!(printable("db-7 Ä"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(printable("a\x1b[2Jb\n"), "a\\x1b[2Jb\\x0a");
        assert_eq!(printable("x\u{9b}31m\u{7f}"), "x\\u{9b}31m\\x7f");
        assert_eq!(utc_of_unix_s(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc_of_unix_s(1_795_095_345), "2026-11-19T13:35:45.000Z");
        // Beyond i64 nanoseconds (2262) but a date.
        assert_eq!(utc_of_unix_s(LAST_DATE_UNIX_S), "9999-12-31T23:59:59.000Z");
        assert_eq!(
            utc_of_unix_s(18_446_744_073_709_551_615),
            "not a date: 18446744073709551615 s since the epoch"
        );
        assert!(utc_of_unix_s(10_000_000_000_000_000_000).starts_with("not a date"));
    }
}
