//! The breaker board in fleet mode: when this host's breakers consult, publish to and
//! claim from the fleet's breaker items (`tollgate_quota::breaker_fleet` has the rules).
//!
//! - The first transient answer of a streak on a closed scope reads the item (at most
//!   once per [`BASE_OPEN`] per scope): if the fleet already knows the scope is failing,
//!   the breaker adopts the opening, so the fleet pays about five failures per outage.
//! - An opening (five failures here) is written to the item, or, if another host opened
//!   it first, adopted from it.
//! - A half-open breaker hands out its probe lease only after this host has claimed the
//!   fleet's probe ([`Claim`]). A host that lost the claim keeps its waiters waiting and
//!   claims again every [`RECHECK`] while it has waiters (the claim reads the item: a
//!   closed item closes the breaker, an open one is adopted, a lapsed lease is won).
//! - The probe's answer is written: success closes the item, a failure re-opens it.
//!
//! A table that fails (unreachable, throttled, denied) never blocks a caller: the scope
//! falls back to this host's own breaker for the current half-open period, and the board
//! warns once.

use std::time::Duration;

use actix::{ActorFutureExt, AsyncContext, Context, WrapFuture};
use tollgate_quota::breaker_fleet::{self, Change, FleetBreakerView, ProbeClaim};
use tollgate_quota::{
    Breaker, BreakerScope, BreakerState, BreakerWait, Outcome, Passage, ProbeId, Timestamp,
    BASE_OPEN,
};

use super::BreakerBoard;
use crate::fleet::breakers::{update, BreakerLink};
use crate::fleet::FleetError;

/// How often a host that lost the probe claim reads the item again while callers wait.
pub const RECHECK: Duration = Duration::from_secs(1);

/// This host's standing on the fleet's probe of a half-open scope, with the claim's
/// write when one is in flight (one state: a claim in flight is never also won, held or
/// probing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Claim {
    /// Not claimed: claim before probing.
    #[default]
    None,
    /// A claim must be written: the board starts it after polling.
    Wanted,
    /// A claim is being written; its answer decides.
    Writing,
    /// A claim is being written, but the breaker moved on since (an opening, a probe's
    /// answer, an adopted view): its answer is dropped, and the scope claims again.
    Superseded,
    /// A claim is being written, but the table failed meanwhile: local rules, and its
    /// answer is dropped.
    LocalWhileWriting,
    /// Won until the instant: the local probe lease may be handed out.
    Won { until: Timestamp },
    /// The local probe lease went out under the fleet's claim.
    Probing(ProbeId),
    /// Another host probes: claim again at the instant.
    Held { recheck_at: Timestamp },
    /// The table failed: local rules until the breaker next changes.
    Local,
}

impl Claim {
    /// Whether a claim's write is in flight.
    fn writing(self) -> bool {
        matches!(
            self,
            Claim::Writing | Claim::Superseded | Claim::LocalWhileWriting
        )
    }

    /// A claim's write starts.
    fn started(self) -> Claim {
        match self {
            Claim::Wanted => Claim::Writing,
            other => other,
        }
    }

    /// The breaker changed (an opening, a probe's answer, an adopted view): start over,
    /// dropping the answer of a claim in flight.
    fn reset(self) -> Claim {
        match self.writing() {
            true => Claim::Superseded,
            false => Claim::None,
        }
    }

    /// A claim's write came back (answered or failed): the claim it leaves, before the
    /// answer is applied (a claim still wanted takes the answer).
    fn write_ended(self) -> Claim {
        match self {
            Claim::Writing => Claim::Wanted,
            Claim::Superseded => Claim::None,
            Claim::LocalWhileWriting => Claim::Local,
            other => other,
        }
    }

    /// The table failed: a wanted claim falls back to local rules.
    fn table_failed(self) -> Claim {
        match self {
            Claim::Wanted => Claim::Local,
            Claim::Writing => Claim::LocalWhileWriting,
            other => other,
        }
    }
}

/// One scope's fleet state on this host.
#[derive(Debug, Default)]
pub(super) struct FleetScope {
    claim: Claim,
    /// The last time a first failure read the item.
    consulted_at: Option<Timestamp>,
    /// The breaker's state was last set from the fleet's item.
    pub(super) from_fleet: bool,
}

impl FleetScope {
    /// The last time a first failure read the item.
    pub(super) fn consulted_at(&self) -> Option<Timestamp> {
        self.consulted_at
    }

