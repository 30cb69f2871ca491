//! Pure admission maths for tollgate.
//!
//! Every AWS call tollgate makes is admitted against a canonical quota key
//! (partition/account/region/service:group). This crate decides admission and nothing
//! else: it performs no I/O, never reads a clock and never sleeps. Time comes in as a
//! [`Timestamp`]; a denial carries the instant at which to ask again. That makes every
//! bound testable with simulated time, and lets the actors, the cross-process coordinator
//! and the replay tool share one implementation.
//!
//! # Layout
//! - [`time`]: `Timestamp` and the `Clock` trait (implemented elsewhere).
//! - [`policy`]: a validated `Policy` {rate, burst, concurrency, retry capacity}.
//! - [`key`]: `QuotaKey`, its canonical string form, service aliases, operation groups.
//! - [`arn`]: the one `Arn` type (parse, display, parts) the engine and simulator read.
//! - [`defaults`]: the one table of default policies, and the fallback.
//! - [`datapoints`]: CloudWatch GetMetricData datapoints: the per-attempt bound and the
//!   `recent`/`older` budget it charges.
//! - [`unfiltered`]: EC2's smaller budgets of unfiltered, unpaginated reads: which
//!   budget a request draws on, from the request as sent.
//! - [`overrides`]: `TOLLGATE_QUOTA_OVERRIDES` merged over the defaults.
//! - [`bucket`], [`window`], [`penalty`], [`retry`], [`reservation`]: the parts of a key.
//! - [`state`]: `QuotaState`, the admission state machine joining the parts, and the
//!   persisted `QuotaRecord`.
//! - [`lease`]: write-ahead admission leases: what a record allows after its snapshot, and
//!   the crash restore that charges it (why a SIGKILLed coordinator never over-admits).
//! - [`unrecorded`]: keys without a record: the provisional first grants (two starts, two
//!   tokens) a coordinator may make before a key's first record is stored, and the charge
//!   its successor restores.
//! - [`breaker`]: the circuit breaker of one scope (service + region + account): closed,
//!   open for 60 s doubling to 600 s, half-open with one probe lease.
//! - [`queue`]: a FIFO of waiters with deadlines and cancellation.
//! - [`overlay`]: a partial policy laid over a base (overrides and schedule entries).
//! - [`fleet`]: fleet admission: token blocks from one shared item per key (DynamoDB).
//! - [`schedule`]: cron + IANA zone schedules on [`WallClock`] instants; scheduled
//!   policies, calendar allowances, and the fire times of scan schedules.
#![forbid(unsafe_code)]
#![warn(missing_debug_implementations)]

pub mod arn;
pub mod arrival_jitter;
pub mod breaker;
pub mod breaker_fleet;
pub mod bucket;
pub mod datapoints;
pub mod defaults;
pub mod fleet;
pub mod key;
pub mod lease;
pub mod overlay;
pub mod overrides;
pub mod penalty;
pub mod policy;
pub mod queue;
pub mod reservation;
pub mod retry;
pub mod schedule;
pub mod state;
pub mod time;
pub mod unfiltered;
pub mod unrecorded;
pub mod window;

pub use arn::{Arn, ArnError};
pub use breaker::{
    Breaker, BreakerScope, BreakerState, BreakerWait, Passage, ProbeId, ProbeLease, BASE_OPEN,
    MAX_OPEN, MIN_REOPEN,
};
pub use datapoints::{DatapointBudget, DatapointCharge, MetricDataRequest, MetricQuery};
pub use defaults::default_policy;
pub use key::{operation_group, AccountScope, KeyError, Partition, QuotaKey, ServiceGroup};
pub use lease::{Lease, LeaseLedger, RenewalTicket};
pub use overlay::PolicyOverlay;
pub use overrides::{OverrideError, PolicyTable, OVERRIDES_ENV};
pub use penalty::Outcome;
pub use policy::{Policy, PolicyError};
pub use queue::{Exit, Step, WaitQueue};
pub use reservation::{Owner, ReservationId};
pub use schedule::{
    Allowance, AllowanceCounter, CronSchedule, EffectivePolicy, PolicySchedule, ReadTime,
    ScheduleError, WallClock,
};
pub use state::{
    Admission, AdmitRequest, Grant, Handover, QuotaRecord, QuotaSnapshot, QuotaState, Recovery,
    Refusal, Restored, WaitReason, MAX_PAUSE,
};
pub use time::{Clock, Timestamp};
pub use unfiltered::{read_budget, ReadBudget, RequestShape};
pub use unrecorded::FirstGrant;
