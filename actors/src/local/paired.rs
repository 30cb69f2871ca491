//! Paired admission: one attempt charged on two keys at one instant, or on neither
//! ([`Operation::AdmitWithBudget`](crate::ops::Operation::AdmitWithBudget)). A
//! GetMetricData attempt is admitted only when its request key (`cloudwatch:GetMetricData`)
//! and the account/region datapoint budget chosen for it can both be charged, immediately
//! before transport (seed 000, issue 22).
//!
//! Why two actors and a compensation, not one actor owning the request key and its two
//! datapoint buckets? Each datapoint budget is then an ordinary key: its own actor, FIFO,
//! persisted record and write-ahead lease (crash safety), fleet block (fleet mode),
//! schedule or allowance, `tollgate status` row, override and strictest-policy merge,
//! all exactly as for request keys, instead of a second copy of each inside one actor.
//! What one actor would give for free, charging both at one instant, is had here by
//! running the pairing inside the coordinator, next to both actors:
//!
//! 1. the *lead* key is waited for in its own FIFO until it grants (first the budget:
//!    the datapoints are what binds, and their FIFO is what keeps a large page from
//!    being overtaken by small ones);
//! 2. the other key is then asked at once ([`Admit::once`]: tried on arrival, in its
//!    FIFO order, and given [`PAIR_TRY`](crate::messages::admit::PAIR_TRY) from its arrival on the actor's clock, so
//!    granted now or not at all; a deadline that short computed here, before the hop to
//!    the actor, had always passed on the real clock by the time the actor served it);
//! 3. granted: both were charged at the same admission instant (no time passes on the
//!    coordinator's clock between two in-process messages; on the real clock, the length
//!    of one actor round trip). Not granted: the lead's grant is refunded
//!    ([`Refund`](crate::messages::Refund): tokens back, capped at the burst; its start
//!    out of the rolling window; retry unit back), and the other key becomes the lead,
//!    so the next round waits in *its* FIFO.
//!
//! A refund only returns what was never sent, so neither key ever admits more than its
//! policy allows; the lease keeps its charge, and in fleet mode the table tokens the
//! grant spent from the host's hand stay spent (which token to give back is not known
//! exactly, and the wrong one could be spent twice), both of which err toward admitting
//! less: contended pairing in fleet mode wastes table capacity (actors/tests/integration/fleet.rs
//! measures 29.9 s for what the budget key alone does in 12.6 s), never over-admits. Each failed round means the other key was granted to
//! someone else, so the system makes progress; a lone caller passes in the first round.
//! The budget's slot (it is a key like any other, with a concurrency) is held only for
//! the pairing and released when it ends, also when the caller goes away mid-way.
//! Cancellation reaches both waits (each carries the caller's scope), deadlines bound
//! both, and a refusal of either (a cost above the budget's burst: raise it with an
//! override) ends the pairing with that refusal after refunding the other half.
//!
//! **More than two keys.** A Cloud Control call charges its own key and one token of each
//! operation its type's handler performs (issue 33: `ListResources` of `AWS::IAM::Role`
//! spends `iam:ListRoles`). The rounds are the same with any number of keys: the lead
//! waits in its FIFO, every other key is tried once in order (budgets first, the
//! attempt's own key last), and the first that cannot grant now refunds every grant of
//! the round and leads the next one. All keys are charged at one instant or none is;
//! each failed round still means some key was granted to someone else.

use actix::Addr;
use tollgate_quota::{AdmitRequest, Grant, Policy, ReservationId, Timestamp};

use crate::key::CanonicalKey;
use crate::local::{Caller, LocalAdmission, DEFAULT_RESERVATION_TTL};
use crate::messages::{Admit, Refund, Release, Reserve, WaiterTag};
use crate::ops::BudgetCharge;
use crate::quota_actor::QuotaActor;
use crate::AdmissionError;

/// The attempt's own key and the budgets charged beside it.
#[derive(Debug, Clone)]
pub(crate) struct Pair {
    /// The attempt's key, its policy and its request (held slot, cost, retry).
    pub key: CanonicalKey,
    pub policy: Policy,
    pub request: AdmitRequest,
    /// The budgets (at least one; none admits as a plain `Admit` would).
    pub budgets: Vec<BudgetCharge>,
    /// When the caller gives up, and its tag (scope) for cancellation.
    pub deadline: Timestamp,
    pub scope: Option<u64>,
}

