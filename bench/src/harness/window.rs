//! The window bound checked from grant instants: the most grants any window of a given
//! length held (`bench admission --processes`, `bench takeover`).

use std::time::Duration;

/// Most grants inside any half-open window `[t, t + length)`; `sorted` ascending.
pub fn max_in_window(sorted: &[u64], length: Duration) -> u64 {
    let len = length.as_micros() as u64;
    let mut best = 0;
    let mut j = 0;
    for i in 0..sorted.len() {
        j = j.max(i);
        while j < sorted.len() && sorted[j] < sorted[i] + len {
            j += 1;
        }
        best = best.max((j - i) as u64);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_counts_are_half_open() {
        let s = Duration::from_secs(1);
        assert_eq!(max_in_window(&[], s), 0);
        assert_eq!(max_in_window(&[0, 1_000_000, 2_000_000], s), 1);
        assert_eq!(max_in_window(&[0, 999_999, 1_000_000], s), 2);
        assert_eq!(max_in_window(&[5, 5, 5, 10], s), 4);
    }
}
