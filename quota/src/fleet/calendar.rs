//! The calendar on a fleet item (issue 23, seed 003): every host's declared calendar,
//! the valid-until stamp, and the fleet's one allowance counter.
//!
//! # Strictest among the hosts seen
//! Each writer records its [`Declaration`] on the item. The parameters in force at an
//! instant `t` are, field by field, the strictest of every declaration of a host seen in
//! the last [`HOSTS_SEEN_WINDOW`], each resolved at `t` (a schedule over its base; an
//! allowance or a plain policy is its base), and the allowance in force is the one with
//! the smallest amount among them. The stamp is the earliest instant any of them changes
//! (or a seen host drops out of the window), capped at [`DEFAULT_SCAN_CAP`].
//!
//! # A block never straddles a boundary
//! [`place`] resolves at the instant the block starts (after the item's `tat`), not at the
//! write: tokens due at or after the stamp are taken at the next parameters, in a later
//! segment. The first token of a segment that begins at a boundary `B` is placed so its
//! window opens at `B` or later (`e₁ − W ≥ B`): no token of the new parameters is spent
//! before the boundary, and no token of the old ones after it (a token due before `B`
//! closes `C` before its due instant). The price is the segment's burst: it starts empty
//! at the boundary, as a lowered limit should.
//!
//! # One allowance for the fleet
//! The counter is a [`AllowanceCounter`] on the item: the monotonic total consumed and
//! the total at the period's start. A block is charged in full in the write that grants
//! it, sized to the period's remaining amount, so no period admits more than its amount
//! across all hosts; tokens that lapse unspent (a host killed mid-period) are never given
//! back, and a reset only moves the baseline up to the total, never the total down
//! (seed 003's rejected alternative #471). The reset is a boundary: the period's tokens
//! close before it and the next period's open at it or later. A period with nothing left
//! moves the block to the next reset (refused by the horizon until then).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::fleet::declaration::Declaration;
use crate::fleet::host_id::HostId;
use crate::fleet::window::{SpendWindow, TokenRun};
use crate::fleet::HOSTS_SEEN_WINDOW;
use crate::policy::Policy;
use crate::schedule::{
    resolve, Allowance, AllowanceCounter, AllowancePeriod, ReadTime, WallClock, DEFAULT_SCAN_CAP,
};
use crate::time::{secs_ceil, Timestamp};

/// Segments [`place`] looks through for room (boundaries close together, periods spent).
pub const MAX_SEGMENTS: usize = 8;

/// The calendar part of a fleet item.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemCalendar {
    /// Each host's declared calendar (dropped with the host from the item's `hosts`).
    pub declarations: BTreeMap<HostId, Declaration>,
    /// No effective parameter changes before this instant (item time): the stamp of the
    /// last resolution, which is a boundary once a block starts at or after it.
    pub valid_until: Timestamp,
    /// The fleet's allowance counter, once an allowance was in force.
    pub allowance: Option<AllowanceCounter>,
}

/// The parameters in force at an instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Effective {
    /// The strictest resolved policy.
    pub policy: Policy,
    /// Until when it certainly stays in force.
    pub valid_until: Timestamp,
    /// The allowance in force (the smallest amount declared), if any.
    pub allowance: Option<Allowance>,
}

/// What a host last saw of the fleet's allowance (degraded mode divides its remaining).
#[derive(Debug, Clone, PartialEq)]
pub struct AllowanceSeen {
    pub allowance: Allowance,
    /// The period the grant's tokens are in, and what remained of it after the grant.
    pub period: AllowancePeriod,
    pub remaining: u64,
    /// The wall-clock instant of `Timestamp::ZERO` on the writer's clock.
    pub anchor: WallClock,
}

/// The strictest parameters of `declarations` at `t` (`None`: no declaration).
pub fn effective_at<'a>(
    declarations: impl IntoIterator<Item = &'a Declaration>,
    t: Timestamp,
    anchor: WallClock,
) -> Option<Effective> {
    let wall = WallClock::from_timestamp(t, anchor);
    let cap = wall.saturating_add(DEFAULT_SCAN_CAP);
    let mut out: Option<Effective> = None;
    for d in declarations {
        let (policy, until, allowance) = match d.read_time() {
            Some(ReadTime::Schedule(s)) => {
                let r = resolve(d.policy(), s, wall, cap);
                (r.policy, r.valid_until, None)
            }
            Some(ReadTime::Allowance(a)) => (*d.policy(), WallClock::MAX, Some(a)),
            None => (*d.policy(), WallClock::MAX, None),
        };
        let until = until.min(cap).to_timestamp(anchor);
        out = Some(match out {
            None => Effective {
                policy,
                valid_until: until,
                allowance: allowance.cloned(),
            },
            Some(e) => Effective {
                policy: e.policy.strictest(&policy),
                valid_until: e.valid_until.min(until),
                allowance: stricter_allowance(e.allowance, allowance),
            },
        });
    }
    out
}

