//! `Registry`: creates a quota actor on a key's first use and retires idle ones.
//!
//! A key's actor starts from its stored record when there is one (restored by
//! `QuotaState::from_record`: exactly after a graceful hand-over, with the record's lease
//! charged otherwise) and otherwise under the first caller's policy, as `fresh_keys`
//! says: fresh, with a provisional first lease, or, after a crash, charged the provisional
//! grants (two starts, two tokens) the dead coordinator may have made on it without a
//! record (the only grants any coordinator makes on a key before a leased record of it is
//! stored). A record
//! that cannot be read or decoded makes that key fail closed with an actionable error; the
//! registry never replaces unreadable state with a fresh bucket.
//!
//! Every `evict_after / 2` (at least a second) it asks each live actor to retire
//! ([`Retire::WhenIdle`]); an actor idle for `evict_after` whose whole state is in its
//! record stops once its graceful record is durable (`quota_actor::retire` says when, and
//! why nothing is lost). A key used again gets a new actor restored from that record.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::fut::wrap_future;
use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, Context, Handler, Message, ResponseActFuture,
    ResponseFuture,
};
use futures_util::future::join_all;
use futures_util::FutureExt;
use tollgate_quota::{FirstGrant, Policy, QuotaRecord, QuotaState};

use crate::footprint::{ActorCounts, CountActors};
use crate::key::CanonicalKey;
use crate::messages::{Cancel, CancelScope, KeyStatus, ReleaseOwner, Status};
use crate::quota_actor::{ActorDeps, QuotaActor, Retire};
use crate::sparse::shrink_if_sparse;

/// How long a key must be idle before its actor retires, when its whole state is in its
/// record (`quota_actor::retire`; a fleet key's, whose block lives only in memory, waits
/// for [`UNSTORED_EVICT_AFTER`](crate::quota_actor::UNSTORED_EVICT_AFTER) at least).
///
/// Why 5 seconds: an actor retired too early costs little, one graceful record and, on
/// the key's next use, one read and one leased record before its first grant (a flush
/// shared with every key saving then, milliseconds), against calls of tens to hundreds
/// of milliseconds. An actor kept too long costs its memory: an organization scan starts
/// about 900 new keys a second at 1,000 accounts, so live actors are about 900 × (the
/// time a key is in use + this delay + up to half of it, the registry's period).
/// Between two calls of one caller on one key (a listing's pages) the key is idle for
/// the client's turnaround, milliseconds; a call's retries hold its reservation, and a
/// waiter keeps its actor busy, so neither counts as idle. Five seconds covers a slow
/// client's turnaround many times over and keeps the scan's live actors to a few
/// thousand (`actors/examples/actor_memory.rs`, `scan`: at most 6,930 at 900 a second).
pub const DEFAULT_EVICT_AFTER: Duration = Duration::from_secs(5);

/// A live actor and the serial it was started with (which tells it apart from a later
/// actor of the same key, without comparing addresses).
struct Live {
    addr: Addr<QuotaActor>,
    serial: u64,
}

/// The registry of live quota actors.
pub struct Registry {
    actors: HashMap<CanonicalKey, Live>,
    /// Shared by every actor it starts.
    deps: Arc<ActorDeps>,
    evict_after: Duration,
    /// Actors started so far (the last one's serial).
    started: u64,
    /// The most actors live at once.
    peak: usize,
}

impl Registry {
    /// A registry creating actors with `deps`, retiring them after `evict_after` idle.
    pub fn new(deps: ActorDeps, evict_after: Duration) -> Self {
        Registry {
            actors: HashMap::new(),
            deps: Arc::new(deps),
            evict_after,
            started: 0,
            peak: 0,
        }
    }

    fn spawn_actor(&mut self, key: &CanonicalKey, policy: Policy) -> Addr<QuotaActor> {
        let now = self.deps.clock.now();
        let pid_alive = self.deps.pid_alive.clone();
        let loaded = self.deps.persister.load(key.as_str());
        let mut first = FirstGrant::WriteAhead;
        let (state, failure) = match &loaded {
            Ok(None) => {
                let (state, grant) = self.deps.fresh_keys.start(policy, now);
                first = grant;
                (state, None)
            }
            Ok(Some(bytes)) => match serde_json::from_slice::<QuotaRecord>(bytes) {
                Ok(record) if QuotaRecord::readable(record.format) => {
                    let (mut state, recovery) =
                        QuotaState::from_record(record, now, &|pid| pid_alive(pid));
                    if recovery.conservative || recovery.reaped > 0 {
                        tracing::info!(
                            key = %key,
                            restored = ?recovery.restored,
                            reaped = recovery.reaped,
                            "restored quota state"
                        );
                    }
                    state.adopt_policy(&policy, now);
                    (state, None)
                }
                Ok(record) => (
                    QuotaState::new(policy, now),
                    Some(format!(
                        "{key}: stored state has format {} but this tollgate reads formats 1 to {}; stop every tollgate process using this admission directory and use one version",
                        record.format,
                        QuotaRecord::FORMAT
                    )),
                ),
                Err(_) => (
                    QuotaState::new(policy, now),
                    Some(format!(
                        "{key}: stored quota state is corrupted; stop every tollgate process using this admission directory, move its state aside, then retry"
                    )),
                ),
            },
            Err(e) => (QuotaState::new(policy, now), Some(e.to_string())),
        };
        let stored = loaded.as_ref().ok().and_then(|b| b.as_deref());
        QuotaActor::new(key.clone(), state, self.deps.clone(), failure)
            .with_calendar(stored)
            .with_first_grant(first)
            .start()
    }
}

