//! The advice every notice gives a device without a profile: how to measure one (read-only,
//! or gently, or by import, or by learning) and how to get a write profile (on a spare device
//! only).
//! Imports only: nothing.

/// How to give `dev` (a kernel name, or "DEVICE") a profile, as every notice that points at a
/// sweep says it: the default sweep of a device is read-only (random 4 KiB reads), so it is
/// the right first command; on a busy production disk the gentle mode (a few requests in
/// flight, a cap on the IOPS added), a twin's or the model's profile, or the baseline learned
/// from the traffic. Writes need a spare device ([`how_to_measure_writes`]) and are never
/// suggested for the device itself.
pub fn how_to_measure(dev: &str) -> String {
    format!(
        "Measure it once (read-only): `iosat sweep /dev/{dev} --save-profile`; on a busy \
production disk gently (`--max-concurrency 8 --rate-limit 1000`), or import a twin's profile \
(`iosat profile import FILE --for /dev/{dev}`, `--model` for every disk of its model), or let \
iosat learn the baseline from the traffic."
    )
}

/// How to get a write profile: a write sweep destroys data, so only on a spare device (a twin
/// of the same model), whose profile is then imported for `dev`.
pub fn how_to_measure_writes(dev: &str) -> String {
    format!(
        "A write profile needs a spare device of the same model (a write sweep overwrites it): \
`iosat sweep /dev/SPARE --pattern randwrite --json -o w.json`, then `iosat profile import \
w.json --for /dev/{dev}`."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default sweep of a device is read-only: the advice says so, names the device, and
    /// offers a short sweep and an import, never a write sweep.
    #[test]
    fn the_advice_to_measure_is_read_only_and_names_the_device() {
        let a = how_to_measure("vda");
        assert!(
            a.contains("(read-only): `iosat sweep /dev/vda --save-profile`"),
            "{a}"
        );
        assert!(
            a.contains("`iosat profile import FILE --for /dev/vda`"),
            "{a}"
        );
        assert!(a.contains("--max-concurrency 8 --rate-limit"), "{a}");
        assert!(a.contains("learn"), "{a}");
        assert!(!a.contains("write"), "{a}");
        // Writes: only ever on a spare device.
        let w = how_to_measure_writes("vda");
        assert!(w.contains("/dev/SPARE --pattern randwrite"), "{w}");
        assert!(!w.contains("sweep /dev/vda"), "{w}");
    }
}
