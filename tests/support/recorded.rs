//! Metrics recorded by `metrics-util`'s debugging recorder, for the tests
//! that check what the layer counts (`tests/observe/`).
#![allow(dead_code)]

use std::collections::HashMap;
use std::future::Future;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};

/// Metric name and sorted `key=value` labels (comma-joined) → value.
pub type Readings = HashMap<(String, String), DebugValue>;

/// Runs `scenario` on a current-thread runtime with `recorder` installed
/// for this thread only, so that the layer's background tasks record there
/// too; returns what was recorded.
pub fn record<F: Future<Output = ()>>(scenario: F) -> Readings {
    let recorder = DebuggingRecorder::new();
    metrics::with_local_recorder(&recorder, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(scenario);
    });
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let mut labels: Vec<String> = key
                .labels()
                .map(|label| format!("{}={}", label.key(), label.value()))
                .collect();
            labels.sort();
            ((key.name().to_owned(), labels.join(",")), value)
        })
        .collect()
}

/// A counter's value; 0 when it was never touched.
pub fn counter(readings: &Readings, name: &str, labels: &str) -> u64 {
    match readings.get(&(name.to_owned(), labels.to_owned())) {
        Some(DebugValue::Counter(count)) => *count,
        None => 0,
        other => panic!("{name}{{{labels}}} is {other:?}"),
    }
}

/// A gauge's value; `None` when it was never set.
pub fn gauge(readings: &Readings, name: &str, labels: &str) -> Option<f64> {
    match readings.get(&(name.to_owned(), labels.to_owned())) {
        Some(DebugValue::Gauge(value)) => Some(value.into_inner()),
        None => None,
        other => panic!("{name}{{{labels}}} is {other:?}"),
    }
}

/// How many samples a histogram holds.
pub fn samples(readings: &Readings, name: &str, labels: &str) -> usize {
    match readings.get(&(name.to_owned(), labels.to_owned())) {
        Some(DebugValue::Histogram(values)) => values.len(),
        None => 0,
        other => panic!("{name}{{{labels}}} is {other:?}"),
    }
}