    /// Keep the scope in the board while a claim is wanted or in flight, and while a
    /// recent read still limits the next one.
    pub(super) fn busy(&self, now: Timestamp) -> bool {
        matches!(self.claim, Claim::Wanted)
            || self.claim.writing()
            || self.consulted_at.is_some_and(|at| now < at + BASE_OPEN)
    }
}

/// The board's fleet link.
#[derive(Debug)]
pub(super) struct FleetLink {
    pub(super) link: BreakerLink,
    warned: bool,
}

impl FleetLink {
    pub(super) fn new(link: BreakerLink) -> Self {
        FleetLink {
            link,
            warned: false,
        }
    }
}

/// May a caller pass? Without the fleet (`fleet` is `None`), as the breaker says. With
/// it, a half-open breaker with no lease out waits for this host's claim of the fleet's
/// probe; sets the claim to `Wanted` when one must be written (the board starts it after
/// polling).
pub(super) fn pass(
    breaker: &mut Breaker,
    fleet: Option<&mut FleetScope>,
    now: Timestamp,
) -> Passage {
    let Some(fleet) = fleet else {
        return breaker.pass(now);
    };
    if breaker.state(now) != (BreakerState::HalfOpen { probe: None }) {
        return breaker.pass(now);
    }
    let hold = |at| Passage::Wait {
        at,
        reason: BreakerWait::ProbeInFlight,
    };
    match fleet.claim {
        Claim::Local | Claim::LocalWhileWriting => breaker.pass(now),
        Claim::Won { until } if until > now => {
            let pass = breaker.pass(now);
            if let Passage::Probe(lease) = pass {
                fleet.claim = Claim::Probing(lease.id);
            }
            pass
        }
        Claim::Wanted | Claim::Writing => hold(now + RECHECK),
        Claim::Held { recheck_at } if recheck_at > now => hold(recheck_at),
        // A claim in flight whose answer will be dropped: take its answer after all.
        Claim::Superseded => {
            fleet.claim = Claim::Writing;
            hold(now + RECHECK)
        }
        // None, a lapsed win, a lease given up or run out, a recheck due: claim (again).
        _ => {
            fleet.claim = Claim::Wanted;
            hold(now + RECHECK)
        }
    }
}

/// What a report means for the fleet item.
pub(super) enum Publish {
    /// Nothing to do.
    Nothing,
    /// First failure of a streak: read the item.
    Consult,
    /// The breaker opened here: write the opening.
    Opening,
    /// The probe answered: write its answer (`since`: the failure's start here).
    Answer { recovered: bool, since: Timestamp },
}

/// Compare the breaker before and after a report (pure, so it has table tests through
/// the board's tests).
pub(super) fn what_to_publish(
    before: &Breaker,
    after: &Breaker,
    outcome: Option<Outcome>,
    probe: Option<ProbeId>,
    consulted_at: Option<Timestamp>,
    now: Timestamp,
) -> Publish {
    match (before.state(now), after.state(now)) {
        (BreakerState::Closed { .. }, BreakerState::Open { .. }) => Publish::Opening,
        (BreakerState::Closed { failures: 0 }, BreakerState::Closed { .. })
            if outcome == Some(Outcome::Transient)
                && consulted_at.is_none_or(|at| now >= at + BASE_OPEN) =>
        {
            Publish::Consult
        }
        (BreakerState::HalfOpen { probe: Some(lease) }, state)
            if Some(lease.id) == probe && outcome.is_some() =>
        {
            match (before.failing_since(), state) {
                (Some(since), BreakerState::Closed { .. }) => Publish::Answer {
                    recovered: true,
                    since,
                },
                (Some(since), BreakerState::Open { .. }) => Publish::Answer {
                    recovered: false,
                    since,
                },
                _ => Publish::Nothing,
            }
        }
        _ => Publish::Nothing,
    }
}

