//! [`Shared`]: a value that every interval's judgement of a device shares until learning
//! estimates again (a baseline estimate, its flag), with its JSON written once.
//! Imports only: nothing.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::{Arc, OnceLock};

/// `T` behind a reference count, as `Arc<T>` (it derefs to `T`; it compares, prints and
/// serialises as `T` does), with `T`'s JSON kept beside it once written: `stat --json`
/// writes the same estimate in every interval of every device until the next estimate, and
/// serde writing its keys and floats each time was a tenth of learning's cost there
/// (issue 37's cost).
pub struct Shared<T>(Arc<Inner<T>>);

struct Inner<T> {
    value: T,
    json: OnceLock<Box<str>>,
}

impl<T> Shared<T> {
    pub fn new(value: T) -> Shared<T> {
        Shared(Arc::new(Inner {
            value,
            json: OnceLock::new(),
        }))
    }

    /// The same value (not only an equal one): a copy of it has nothing to do.
    pub fn ptr_eq(a: &Shared<T>, b: &Shared<T>) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

/// A value whose JSON a [`Shared`] keeps: `serde_json::to_string`'s, by serde unless the
/// type writes the same bytes itself (a value made anew often: a pending change, whose
/// evidence counts its intervals).
pub trait Json: Serialize {
    fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a shared value serialises")
    }
}

impl<T> Shared<T> {
    /// Where the value is, and its size ([`crate::analysis::learned::Learned::json_heap`]).
    pub fn at(&self) -> (*const u8, usize) {
        (Arc::as_ptr(&self.0).cast(), std::mem::size_of::<Inner<T>>())
    }

    /// Its JSON's bytes, when written ([`crate::analysis::learned::Learned::json_heap`]).
    pub fn json_written(&self) -> Option<&str> {
        self.0.json.get().map(|j| &**j)
    }
}

impl<T: Json> Shared<T> {
    /// The value as `serde_json::to_string` writes it, written the first time it is asked.
    pub fn json(&self) -> &str {
        self.0
            .json
            .get_or_init(|| self.0.value.to_json().into_boxed_str())
    }
}

/// Whether serde_json escapes any byte of `s` (a control character, `"` or `\`): sixteen
/// bytes looked at together, which the compiler does in one vector compare each.
fn needs_escape(s: &[u8]) -> bool {
    let escaped = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    let mut chunks = s.chunks_exact(16);
    for c in &mut chunks {
        if c.iter().fold(false, |any, &b| any | escaped(b)) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| escaped(b))
}

/// `s` as serde_json writes a string (quoted; `"`, `\` and control characters escaped,
/// everything else as it is), appended to `out`: copied whole when nothing in it needs an
/// escape (iosat's own words), where serde looks each byte up in its escape table.
pub fn json_str(out: &mut Vec<u8>, s: &str) {
    if needs_escape(s.as_bytes()) {
        serde_json::to_writer(&mut *out, s).expect("a string serialises");
        return;
    }
    out.reserve(s.len() + 2);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Shared<T> {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0.value
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Shared<T>) -> bool {
        Shared::ptr_eq(self, other) || self.0.value == other.0.value
    }
}

impl<T: Serialize> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.value.serialize(s)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Shared<T>, D::Error> {
        T::deserialize(d).map(Shared::new)
    }
}

/// Floats one writer put in a JSON buffer (their bits, where their bytes are), for a writer
/// after it in the same buffer to copy rather than format again: a device's `learned` object
/// repeats the ratio and headroom of its judgement, written just before it (issue 37's
/// cost: a float formatted is ~180 instructions, a copy a tenth of it).
#[derive(Debug, Default, Clone, Copy)]
pub struct Written {
    floats: [(u64, usize, usize); 2],
    n: usize,
}

impl Written {
    /// `v` was written (serde_json's bytes for it) at `at` of the buffer.
    pub fn note(&mut self, v: f64, at: std::ops::Range<usize>) {
        if self.n < self.floats.len() {
            self.floats[self.n] = (v.to_bits(), at.start, at.end);
            self.n += 1;
        }
    }

    /// `v` as serde_json writes it, appended to `out`: copied from where it was written
    /// with the same bits (the same bytes: serde's are a function of the bits).
    pub fn write(&self, out: &mut Vec<u8>, v: f64) {
        let bits = v.to_bits();
        match self.floats[..self.n].iter().find(|f| f.0 == bits) {
            Some(&(_, start, end)) if end <= out.len() => out.extend_from_within(start..end),
            _ => serde_json::to_writer(&mut *out, &v).expect("a float serialises"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct E {
        from: f64,
        interval_ns: Option<[f64; 2]>,
    }

    impl Json for E {}

    /// A string written by hand is serde's, with an escaped byte at each place around the
    /// sixteen-byte steps, and without one.
    #[test]
    fn a_string_written_by_hand_is_serdes() {
        for len in 0..40 {
            let plain: String = (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            let mut cases = vec![plain.clone(), format!("{plain}µ×")];
            for at in 0..len {
                for c in ['"', '\\', '\n', '\u{1f}', '\u{7f}', ' '] {
                    let mut s = plain.clone();
                    s.replace_range(at..at + 1, &c.to_string());
                    cases.push(s);
                }
            }
            for s in cases {
                let mut out = b"x".to_vec();
                json_str(&mut out, &s);
                let want = format!("x{}", serde_json::to_string(&s).unwrap());
                assert_eq!(String::from_utf8(out).unwrap(), want, "{s:?}");
            }
        }
    }

    #[test]
    fn the_kept_json_is_serdes_and_the_value_compares_prints_and_round_trips_as_itself() {
        let e = || E {
            from: 1.0000000000000135,
            interval_ns: Some([999999.9987872975, 1e6]),
        };
        let s = Shared::new(e());
        assert_eq!(s.json(), serde_json::to_string(&e()).unwrap());
        // Asked again: the same bytes, kept.
        assert!(std::ptr::eq(s.json(), s.json()));
        assert_eq!(serde_json::to_string(&s).unwrap(), s.json());
        assert_eq!(format!("{s:?}"), format!("{:?}", e()));
        let back: Shared<E> = serde_json::from_str(s.json()).unwrap();
        assert_eq!(back, s);
        assert!(!Shared::ptr_eq(&back, &s) && Shared::ptr_eq(&s.clone(), &s));
        let other = Shared::new(E {
            from: 2.0,
            interval_ns: None,
        });
        assert_ne!(other, s);
    }
}
