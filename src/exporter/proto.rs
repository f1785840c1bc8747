//! The protobuf exposition (io.prometheus.client's metrics.proto, length-delimited
//! MetricFamily messages), served when the scraper asks for it in its Accept header: every
//! family of the text format, and the request-duration histogram as a native (sparse,
//! exponential) histogram with its classic buckets in the same message. The message types are
//! written here as prost derive structs (tags and types as in metrics.proto), so no protoc is
//! needed at build time. Pure: a [`Scrape`](super::metrics::Scrape) in, bytes out.
//! Must not import: cli/, config/, cmd/, ui/, report/, load/, fsync/, import/.
//!
//! **Native buckets.** The block-latency source counts in buckets of 128 ns below 1.024 µs and,
//! above, 8 equal sub-buckets per power of two of nanoseconds. Native histograms are served at
//! schema 0: one bucket per power of two, bucket i holding (2^(i-1), 2^i] seconds. The source's
//! powers of two are of nanoseconds, and 1 ns is not a power of two of a second, so its octaves
//! do not fall on schema 0's bounds: each of its sub-buckets (at most 1/8 of its lower bound
//! wide) is counted whole in the native bucket that holds its upper edge. A request is thus
//! never put in a native bucket below its latency, and only when its latency lies within one
//! sub-bucket's width (12.5 %; 128 ns below 1.024 µs) of a native bound is it put in the
//! bucket above that bound. Count and sum are exact; the classic buckets, at the source's own
//! powers of two, are exact too.

use super::metrics::{Scrape, Sink};
use crate::sys::bpf::RawHist;
use prost::Message;

/// The Content-Type of the delimited protobuf exposition, as Prometheus asks for it.
pub const CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// The native histograms' schema (one bucket per power of two).
pub const SCHEMA: i32 = 0;

