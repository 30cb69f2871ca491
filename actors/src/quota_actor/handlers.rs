//! The messages a [`QuotaActor`] serves: each queues or applies its request, then polls.
//!
//! Waiting requests (`Reserve`, `Admit`) join the FIFO queues served by `poll`; the
//! others apply at once. The registry's `Retire` is in `retire`.

use actix::{Context, Handler};

use super::QuotaActor;
use crate::messages::admit::PAIR_TRY;
use crate::messages::{
    Admit, Cancel, CancelScope, Feedback, Pause, Refund, Release, ReleaseOwner, Reserve, Status,
};
use crate::persist::Urgency;
use crate::AdmissionError;

impl Handler<Reserve> for QuotaActor {
    type Result = ();
    fn handle(&mut self, msg: Reserve, ctx: &mut Context<Self>) {
        let id = self.waiter_id();
        self.reserving.push(id, msg.deadline, msg);
        self.poll(ctx);
    }
}

impl Handler<Admit> for QuotaActor {
    type Result = ();
    fn handle(&mut self, msg: Admit, ctx: &mut Context<Self>) {
        let id = self.waiter_id();
        // A `once` try's window opens on arrival, and the poll serving it reads the same
        // instant, so it is tried before it can expire.
        let now = self.deps.clock.now();
        let deadline = match msg.once {
            true => msg.deadline.min(now + PAIR_TRY),
            false => msg.deadline,
        };
        self.admitting.push(id, deadline, msg);
        self.poll_at(now, ctx);
    }
}

impl Handler<Feedback> for QuotaActor {
    type Result = ();
    fn handle(&mut self, msg: Feedback, ctx: &mut Context<Self>) {
        let now = self.deps.clock.now();
        if let Some(f) = self.fleet.as_mut() {
            // Reported with the next block: a throttle halves the fleet factor, a
            // success refunds a shared retry unit.
            f.ledger.feedback(msg.outcome);
        }
        if self.state.feedback(msg.outcome, msg.admitted_at, now) {
            // A new failure event: store the deeper penalty now (a renewal), not at the
            // next periodic save, so a crash in between does not forget it.
            self.save(1.0, Urgency::Now, ctx);
        }
        if msg.refund_retry {
            self.state.refund_retry();
        }
        self.poll(ctx);
    }
}

impl Handler<Pause> for QuotaActor {
    type Result = ();
    fn handle(&mut self, msg: Pause, ctx: &mut Context<Self>) {
        let now = self.deps.clock.now();
        let until = self.state.pause(msg.hint, now);
        tracing::debug!(key = %self.key, %until, "the server's Retry-After pauses the key");
        // Stored at once like a deeper penalty: a successor must not forget the pause.
        self.save(1.0, Urgency::Now, ctx);
        self.poll(ctx);
    }
}

impl Handler<Refund> for QuotaActor {
    type Result = ();
    fn handle(&mut self, msg: Refund, ctx: &mut Context<Self>) {
        let now = self.deps.clock.now();
        self.state.refund_unsent(msg.cost, &msg.grant, now);
        self.poll(ctx);
    }
}

impl Handler<Release> for QuotaActor {
    type Result = ();
    fn handle(&mut self, msg: Release, ctx: &mut Context<Self>) {
        let now = self.deps.clock.now();
        if self.held_by(msg.reservation, msg.owner, now) {
            self.state.release(msg.reservation, now);
        }
        self.poll(ctx);
    }
}

impl Handler<ReleaseOwner> for QuotaActor {
    type Result = usize;
    fn handle(&mut self, msg: ReleaseOwner, ctx: &mut Context<Self>) -> usize {
        let now = self.deps.clock.now();
        let owner = msg.owner;
        self.reserving.cancel_where(|r| r.owner == owner);
        self.admitting.cancel_where(|a| a.tag.owner == owner);
        let released = self.state.release_owner(owner, now);
        self.poll(ctx);
        released
    }
}

impl Handler<Cancel> for QuotaActor {
    type Result = usize;
    fn handle(&mut self, msg: Cancel, ctx: &mut Context<Self>) -> usize {
        let matches = |tag: &crate::messages::WaiterTag| match msg.0 {
            CancelScope::Scope(scope) => tag.scope == Some(scope),
            CancelScope::Connection(connection) => tag.connection == connection,
        };
        let key = self.key.clone();
        let reserves = self.reserving.cancel_where(|r| matches(&r.tag));
        let admits = self.admitting.cancel_where(|a| matches(&a.tag));
        let n = reserves.len() + admits.len();
        for r in reserves {
            let _ = r
                .reply
                .send(Err(AdmissionError::Cancelled { key: key.clone() }));
        }
        for a in admits {
            let _ = a
                .reply
                .send(Err(AdmissionError::Cancelled { key: key.clone() }));
        }
        self.poll(ctx);
        n
    }
}

impl Handler<Status> for QuotaActor {
    type Result = actix::MessageResult<Status>;
    fn handle(&mut self, _: Status, _: &mut Context<Self>) -> Self::Result {
        actix::MessageResult(self.status())
    }
}
