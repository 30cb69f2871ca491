//! The arrival-jitter allowance: why the gate's bucket for a key may hold less than the
//! server's, and how much less.
//!
//! The server (for CloudWatch's datapoint quotas: a bucket of rate `r` and burst `B`)
//! refills by the instant a request *arrives*; the gate charges at the instant it
//! *admits*. If the gate used the server's own `r` and `B`, two pages admitted a full
//! refill apart could arrive a little closer together (scheduling, connection set-up,
//! TLS, a busy runtime) and find the server's bucket a few tokens short: stop 28's bench
//! saw 0-1 datapoint throttles per run with the budget equal to the quota. So a policy
//! may carry `arrivalJitterMs` = `j`, and the gate's bucket then holds
//! `B' = B − r·j` ([`admission_burst`]).
//!
//! # The guarantee
//!
//! Claim: if every request's arrival delay (arrival instant minus admission instant)
//! lies in some `[d, d + j]`, and the gate admits through a bucket of rate `r` and burst
//! `B'`, then a server bucket of rate `r` and burst `B`, starting full and refilled by
//! arrival time, never rejects a request.
//!
//! Proof. A bucket of rate `r` and burst `B` that starts full never rejects exactly when
//! every interval `[x, y]` receives at most `B + r·(y − x)` of cost (the standard arrival
//! curve; the level at `y` is the minimum over `x` of `B + r·(y − x)` less what arrived in
//! `[x, y]`). Take any `[x, y]` of arrival instants and the requests arriving in it. Each
//! was admitted at `t = a − delay` with `delay ∈ [d, d + j]`, so within
//! `[x − d − j, y − d]`, an admission interval of length `y − x + j`. The gate's bucket
//! bounds what it admits in any interval of length `L` by `B' + r·L`, so the requests
//! total at most `B' + r·(y − x + j) = B + r·(y − x)`. ∎
//!
//! This is the argument issue 22's follow-up proposed (`Σ c_i..c_n ≤ B' + r(t_n − t_i) ≤
//! B + r(a_n − a_i)`), stated on intervals rather than on indices so that it also covers
//! requests that arrive in another order than they were admitted (two delays differing
//! by up to `j` can swap neighbours). A penalized (lower) effective rate only admits
//! less, so it keeps the bound; the rolling window is untouched.
//!
//! # A page larger than `B'`
//!
//! A cost above `B` is refused as before (the server can never accept it). A cost `c` in
//! `(B', B]` cannot fit the gate's bucket, and must not wait forever: it is admitted when
//! the bucket is full, and the bucket goes into debt by `c − B'` (the balance goes
//! negative; later grants wait until it is repaid). The bound for every interval that
//! ends with an ordinary grant is unchanged (the debt is paid, not forgiven). An interval
//! that ends with such a page gets `c + r·L` instead, which can exceed the server's bucket
//! by at most `c − B' ≤ r·j`: in that case the guarantee is only that of no allowance.
//! With the defaults it does not arise (a GetMetricData page reserves at most 100,800
//! datapoints; `B'` is 162,000 and 356,400).
//!
//! `B'` is never below 1, the smallest burst a policy may have: a jitter so long that
//! `r·j ≥ B − 1` makes the bucket hold one token and every larger page an oversize one.
//!
//! # The default, 100 ms
//!
//! The two `cloudwatch:GetMetricData:*-datapoints` budgets get 100 ms (every other key 0,
//! so nothing else changes). Admission happens immediately before transport, so the
//! spread of the delay is what one send can add over another: a pooled connection's
//! write versus a new connection's TCP and TLS handshakes (tens of milliseconds inside a
//! region), and the runtime scheduling the two sends. 100 ms covers that with room and
//! costs 10 % of each budget's burst (18,000 and 39,600 datapoints), never its sustained
//! rate. A send delayed by more than the allowance (a stalled connection, a retry inside
//! the SDK, which tollgate disables) falls back to the guarantee without allowance.

/// The capacity of the gate's bucket for a server bucket of `rate` and `burst`, allowing
/// `jitter_ms` of arrival jitter: `max(1, burst − rate·jitter)`, never above `burst`.
pub fn admission_burst(burst: f64, rate: f64, jitter_ms: u32) -> f64 {
    if jitter_ms == 0 {
        return burst;
    }
    let reduced = burst - rate * f64::from(jitter_ms) / 1_000.0;
    reduced.max(1.0).min(burst)
}

/// How a cost relates to a bucket of capacity `admission` for a server burst `burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fit {
    /// It fits the gate's bucket: wait for `cost` tokens.
    Fits,
    /// Above the gate's bucket but within the server's: wait for a full bucket, then
    /// go into debt by the rest.
    Oversize,
    /// Above the server's burst: never.
    TooLarge,
}

/// Where `cost` falls for a bucket of `admission` tokens and a server burst `burst`.
pub fn fit(cost: f64, admission: f64, burst: f64) -> Fit {
    if cost > burst {
        Fit::TooLarge
    } else if cost > admission {
        Fit::Oversize
    } else {
        Fit::Fits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_admission_burst_is_the_burst_less_what_the_jitter_refills() {
        let cases: &[(f64, f64, u32, f64)] = &[
            (180_000.0, 180_000.0, 100, 162_000.0),
            (396_000.0, 396_000.0, 100, 356_400.0),
            (8_000.0, 8_000.0, 100, 7_200.0),
            (8_000.0, 8_000.0, 0, 8_000.0),
            (10.0, 10.0, 0, 10.0),
            // Never below 1...
            (5.0, 10.0, 1_000, 1.0),
            (1.0, 0.5, 60_000, 1.0),
            // ...and 1 stays 1.
            (1.0, 1.0, 100, 1.0),
        ];
        for &(burst, rate, jitter, want) in cases {
            assert_eq!(
                admission_burst(burst, rate, jitter),
                want,
                "burst {burst} rate {rate} jitter {jitter} ms"
            );
        }
    }

    #[test]
    fn a_cost_fits_is_oversize_or_too_large() {
        let cases: &[(f64, Fit)] = &[
            (1.0, Fit::Fits),
            (7_200.0, Fit::Fits),
            (7_201.0, Fit::Oversize),
            (8_000.0, Fit::Oversize),
            (8_001.0, Fit::TooLarge),
        ];
        for &(cost, want) in cases {
            assert_eq!(fit(cost, 7_200.0, 8_000.0), want, "cost {cost}");
        }
    }
}
