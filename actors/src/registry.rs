//! `Registry`: creates a quota actor on a key's first use and evicts idle ones.
//!
//! A key's actor starts from its stored record when there is one (restored by
//! `QuotaState::from_record`: exactly after a graceful hand-over, with the record's lease
//! charged otherwise) and otherwise under the first caller's policy, as `fresh_keys`
//! says: fresh, with a provisional first grant, or, after a crash, charged the one
//! provisional grant the dead coordinator may have made on it without a record (the only
//! grant any coordinator makes on a key before a leased record of it is stored). A record
//! that cannot be read or decoded makes that key fail closed with an actionable error; the
//! registry never replaces unreadable state with a fresh bucket.

use std::collections::HashMap;
use std::time::Duration;

use actix::fut::wrap_future;
use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, Context, Handler, Message, ResponseActFuture,
    ResponseFuture,
};
use futures_util::future::join_all;
use tollgate_quota::{FirstGrant, Policy, QuotaRecord, QuotaState};

use crate::footprint::CountActors;
use crate::key::CanonicalKey;
use crate::messages::{Cancel, CancelScope, KeyStatus, ReleaseOwner, Status};
use crate::quota_actor::{ActorDeps, QuotaActor, Retire};
use crate::sparse::shrink_if_sparse;

/// How long a key must be idle before its actor is evicted.
pub const DEFAULT_EVICT_AFTER: Duration = Duration::from_secs(300);

/// The registry of live quota actors.
pub struct Registry {
    actors: HashMap<CanonicalKey, Addr<QuotaActor>>,
    deps: ActorDeps,
    evict_after: Duration,
}

impl Registry {
    /// A registry creating actors with `deps`, evicting after `evict_after` idle.
    pub fn new(deps: ActorDeps, evict_after: Duration) -> Self {
        Registry {
            actors: HashMap::new(),
            deps,
            evict_after,
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
        let sends: Vec<_> = self.actors.values().map(|a| a.send(msg.clone())).collect();
        Box::pin(async move {
            join_all(sends)
                .await
                .into_iter()
                .filter_map(Result::ok)
                .sum()
        })
    }
}

impl Actor for Registry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let every = (self.evict_after / 2).max(Duration::from_secs(1));
        ctx.run_interval(every, |act, ctx| {
            let idle_for = act.evict_after;
            for (key, addr) in act.actors.clone() {
                let fut = wrap_future::<_, Self>(addr.send(Retire {
                    force: false,
                    idle_for,
                }))
                .map(move |stopped, act: &mut Registry, _| {
                    if matches!(stopped, Ok(true)) {
                        act.actors.remove(&key);
                        shrink_if_sparse(&mut act.actors);
                    }
                });
                ctx.spawn(fut);
            }
        });
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
        if let Some(addr) = self.actors.get(&msg.key).filter(|a| a.connected()) {
            return actix::MessageResult(addr.clone());
        }
        let addr = self.spawn_actor(&msg.key, msg.policy);
        self.actors.insert(msg.key, addr.clone());
        actix::MessageResult(addr)
    }
}

impl Handler<CountActors> for Registry {
    type Result = usize;
    fn handle(&mut self, _: CountActors, _: &mut Context<Self>) -> usize {
        self.actors.len()
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
        let live: Vec<_> = self.actors.values().map(|a| a.send(Status)).collect();
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
            .map(|(_, a)| {
                a.send(Retire {
                    force: true,
                    idle_for: Duration::ZERO,
                })
            })
            .collect();
        Box::pin(wrap_future::<_, Self>(join_all(sends)).map(|_, _, _| ()))
    }
}