impl BreakerBoard {
    /// Act on a report's consequence for the fleet item.
    pub(super) fn publish(&mut self, scope: &BreakerScope, what: Publish, ctx: &mut Context<Self>) {
        let now = self.clock.now();
        let Some(entry) = self.scopes.get_mut(scope) else {
            return;
        };
        match what {
            Publish::Nothing => {}
            Publish::Consult => {
                entry.fleet.consulted_at = Some(now);
                self.run(scope, ctx, |item, now| Change {
                    write: None,
                    answer: breaker_fleet::view_of(item, now),
                });
            }
            Publish::Opening => {
                entry.fleet.claim = entry.fleet.claim.reset();
                entry.fleet.from_fleet = false;
                let open_for = entry.breaker.open_for();
                self.run(scope, ctx, move |item, now| {
                    breaker_fleet::publish_opening(item, now, open_for)
                });
            }
            Publish::Answer { recovered, since } => {
                entry.fleet.claim = entry.fleet.claim.reset();
                entry.fleet.from_fleet = false;
                self.run(scope, ctx, move |item, now| {
                    breaker_fleet::publish_answer(item, recovered, since, now)
                });
            }
        }
    }

    /// Start the claims `pass` asked for.
    pub(super) fn start_claims(&mut self, ctx: &mut Context<Self>) {
        let Some(fleet) = &self.fleet else { return };
        let host = fleet.link.host.clone();
        let wanted: Vec<BreakerScope> = self
            .scopes
            .iter()
            .filter(|(_, e)| e.fleet.claim == Claim::Wanted)
            .map(|(s, _)| s.clone())
            .collect();
        for scope in wanted {
            if let Some(entry) = self.scopes.get_mut(&scope) {
                entry.fleet.claim = entry.fleet.claim.started();
            }
            let host = host.clone();
            self.run_rule(
                &scope,
                ctx,
                move |item, now| {
                    breaker_fleet::claim_probe(
                        item,
                        &host,
                        now,
                        tollgate_quota::breaker::PROBE_LEASE,
                    )
                },
                |act, scope, result| {
                    if let Some(entry) = act.scopes.get_mut(scope) {
                        entry.fleet.claim = entry.fleet.claim.write_ended();
                    }
                    act.answered(scope, result, Self::apply_claim);
                },
            );
        }
    }

    /// Run a rule on the scope's item; adopt the view it answers.
    fn run<R>(&mut self, scope: &BreakerScope, ctx: &mut Context<Self>, rule: R)
    where
        R: Fn(Option<&breaker_fleet::FleetBreaker>, Timestamp) -> Change<FleetBreakerView>
            + 'static,
    {
        self.run_rule(scope, ctx, rule, |act, scope, result| {
            act.answered(scope, result, Self::apply_view)
        });
    }

    /// Run `rule` on the scope's item in the background, hand its result to `then`, then
    /// poll.
    fn run_rule<T, R>(
        &mut self,
        scope: &BreakerScope,
        ctx: &mut Context<Self>,
        rule: R,
        then: fn(&mut Self, &BreakerScope, Result<T, FleetError>),
    ) where
        T: 'static,
        R: Fn(Option<&breaker_fleet::FleetBreaker>, Timestamp) -> Change<T> + 'static,
    {
        let Some(fleet) = &self.fleet else { return };
        let work = update(
            fleet.link.store.clone(),
            scope.clone(),
            self.clock.clone(),
            rule,
        );
        let scope = scope.clone();
        ctx.spawn(work.into_actor(self).map(move |result, act, ctx| {
            then(act, &scope, result);
            act.poll(ctx);
        }));
    }

    /// `apply` a rule's answer, or note the table's failure (the scope then falls back to
    /// this host's breaker).
    fn answered<T>(
        &mut self,
        scope: &BreakerScope,
        result: Result<T, FleetError>,
        apply: fn(&mut Self, &BreakerScope, T),
    ) {
        match result {
            Ok(answer) => {
                self.table_answered();
                apply(self, scope, answer)
            }
            Err(e) => self.table_failed(scope, &e),
        }
    }

    /// The fleet's view of a failing scope: adopt it (a closed view changes nothing
    /// here: only a probe's answer or a claim that finds the item closed closes).
    fn apply_view(&mut self, scope: &BreakerScope, view: FleetBreakerView) {
        let now = self.clock.now();
        let Some(entry) = self.scopes.get_mut(scope) else {
            return;
        };
        if let FleetBreakerView::Failing {
            failing_since,
            until,
            ..
        } = view
        {
            // Another host's opening, or this host's own as written a moment later.
            let local_until = entry.breaker.reopens_at(now).unwrap_or(now);
            let others = entry.breaker.failing_since() != Some(failing_since)
                || until.saturating_since(local_until) > RECHECK
                || local_until.saturating_since(until) > RECHECK;
            if entry.breaker.adopt(failing_since, until, now) {
                entry.fleet.from_fleet |= others;
                entry.fleet.claim = entry.fleet.claim.reset();
                tracing::info!(scope = %scope, state = ?entry.breaker.state(now), "circuit breaker adopted from the fleet");
            }
        }
    }

