//! [`join_in_order`]: run futures at once and collect their outputs in order, polling only
//! the ones that were woken.
//!
//! Why not `futures_util::future::join_all`: for up to 30 futures it keeps them in a plain
//! list and, whenever any one of them is woken, polls every one still pending. A
//! collector's futures are AWS calls (one per region, one per item of a batch), and
//! polling a pending call walks the SDK's whole orchestrator chain down to its connection
//! (through the gate's dispatch and, for an organization's member, its account scope)
//! only to find it still waiting. With 17 regions each wake-up of one region's call
//! re-polled the other 16: in `bench org` (50 accounts × 17 regions, `perf`),
//! `join_all`'s `MaybeDone::poll` alone was 1.4 % of the scanner's samples, beside the
//! pending calls it polled. `FuturesOrdered` polls a future only when its own waker
//! fires, whatever the count, and still hands the outputs back in input order.

use std::future::Future;

use futures_util::stream::{FuturesOrdered, StreamExt};

/// Await every future of `futures` concurrently; their outputs, in input order.
pub async fn join_in_order<I>(futures: I) -> Vec<<I::Item as Future>::Output>
where
    I: IntoIterator,
    I::Item: Future,
{
    futures
        .into_iter()
        .collect::<FuturesOrdered<_>>()
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::future::poll_fn;
    use std::rc::Rc;
    use std::task::{Poll, Waker};

    use super::*;

    /// Where the waiting futures leave their wakers, and whether they may finish.
    #[derive(Default)]
    struct Gate {
        open: Cell<bool>,
        waiting: RefCell<Vec<Waker>>,
    }

    /// Pending `wakes` times, waking itself each time (an SDK call's many steps), then
    /// opens `gate` and is ready with `value`; counts its polls in `polls`.
    async fn busy(wakes: u32, value: u32, polls: Rc<Cell<u32>>, gate: Rc<Gate>) -> u32 {
        let mut left = wakes;
        poll_fn(|cx| {
            polls.set(polls.get() + 1);
            if left == 0 {
                gate.open.set(true);
                gate.waiting.take().into_iter().for_each(Waker::wake);
                return Poll::Ready(value);
            }
            left -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        })
        .await
    }

    /// Pending until `gate` opens (a call waiting on its connection), then `value`.
    async fn waiting(value: u32, polls: Rc<Cell<u32>>, gate: Rc<Gate>) -> u32 {
        poll_fn(|cx| {
            polls.set(polls.get() + 1);
            if gate.open.get() {
                return Poll::Ready(value);
            }
            gate.waiting.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    #[tokio::test]
    async fn outputs_come_back_in_input_order_whatever_order_they_finish_in() {
        let (polls, gate) = (Rc::new(Cell::new(0)), Rc::new(Gate::default()));
        let futures = (0..20).map(|i| busy(20 - i, i, polls.clone(), gate.clone()));
        assert_eq!(join_in_order(futures).await, (0..20).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn one_future_waking_itself_does_not_poll_the_waiting_others() {
        // 17 regions: one busy (100 wake-ups), 16 waiting until it is done.
        let gate = Rc::new(Gate::default());
        let (busy_polls, waiting_polls) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let mut futures = vec![futures_util::future::Either::Left(busy(
            100,
            0,
            busy_polls.clone(),
            gate.clone(),
        ))];
        futures.extend((1..17).map(|i| {
            futures_util::future::Either::Right(waiting(i, waiting_polls.clone(), gate.clone()))
        }));
        let out = join_in_order(futures).await;
        assert_eq!(out, (0..17).collect::<Vec<_>>());
        assert_eq!(busy_polls.get(), 101);
        // Each waiting future: its first poll and the one after the gate woke it. With
        // `join_all` each is polled on every one of the busy future's wake-ups as well.
        assert_eq!(waiting_polls.get(), 16 * 2);
    }
}