/// The smaller amount (ties: the pattern and zone that sort first, so every host picks
/// the same one).
fn stricter_allowance(a: Option<Allowance>, b: Option<&Allowance>) -> Option<Allowance> {
    let rank = |x: &Allowance| {
        (
            x.amount(),
            x.resets().pattern().to_owned(),
            x.resets().timezone(),
        )
    };
    match (a, b) {
        (Some(a), Some(b)) if rank(b) < rank(&a) => Some(b.clone()),
        (Some(a), _) => Some(a),
        (None, b) => b.cloned(),
    }
}

/// What [`place`] decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Placement {
    /// The tokens (`count` 0: refused by the horizon or no room, see `next_at`).
    pub run: TokenRun,
    pub next_at: Option<Timestamp>,
    /// The parameters the run is taken at.
    pub policy: Policy,
    pub allowance: Option<AllowanceSeen>,
}

/// What a placement needs besides the item's calendar.
pub(crate) struct PlaceArgs<'a> {
    pub tat: Timestamp,
    pub factor: f64,
    pub hosts: &'a BTreeMap<HostId, Timestamp>,
    pub wanted: u64,
    pub horizon: Duration,
    /// The writer's round trip to the table (`BlockRequest::round_trip`).
    pub round_trip: Duration,
    pub anchor: WallClock,
    pub now: Timestamp,
}

/// Place a block of `args.wanted` tokens on the calendar; on a grant, update the
/// calendar's stamp and charge its allowance (a refusal changes nothing).
pub(crate) fn place(calendar: &mut ItemCalendar, args: &PlaceArgs<'_>) -> Placement {
    let (declarations, drops_out) = seen_declarations(&calendar.declarations, args);
    let mut at = args.tat.max(args.now);
    let mut boundary = (at >= calendar.valid_until).then_some(calendar.valid_until);
    let mut last = None;
    for _ in 0..MAX_SEGMENTS {
        let Some(effective) = effective_at(declarations.iter().copied(), at, args.anchor) else {
            break;
        };
        let segment = Segment::starting(effective.policy, at, boundary, args);
        match segment.try_place(&effective, calendar.allowance, drops_out, args) {
            Step::NextAt(next) => {
                (at, boundary) = (next, Some(next));
                last = Some(segment);
            }
            Step::Refused(placement) => return placement,
            Step::Granted {
                placement,
                valid_until,
                counter,
            } => {
                calendar.valid_until = valid_until;
                if counter.is_some() {
                    calendar.allowance = counter;
                }
                return placement;
            }
        }
    }
    no_room(last, args)
}

/// The declarations of the hosts seen in the last [`HOSTS_SEEN_WINDOW`], and the instant
/// the first of those hosts drops out of the strictest rule (its last write leaves the
/// window).
fn seen_declarations<'a>(
    declarations: &'a BTreeMap<HostId, Declaration>,
    args: &PlaceArgs<'_>,
) -> (Vec<&'a Declaration>, Timestamp) {
    let since = args.now.saturating_sub(HOSTS_SEEN_WINDOW);
    let seen: Vec<(&HostId, Timestamp)> = args
        .hosts
        .iter()
        .filter(|(_, at)| **at >= since)
        .map(|(h, at)| (h, *at))
        .collect();
    let drops_out = seen
        .iter()
        .map(|(_, at)| *at + HOSTS_SEEN_WINDOW)
        .min()
        .unwrap_or(Timestamp::from_micros(u64::MAX));
    let seen = seen
        .iter()
        .filter_map(|(h, _)| declarations.get(*h))
        .collect();
    (seen, drops_out)
}

/// One segment's parameters: the shape of its run before the count is known.
#[derive(Debug, Clone, Copy)]
struct Segment {
    policy: Policy,
    window: SpendWindow,
    spacing: Duration,
    /// The instant after which the segment's first token is due.
    start: Timestamp,
}

/// What one segment decided.
enum Step {
    /// Nothing fits before the segment ends: look again from this boundary.
    NextAt(Timestamp),
    /// The run would open beyond the horizon: the calendar is unchanged.
    Refused(Placement),
    /// A grant: the calendar's new stamp and, under an allowance, its charged counter.
    Granted {
        placement: Placement,
        valid_until: Timestamp,
        counter: Option<AllowanceCounter>,
    },
}

