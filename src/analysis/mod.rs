//! Findings from measurements: baseline ratio, the 3x-p95 overload rule, the knee (Kleinrock
//! power, USL fit), Little's law checks, verdicts in plain words. Pure: no IO, no sys/ imports.
