//! Percentiles and the result row every benchmark prints.

use std::time::Duration;

use serde::Serialize;

/// One measured subject.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub subject: String,
    pub samples: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub throughput_per_s: Option<f64>,
}

impl Row {
    /// A row from individual latencies and a separately measured throughput.
    pub fn new(subject: &str, mut latencies: Vec<Duration>, throughput_per_s: Option<f64>) -> Row {
        latencies.sort_unstable();
        let pick = |q: usize| {
            let i = (latencies.len() * q / 100).min(latencies.len().saturating_sub(1));
            latencies.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e6)
        };
        Row {
            subject: subject.to_owned(),
            samples: latencies.len(),
            p50_us: pick(50),
            p99_us: pick(99),
            max_us: latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1e6),
            throughput_per_s,
        }
    }
}

/// Print rows as a fixed-width table.
pub fn print_table(rows: &[Row]) {
    println!(
        "{:<44} {:>8} {:>10} {:>10} {:>10} {:>14}",
        "subject", "samples", "p50_us", "p99_us", "max_us", "throughput/s"
    );
    for r in rows {
        println!(
            "{:<44} {:>8} {:>10.2} {:>10.2} {:>10.2} {:>14}",
            r.subject,
            r.samples,
            r.p50_us,
            r.p99_us,
            r.max_us,
            r.throughput_per_s
                .map_or("-".to_owned(), |t| format!("{t:.0}"))
        );
    }
}