/// A budget's slot, given back when the pairing ends (or its future is dropped).
struct BudgetSlot {
    actor: Addr<QuotaActor>,
    id: ReservationId,
    caller: Caller,
}

impl Drop for BudgetSlot {
    fn drop(&mut self) {
        self.actor.do_send(Release {
            reservation: self.id,
            owner: self.caller.owner,
        });
    }
}

/// One key of a pairing and what its round asks of it.
type Charge<'a> = (&'a CanonicalKey, Policy, AdmitRequest);

impl LocalAdmission {
    /// Admit `pair` for `caller` (see the module docs): the grant of the attempt's key.
    pub(crate) async fn admit_paired(
        &self,
        pair: Pair,
        caller: Caller,
    ) -> Result<Grant, AdmissionError> {
        let tag = caller.tag(pair.scope);
        let mut slots = Vec::with_capacity(pair.budgets.len());
        for budget in &pair.budgets {
            slots.push(self.reserve_budget(&pair, budget, tag, caller).await?);
        }
        // The budgets first, in the caller's order, then the attempt's own key (last).
        let mut charges: Vec<Charge<'_>> = pair
            .budgets
            .iter()
            .zip(&slots)
            .map(|(budget, slot)| {
                let request = AdmitRequest {
                    reservation: slot.id,
                    cost: budget.cost,
                    retry: false,
                };
                (&budget.key, budget.policy, request)
            })
            .collect();
        charges.push((&pair.key, pair.policy, pair.request));
        let own = charges.len() - 1;
        let mut lead = 0;
        loop {
            let lead_grant = self
                .admit_on(charges[lead], pair.deadline, false, tag)
                .await?;
            let mut granted = vec![(lead, lead_grant)];
            // The others in index order: the attempt's own key, last, is tried last.
            let mut refused = None;
            for (i, charge) in charges.iter().enumerate().filter(|(i, _)| *i != lead) {
                match self.admit_on(*charge, pair.deadline, true, tag).await {
                    Ok(grant) => granted.push((i, grant)),
                    Err(e) => {
                        refused = Some((i, e));
                        break;
                    }
                }
            }
            let Some((i, error)) = refused else {
                // Every key granted: the own key's grant is the lead's, or the last one.
                return Ok(match lead == own {
                    true => lead_grant,
                    false => granted.last().map_or(lead_grant, |(_, g)| *g),
                });
            };
            for (j, grant) in granted {
                self.refund(charges[j], grant).await;
            }
            match error {
                AdmissionError::DeadlineExceeded { .. } if self.now() < pair.deadline => lead = i,
                e => return Err(e),
            }
        }
    }

    async fn reserve_budget(
        &self,
        pair: &Pair,
        budget: &BudgetCharge,
        tag: WaiterTag,
        caller: Caller,
    ) -> Result<BudgetSlot, AdmissionError> {
        let now = self.now();
        let id = self
            .ask(&budget.key, budget.policy, |reply| Reserve {
                policy: budget.policy,
                owner: caller.owner,
                expires_at: pair.deadline.max(now + DEFAULT_RESERVATION_TTL),
                deadline: pair.deadline,
                tag,
                reply,
            })
            .await?;
        let actor = self.actor(&budget.key, budget.policy, false).await?;
        Ok(BudgetSlot { actor, id, caller })
    }

    /// The grant of `request` on `key`, waiting until `deadline` (`once`: tried on
    /// arrival only, see [`Admit::once`]).
    pub(super) async fn admit_on(
        &self,
        (key, policy, request): (&CanonicalKey, Policy, AdmitRequest),
        deadline: Timestamp,
        once: bool,
        tag: WaiterTag,
    ) -> Result<Grant, AdmissionError> {
        self.ask(key, policy, |reply| Admit {
            request,
            deadline,
            once,
            tag,
            reply,
        })
        .await
    }

    async fn refund(&self, (key, policy, request): Charge<'_>, grant: Grant) {
        match self.actor(key, policy, false).await {
            Ok(actor) => actor.do_send(Refund {
                cost: request.cost,
                grant,
            }),
            // The actor is gone: its grant stays charged, which only admits less.
            Err(e) => {
                tracing::debug!(key = %key, error = %e, "an unsent grant could not be refunded")
            }
        }
    }
}