impl Segment {
    /// The segment at `at` under `policy`; one that begins at `boundary` opens after it.
    fn starting(
        policy: Policy,
        at: Timestamp,
        boundary: Option<Timestamp>,
        args: &PlaceArgs<'_>,
    ) -> Self {
        let window = SpendWindow::for_policy(policy.rate_per_second(), policy.admission_burst());
        let spacing = secs_ceil(1.0 / (policy.rate_per_second() * args.factor));
        let mut start = at.max(args.now + window.lead_for(args.round_trip));
        if let Some(b) = boundary {
            // The segment's first token opens at the boundary or later: e₁ − W ≥ B.
            start = start.max((b + window.open_before).saturating_sub(spacing));
        }
        Segment {
            policy,
            window,
            spacing,
            start,
        }
    }

    /// Place the block in this segment: the tokens due before its stamp (and within the
    /// allowance's remaining amount, `stored` being the item's counter), or where to look
    /// next.
    fn try_place(
        &self,
        effective: &Effective,
        stored: Option<AllowanceCounter>,
        drops_out: Timestamp,
        args: &PlaceArgs<'_>,
    ) -> Step {
        let mut valid_until = effective.valid_until.min(drops_out);
        let mut room = args.wanted.max(1);
        let mut counter = None;
        if let Some(allowance) = &effective.allowance {
            let wall = WallClock::from_timestamp(self.start, args.anchor);
            let mut c = stored.unwrap_or_else(|| AllowanceCounter::new(allowance, 0, wall));
            c.roll(allowance, wall);
            let reset = c.period().next_reset.to_timestamp(args.anchor);
            valid_until = valid_until.min(reset);
            room = room.min(c.remaining(allowance));
            if room == 0 {
                return Step::NextAt(reset);
            }
            counter = Some((allowance, c));
        }
        let first_due = self.start + self.spacing;
        if first_due >= valid_until {
            return Step::NextAt(valid_until);
        }
        // Only tokens due before the stamp: the rest belong to the next segment.
        let fit = (valid_until.saturating_since(first_due).as_micros() as u64 - 1)
            / self.spacing.as_micros().max(1) as u64
            + 1;
        let mut run = TokenRun {
            first_due,
            spacing: self.spacing,
            count: room.min(fit),
            window: self.window,
        };
        let latest_open = args.now + args.horizon;
        if run.opens(0) > latest_open {
            let next_at = args.now + run.opens(0).saturating_since(latest_open);
            run.count = 0;
            return Step::Refused(Placement {
                run,
                next_at: Some(next_at),
                policy: self.policy,
                allowance: None,
            });
        }
        let charged = counter.map(|(allowance, mut c)| {
            c.charge(run.count);
            (allowance, c)
        });
        Step::Granted {
            placement: Placement {
                run,
                next_at: None,
                policy: self.policy,
                allowance: charged.map(|(allowance, c)| AllowanceSeen {
                    period: c.period(),
                    remaining: c.remaining(allowance),
                    allowance: allowance.clone(),
                    anchor: args.anchor,
                }),
            },
            valid_until,
            counter: charged.map(|(_, c)| c),
        }
    }
}

/// No room within the segments looked at (`last`, if any): ask again when the last one
/// starts.
fn no_room(last: Option<Segment>, args: &PlaceArgs<'_>) -> Placement {
    let now = args.now;
    let Segment {
        policy,
        window,
        spacing,
        start,
    } = last.unwrap_or(Segment {
        policy: Policy::with_rate(1.0, 1.0).expect("a valid policy"),
        window: SpendWindow::for_policy(1.0, 1.0),
        spacing: Duration::from_secs(1),
        start: now + Duration::from_secs(1),
    });
    let run = TokenRun {
        first_due: start + spacing,
        spacing,
        count: 0,
        window,
    };
    let next_at = now.max(
        run.opens(0)
            .saturating_sub(args.horizon)
            .max(now + Duration::from_millis(1)),
    );
    Placement {
        run,
        next_at: Some(next_at),
        policy,
        allowance: None,
    }
}

/// The hosts seen at `now` whose declaration differs from `host`'s.
pub fn disagreeing(
    calendar: &ItemCalendar,
    hosts: &BTreeMap<HostId, Timestamp>,
    host: &HostId,
    now: Timestamp,
) -> Vec<HostId> {
    let Some(mine) = calendar.declarations.get(host) else {
        return Vec::new();
    };
    let since = now.saturating_sub(HOSTS_SEEN_WINDOW);
    calendar
        .declarations
        .iter()
        .filter(|(h, d)| *h != host && *d != mine && hosts.get(*h).is_some_and(|at| *at >= since))
        .map(|(h, _)| h.clone())
        .collect()
}

#[cfg(test)]
#[path = "calendar_tests.rs"]
mod tests;