impl Registry {
    /// Send `msg` to every live quota actor and add up their answers (actors that stop
    /// meanwhile count 0).
    fn sum_over_actors<M>(&self, msg: M) -> ResponseFuture<usize>
    where
        M: Message<Result = usize> + Clone + Send + 'static,
        QuotaActor: Handler<M>,
    {
        let sends: Vec<_> = self
            .actors
            .values()
            .map(|live| live.addr.send(msg.clone()))
            .collect();
        Box::pin(async move {
            join_all(sends)
                .await
                .into_iter()
                .filter_map(Result::ok)
                .sum()
        })
    }
}

impl Registry {
    /// Ask every live actor to retire if idle; forget those that stop.
    fn retire_idle(&mut self, ctx: &mut Context<Self>) {
        let msg = Retire::WhenIdle {
            evict_after: self.evict_after,
        };
        let asks: Vec<_> = self
            .actors
            .iter()
            .map(|(key, live)| {
                let (key, serial) = (key.clone(), live.serial);
                live.addr
                    .send(msg)
                    .map(move |stopped| (key, serial, matches!(stopped, Ok(true))))
            })
            .collect();
        let forget = wrap_future::<_, Self>(join_all(asks)).map(|answers, act, _| {
            for (key, serial, stopped) in answers {
                // A key used after its actor stopped has a new actor already: keep that.
                if stopped && act.actors.get(&key).is_some_and(|l| l.serial == serial) {
                    act.actors.remove(&key);
                }
            }
            shrink_if_sparse(&mut act.actors);
        });
        ctx.spawn(forget);
    }
}

impl Actor for Registry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let every = (self.evict_after / 2).max(Duration::from_secs(1));
        ctx.run_interval(every, |act, ctx| act.retire_idle(ctx));
    }
}

/// Get (or create) the actor for a key.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Addr<QuotaActor>")]
pub struct Lookup {
    /// Canonical key.
    pub key: CanonicalKey,
    /// The caller's policy, used if the key is new.
    pub policy: Policy,
}

impl Handler<Lookup> for Registry {
    type Result = actix::MessageResult<Lookup>;
    fn handle(&mut self, msg: Lookup, _: &mut Context<Self>) -> Self::Result {
        if let Some(live) = self.actors.get(&msg.key).filter(|l| l.addr.connected()) {
            return actix::MessageResult(live.addr.clone());
        }
        let addr = self.spawn_actor(&msg.key, msg.policy);
        self.started += 1;
        let live = Live {
            addr: addr.clone(),
            serial: self.started,
        };
        self.actors.insert(msg.key, live);
        self.peak = self.peak.max(self.actors.len());
        actix::MessageResult(addr)
    }
}

impl Handler<CountActors> for Registry {
    type Result = actix::MessageResult<CountActors>;
    fn handle(&mut self, _: CountActors, _: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(ActorCounts {
            live: self.actors.len(),
            peak: self.peak,
            started: self.started,
        })
    }
}

/// Cancel waiters on every live key.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub struct CancelEverywhere(pub CancelScope);

impl Handler<CancelEverywhere> for Registry {
    type Result = ResponseFuture<usize>;
    fn handle(&mut self, msg: CancelEverywhere, _: &mut Context<Self>) -> Self::Result {
        self.sum_over_actors(Cancel(msg.0))
    }
}

/// Drop one owner's waiters and release its slots on every live key (a client is gone).
/// Keys without a live actor reap dead owners when they are next loaded.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "usize")]
pub struct ReleaseOwnerEverywhere(pub tollgate_quota::Owner);

impl Handler<ReleaseOwnerEverywhere> for Registry {
    type Result = ResponseFuture<usize>;
    fn handle(&mut self, msg: ReleaseOwnerEverywhere, _: &mut Context<Self>) -> Self::Result {
        self.sum_over_actors(ReleaseOwner { owner: msg.0 })
    }
}

/// The status of every key: live actors, plus stored keys without one.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Vec<KeyStatus>")]
pub struct StatusAll;

impl Handler<StatusAll> for Registry {
    type Result = ResponseFuture<Vec<KeyStatus>>;
    fn handle(&mut self, _: StatusAll, _: &mut Context<Self>) -> Self::Result {
        let live: Vec<_> = self.actors.values().map(|l| l.addr.send(Status)).collect();
        let live_keys: Vec<CanonicalKey> = self.actors.keys().cloned().collect();
        let deps = self.deps.clone();
        Box::pin(async move {
            let mut out: Vec<KeyStatus> = join_all(live)
                .await
                .into_iter()
                .filter_map(Result::ok)
                .collect();
            let now = deps.clock.now();
            let stored = deps.persister.entries().unwrap_or_default();
            for (key, bytes) in stored {
                if live_keys.iter().any(|k| k.as_str() == key) {
                    continue;
                }
                let Ok(record) = serde_json::from_slice::<QuotaRecord>(&bytes) else {
                    continue;
                };
                let (state, _) = QuotaState::from_record(record, now, &|pid| (deps.pid_alive)(pid));
                out.push(KeyStatus {
                    key,
                    state: state.snapshot(now),
                    waiting_for_reservation: 0,
                    waiting_for_admission: 0,
                    storage_failure: None,
                    calendar: None,
                    fleet: None,
                    fleet_degraded: None,
                });
            }
            out.sort_by(|a, b| a.key.cmp(&b.key));
            out
        })
    }
}

/// Retire every actor, saving graceful records. Answers when all have stopped.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Shutdown;

impl Handler<Shutdown> for Registry {
    type Result = ResponseActFuture<Self, ()>;
    fn handle(&mut self, _: Shutdown, _: &mut Context<Self>) -> Self::Result {
        let sends: Vec<_> = self
            .actors
            .drain()
            .map(|(_, live)| live.addr.send(Retire::Now))
            .collect();
        Box::pin(wrap_future::<_, Self>(join_all(sends)).map(|_, _, _| ()))
    }
}