#[derive(Clone, PartialEq, Message)]
pub struct LabelPair {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum MetricType {
    Counter = 0,
    Gauge = 1,
    Summary = 2,
    Untyped = 3,
    Histogram = 4,
    GaugeHistogram = 5,
}

#[derive(Clone, PartialEq, Message)]
pub struct Gauge {
    #[prost(double, tag = "1")]
    pub value: f64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Counter {
    #[prost(double, tag = "1")]
    pub value: f64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Bucket {
    #[prost(uint64, tag = "1")]
    pub cumulative_count: u64,
    #[prost(double, tag = "2")]
    pub upper_bound: f64,
}

#[derive(Clone, PartialEq, Message)]
pub struct BucketSpan {
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

#[derive(Clone, PartialEq, Message)]
pub struct Histogram {
    #[prost(uint64, tag = "1")]
    pub sample_count: u64,
    #[prost(double, tag = "2")]
    pub sample_sum: f64,
    /// Classic buckets (the +Inf one is implied by sample_count).
    #[prost(message, repeated, tag = "3")]
    pub bucket: Vec<Bucket>,
    #[prost(sint32, tag = "5")]
    pub schema: i32,
    #[prost(double, tag = "6")]
    pub zero_threshold: f64,
    #[prost(uint64, tag = "7")]
    pub zero_count: u64,
    #[prost(message, repeated, tag = "12")]
    pub positive_span: Vec<BucketSpan>,
    /// Each bucket's count as the difference from the previous bucket's (the first: from 0).
    #[prost(sint64, repeated, tag = "13")]
    pub positive_delta: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Metric {
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    #[prost(message, optional, tag = "2")]
    pub gauge: Option<Gauge>,
    #[prost(message, optional, tag = "3")]
    pub counter: Option<Counter>,
    #[prost(message, optional, tag = "7")]
    pub histogram: Option<Histogram>,
}

#[derive(Clone, PartialEq, Message)]
pub struct MetricFamily {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub help: String,
    #[prost(enumeration = "MetricType", tag = "3")]
    pub r#type: i32,
    #[prost(message, repeated, tag = "4")]
    pub metric: Vec<Metric>,
}

/// The native schema-0 buckets of a source histogram: (first index, counts of consecutive
/// indexes from it), empty when nothing was counted.
pub fn native_buckets(h: &RawHist) -> (i32, Vec<u64>) {
    let mut by_index: Vec<(i32, u64)> = Vec::new();
    for (i, &n) in h.buckets.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let upper_s = crate::monitor::blklat::bucket_bounds_ns(i).1 as f64 / 1e9;
        // Schema 0: bucket k holds (2^(k-1), 2^k]; no upper edge is a power of two of a second.
        let k = upper_s.log2().ceil() as i32;
        match by_index.last_mut() {
            Some((last, c)) if *last == k => *c += n,
            _ => by_index.push((k, n)),
        }
    }
    let Some(&(first, _)) = by_index.first() else {
        return (0, vec![]);
    };
    let last = by_index.last().map_or(first, |l| l.0);
    let mut counts = vec![0u64; (last - first + 1) as usize];
    for (k, n) in by_index {
        counts[(k - first) as usize] += n;
    }
    (first, counts)
}

fn histogram(h: &RawHist) -> Histogram {
    let count: u64 = h.buckets.iter().sum();
    let (first, counts) = native_buckets(h);
    let mut prev = 0i64;
    let positive_delta = counts
        .iter()
        .map(|&c| {
            let d = c as i64 - prev;
            prev = c as i64;
            d
        })
        .collect();
    Histogram {
        sample_count: count,
        sample_sum: h.sum_ns as f64 / 1e9,
        bucket: crate::monitor::blklat::power_of_two_buckets(h)
            .into_iter()
            .map(|(le, n)| Bucket {
                cumulative_count: n,
                upper_bound: le,
            })
            .collect(),
        schema: SCHEMA,
        zero_threshold: 0.0,
        zero_count: 0,
        positive_span: if counts.is_empty() {
            vec![]
        } else {
            vec![BucketSpan {
                offset: first,
                length: counts.len() as u32,
            }]
        },
        positive_delta,
    }
}

/// Collects the families of a scrape as messages.
#[derive(Default)]
struct Proto(Vec<MetricFamily>);

fn labels(l: &[(&str, &str)]) -> Vec<LabelPair> {
    l.iter()
        .map(|(k, v)| LabelPair {
            name: (*k).to_string(),
            value: (*v).to_string(),
        })
        .collect()
}

impl Sink for Proto {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let t = match kind {
            "counter" => MetricType::Counter,
            "gauge" => MetricType::Gauge,
            "histogram" => MetricType::Histogram,
            _ => MetricType::Untyped,
        };
        self.0.push(MetricFamily {
            name: name.to_string(),
            help: help.to_string(),
            r#type: t as i32,
            metric: vec![],
        });
    }

    fn sample(&mut self, name: &str, l: &[(&str, &str)], value: f64) {
        let Some(f) = self.0.last_mut() else { return };
        debug_assert_eq!(f.name, name);
        let mut m = Metric {
            label: labels(l),
            ..Metric::default()
        };
        if f.r#type == MetricType::Counter as i32 {
            m.counter = Some(Counter { value });
        } else {
            m.gauge = Some(Gauge { value });
        }
        f.metric.push(m);
    }

    fn histogram(&mut self, name: &str, l: &[(&str, &str)], h: &RawHist) {
        let Some(f) = self.0.last_mut() else { return };
        debug_assert_eq!(f.name, name);
        f.metric.push(Metric {
            label: labels(l),
            histogram: Some(histogram(h)),
            ..Metric::default()
        });
    }
}

/// The delimited protobuf exposition of one scrape.
pub fn render(s: &Scrape) -> Vec<u8> {
    let mut p = Proto::default();
    super::metrics::render_into(&mut p, s);
    let mut out = Vec::with_capacity(4096);
    for f in p.0.into_iter().filter(|f| !f.metric.is_empty()) {
        f.encode_length_delimited(&mut out)
            .expect("a Vec grows as needed");
    }
    out
}

/// Whether an Accept header asks for the delimited protobuf exposition before (by q) the
/// text format.
pub fn wants_protobuf(accept: &str) -> bool {
    let mut best_proto = None::<f64>;
    let mut best_other = None::<f64>;
    for part in accept.split(',') {
        let mut it = part.split(';').map(str::trim);
        let media = it.next().unwrap_or("").to_ascii_lowercase();
        let mut q = 1.0;
        let (mut proto_ok, mut delimited) = (false, false);
        for p in it {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            match (k.trim().to_ascii_lowercase().as_str(), v.trim()) {
                ("q", v) => q = v.parse().unwrap_or(0.0),
                ("proto", "io.prometheus.client.MetricFamily") => proto_ok = true,
                ("encoding", "delimited") => delimited = true,
                _ => {}
            }
        }
        let slot = if media == "application/vnd.google.protobuf" && proto_ok && delimited {
            &mut best_proto
        } else if media.starts_with("text/plain") || media == "*/*" {
            &mut best_other
        } else {
            continue;
        };
        *slot = Some(slot.map_or(q, |b: f64| b.max(q)));
    }
    match (best_proto, best_other) {
        (Some(p), Some(o)) => p > 0.0 && p >= o,
        (Some(p), None) => p > 0.0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::blklat::bucket_of;
    use crate::sys::bpf::NBUCKETS;

    fn hist(latencies_ns: &[u64]) -> RawHist {
        let mut h = RawHist {
            buckets: vec![0; NBUCKETS],
            sum_ns: 0,
        };
        for &ns in latencies_ns {
            h.buckets[bucket_of(ns)] += 1;
            h.sum_ns += ns;
        }
        h
    }

    #[test]
    fn native_buckets_hold_each_request_at_or_above_its_latency() {
        // 100 us (2^-14 = 61 us < 100 us <= 2^-13 = 122 us: index -13), 1 ms (index -9),
        // 1.5 ms (index -9), 3 ms (index -8).
        let lat = [100_000, 1_000_000, 1_500_000, 3_000_000];
        let (first, counts) = native_buckets(&hist(&lat));
        assert_eq!(first, -13);
        assert_eq!(counts, vec![1, 0, 0, 0, 2, 1]);
        // Every request's native upper bound is at or above it, and within 12.5 % of the
        // bound its exact latency would have.
        for ns in [200u64, 5_000, 999_999, 1_048_576, 40_000_000_000] {
            let (k, _) = native_buckets(&hist(&[ns]));
            let s = ns as f64 / 1e9;
            let exact = s.log2().ceil() as i32;
            // Below 1.024 us the source's buckets are 128 ns wide instead.
            let width_s = if ns < 1024 { 128e-9 } else { s * 0.125 };
            assert!(
                k == exact || (k == exact + 1 && s + width_s > 2f64.powi(exact)),
                "{ns}: {k}"
            );
        }
        assert_eq!(native_buckets(&hist(&[])), (0, vec![]));
    }

    #[test]
    fn the_histogram_message_has_spans_deltas_and_classic_buckets() {
        let h = histogram(&hist(&[100_000, 1_000_000, 1_500_000, 3_000_000]));
        assert_eq!(h.sample_count, 4);
        assert!((h.sample_sum - 0.0056).abs() < 1e-12);
        assert_eq!(h.schema, 0);
        assert_eq!(
            h.positive_span,
            vec![BucketSpan {
                offset: -13,
                length: 6
            }]
        );
        assert_eq!(h.positive_delta, vec![1, -1, 0, 0, 2, -1]);
        // The classic buckets are the text format's.
        let le_2ms = h
            .bucket
            .iter()
            .find(|b| (b.upper_bound - 0.002097152).abs() < 1e-12)
            .unwrap();
        assert_eq!(le_2ms.cumulative_count, 3);
    }

    #[test]
    fn negotiation_follows_the_accept_header() {
        // What Prometheus sends with native histograms on (2.42 ... 3.x).
        assert!(wants_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"));
        assert!(!wants_protobuf("text/plain;version=0.0.4;q=1,*/*;q=0.1"));
        assert!(!wants_protobuf(""));
        assert!(!wants_protobuf("*/*"));
        // The text encoding of protobuf is not served.
        assert!(!wants_protobuf(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text"
        ));
        assert!(!wants_protobuf("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.1,text/plain;q=0.5"));
    }

    #[test]
    fn every_family_is_encoded_and_decodes_back() {
        let s = Scrape {
            blk_dropped: Some(3),
            hindsight: None,
            ..Scrape::default()
        };
        let bytes = render(&s);
        let mut buf = &bytes[..];
        let f = MetricFamily::decode_length_delimited(&mut buf).unwrap();
        assert_eq!(f.name, "iosat_block_latency_dropped_completions_total");
        assert_eq!(f.r#type, MetricType::Counter as i32);
        assert_eq!(f.metric[0].counter, Some(Counter { value: 3.0 }));
        assert!(!f.help.is_empty());
    }
}