    fn apply_claim(&mut self, scope: &BreakerScope, claim: ProbeClaim) {
        let now = self.clock.now();
        let Some(entry) = self.scopes.get_mut(scope) else {
            return;
        };
        if entry.fleet.claim != Claim::Wanted {
            return;
        }
        entry.fleet.claim = Claim::None;
        match claim {
            ProbeClaim::Won { until } => entry.fleet.claim = Claim::Won { until },
            ProbeClaim::Held { until } => {
                entry.fleet.claim = Claim::Held {
                    recheck_at: until.min(now + RECHECK),
                };
                entry.fleet.from_fleet = true;
            }
            ProbeClaim::Closed => {
                if entry.breaker.close() {
                    entry.fleet.from_fleet = true;
                    tracing::info!(scope = %scope, "circuit breaker closed by the fleet's probe");
                }
            }
            ProbeClaim::Open {
                failing_since,
                until,
            } => {
                if entry.breaker.adopt(failing_since, until, now) {
                    entry.fleet.from_fleet = true;
                }
            }
        }
    }

    /// The table answered: the next failure warns again.
    fn table_answered(&mut self) {
        if let Some(fleet) = &mut self.fleet {
            fleet.warned = false;
        }
    }

    /// The table failed: local rules for this scope's half-open period; warn once.
    fn table_failed(&mut self, scope: &BreakerScope, error: &FleetError) {
        if let Some(entry) = self.scopes.get_mut(scope) {
            entry.fleet.claim = entry.fleet.claim.table_failed();
            entry.fleet.from_fleet = false;
        }
        if let Some(fleet) = &mut self.fleet {
            if !fleet.warned {
                fleet.warned = true;
                tracing::warn!(scope = %scope, error = %error, "fleet breakers: the table failed; breakers follow this host's own failures until it answers");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> Timestamp {
        Timestamp::from_millis(1_000_000 + secs * 1_000)
    }

    /// Apply `outcome` (under `probe`) to a copy of `before` at `now`; what to publish.
    fn publish_after(
        before: &Breaker,
        outcome: Outcome,
        probe: Option<ProbeId>,
        consulted_at: Option<Timestamp>,
        now: Timestamp,
    ) -> Publish {
        let mut after = before.clone();
        after.record(outcome, probe, now);
        what_to_publish(before, &after, Some(outcome), probe, consulted_at, now)
    }

    fn failing(n: u32, now: Timestamp) -> Breaker {
        let mut b = Breaker::default();
        for _ in 0..n {
            b.record(Outcome::Transient, None, now);
        }
        b
    }

    #[test]
    fn a_claims_write_moves_its_standing_through_one_state() {
        use Claim::*;
        let until = at(9);
        let won = Won { until };
        // (case, claim, event, claim after)
        type Event = fn(Claim) -> Claim;
        let (started, reset, ended, failed): (Event, Event, Event, Event) = (
            Claim::started,
            Claim::reset,
            Claim::write_ended,
            Claim::table_failed,
        );
        let table: &[(&str, Claim, Event, Claim)] = &[
            ("a wanted claim starts its write", Wanted, started, Writing),
            ("only a wanted claim starts", None, started, None),
            ("a change drops a settled claim", won, reset, None),
            (
                "a change supersedes a claim in flight",
                Writing,
                reset,
                Superseded,
            ),
            (
                "and one the table failed under",
                LocalWhileWriting,
                reset,
                Superseded,
            ),
            (
                "a write still wanted takes its answer",
                Writing,
                ended,
                Wanted,
            ),
            (
                "a superseded write's answer is dropped",
                Superseded,
                ended,
                None,
            ),
            (
                "local rules outlast their write",
                LocalWhileWriting,
                ended,
                Local,
            ),
            (
                "a failed table makes a wanted claim local",
                Wanted,
                failed,
                Local,
            ),
            (
                "and one in flight local while it is",
                Writing,
                failed,
                LocalWhileWriting,
            ),
            ("a won claim is kept", won, failed, won),
        ];
        for (case, claim, event, after) in table {
            assert_eq!(event(*claim), *after, "{case}");
        }
        for claim in [Writing, Superseded, LocalWhileWriting] {
            assert!(claim.writing(), "{claim:?}");
        }
        for claim in [None, Wanted, won, Local, Held { recheck_at: until }] {
            assert!(!claim.writing(), "{claim:?}");
        }
    }

    #[test]
    fn a_half_open_scope_waits_for_its_claim_and_probes_once_won() {
        let t = at(0);
        let mut breaker = failing(5, t);
        let half_open = at(5);
        let mut scope = FleetScope::default();
        // (case, claim before, claim after, the caller probes)
        let table = [
            ("unclaimed: claim first", Claim::None, Claim::Wanted, false),
            (
                "a claim wanted or written holds",
                Claim::Wanted,
                Claim::Wanted,
                false,
            ),
            (
                "a claim being written holds",
                Claim::Writing,
                Claim::Writing,
                false,
            ),
            (
                "a superseded write is wanted again",
                Claim::Superseded,
                Claim::Writing,
                false,
            ),
            (
                "a recheck not yet due holds",
                Claim::Held { recheck_at: at(6) },
                Claim::Held { recheck_at: at(6) },
                false,
            ),
            (
                "a due recheck claims again",
                Claim::Held {
                    recheck_at: half_open,
                },
                Claim::Wanted,
                false,
            ),
            (
                "a lapsed win claims again",
                Claim::Won { until: half_open },
                Claim::Wanted,
                false,
            ),
        ];
        for (case, before, after, probes) in table {
            scope.claim = before;
            let passage = pass(&mut breaker, Some(&mut scope), half_open);
            assert_eq!(scope.claim, after, "{case} {before:?}");
            assert_eq!(
                matches!(passage, Passage::Probe(_)),
                probes,
                "{case} {before:?}"
            );
        }
        scope.claim = Claim::Won { until: at(6) };
        let Passage::Probe(lease) = pass(&mut breaker, Some(&mut scope), half_open) else {
            panic!("a won claim probes");
        };
        assert_eq!(scope.claim, Claim::Probing(lease.id));
        let mut local = failing(5, t);
        scope.claim = Claim::LocalWhileWriting;
        assert!(
            matches!(
                pass(&mut local, Some(&mut scope), half_open),
                Passage::Probe(_)
            ),
            "local rules probe at once"
        );
        let mut own = failing(5, t);
        assert!(
            matches!(pass(&mut own, Option::None, half_open), Passage::Probe(_)),
            "without the fleet, as the breaker says"
        );
    }

    #[test]
    fn only_a_streaks_first_failure_an_opening_and_a_probes_answer_touch_the_table() {
        let closed = Breaker::default();
        let t = at(0);
        assert!(matches!(
            publish_after(&closed, Outcome::Transient, None, None, t),
            Publish::Consult
        ));
        assert!(
            matches!(
                publish_after(&closed, Outcome::Transient, None, Some(t), at(4)),
                Publish::Nothing
            ),
            "at most one read per 5 s"
        );
        assert!(matches!(
            publish_after(&closed, Outcome::Transient, None, Some(t), at(5)),
            Publish::Consult
        ));
        for outcome in [Outcome::Success, Outcome::Fatal, Outcome::Throttled] {
            assert!(matches!(
                publish_after(&closed, outcome, None, None, t),
                Publish::Nothing
            ));
        }
        assert!(
            matches!(
                publish_after(&failing(2, t), Outcome::Transient, None, None, t),
                Publish::Nothing
            ),
            "later failures of the streak count locally"
        );
        assert!(matches!(
            publish_after(&failing(4, t), Outcome::Transient, None, None, t),
            Publish::Opening
        ));

        let mut open = failing(5, t);
        let probe_at = at(5);
        let Passage::Probe(lease) = open.pass(probe_at) else {
            panic!("half-open after 5 s");
        };
        assert!(
            matches!(
                publish_after(&open, Outcome::Transient, None, None, probe_at),
                Publish::Nothing
            ),
            "an answer of a call sent before the opening is not the probe's"
        );
        match publish_after(&open, Outcome::Success, Some(lease.id), None, probe_at) {
            Publish::Answer { recovered, since } => {
                assert!(recovered);
                assert_eq!(since, t);
            }
            _ => panic!("the probe's success is published"),
        }
        assert!(matches!(
            publish_after(&open, Outcome::Transient, Some(lease.id), None, probe_at),
            Publish::Answer {
                recovered: false,
                ..
            }
        ));
    }
}
