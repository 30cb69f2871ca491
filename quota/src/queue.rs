//! A FIFO of waiting requests with deadlines and cancellation, independent of what waits.
//!
//! Only the head is ever tried, so nobody is overtaken: a waiter that needs a large cost
//! is not starved by a stream of small ones behind it. A waiter whose deadline passes is
//! removed wherever it stands, and a cancelled one is removed before it can be tried, so a
//! cancelled waiter never starts. The quota actor keeps one queue for reservations and
//! one for final admission; the queue itself is pure and is tested with simulated time.
//!
//! The deadlines are also kept ordered beside the FIFO, so a poll finds whether anyone is
//! overdue, and the earliest deadline to wake at, without a pass over every waiter: a
//! key with thousands of waiters (a coordinator holds up to 16,384 per connection) polled
//! on every arrival was quadratic in them.
//!
//! An emptied queue gives its room back (the deque's buffer, the deadline map's node):
//! a key's actor lives on for seconds after its last waiter left, and most of the live
//! actors of an organization scan are such idle ones, each of whose two queues would
//! otherwise hold about 600 bytes of room for nobody (issue 35). Refilling costs two
//! small allocations when a waiter arrives at an empty queue.

use std::collections::{BTreeMap, VecDeque};

use crate::time::Timestamp;

/// What trying the head produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<G, R> {
    /// The head was granted: remove it.
    Grant(G),
    /// The head must wait until this instant; so must everyone behind it.
    Wait(Timestamp),
    /// The head can never pass as asked: remove it.
    Refuse(R),
    /// The head is no longer wanted (its caller went away): remove it silently.
    Drop,
}

/// How a waiter left the queue.
#[derive(Debug, Clone, PartialEq)]
pub enum Exit<G, R> {
    /// Granted.
    Granted(G),
    /// Refused.
    Refused(R),
    /// Its deadline passed first.
    DeadlineExceeded,
    /// Its caller went away.
    Dropped,
}

#[derive(Debug)]
struct Waiting<T> {
    id: u64,
    deadline: Timestamp,
    item: T,
}

/// Waiters in arrival order.
#[derive(Debug)]
pub struct WaitQueue<T> {
    waiting: VecDeque<Waiting<T>>,
    /// How many waiters have each (deadline, id): the same entries as `waiting`, ordered
    /// by deadline (a count, so that a repeated id cannot hide one).
    deadlines: BTreeMap<(Timestamp, u64), usize>,
}

impl<T> Default for WaitQueue<T> {
    fn default() -> Self {
        WaitQueue {
            waiting: VecDeque::new(),
            deadlines: BTreeMap::new(),
        }
    }
}

impl<T> WaitQueue<T> {
    /// Add a waiter at the tail.
    pub fn push(&mut self, id: u64, deadline: Timestamp, item: T) {
        *self.deadlines.entry((deadline, id)).or_insert(0) += 1;
        self.waiting.push_back(Waiting { id, deadline, item });
    }

    fn forget_deadline(&mut self, deadline: Timestamp, id: u64) {
        if let Some(n) = self.deadlines.get_mut(&(deadline, id)) {
            *n -= 1;
            if *n == 0 {
                self.deadlines.remove(&(deadline, id));
            }
        }
    }

    /// Number of waiters.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// The waiters, head first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.waiting.iter().map(|w| &w.item)
    }

    /// True when nobody waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Remove one waiter; it will never be tried.
    pub fn cancel(&mut self, id: u64) -> Option<T> {
        let pos = self.waiting.iter().position(|w| w.id == id)?;
        let w = self.waiting.remove(pos)?;
        self.forget_deadline(w.deadline, w.id);
        self.give_back_room_if_empty();
        Some(w.item)
    }

    /// Nobody waits: drop the deque's buffer and the deadline map's node (a removal
    /// keeps both), so an idle key's queue holds no memory.
    fn give_back_room_if_empty(&mut self) {
        if self.waiting.is_empty() {
            self.waiting = VecDeque::new();
            self.deadlines = BTreeMap::new();
        }
    }

    /// Remove every waiter matching `pred`, in order.
    pub fn cancel_where(&mut self, mut pred: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut removed = Vec::new();
        let mut kept = VecDeque::with_capacity(self.waiting.len());
        for w in self.waiting.drain(..) {
            if pred(&w.item) {
                removed.push(w.item);
            } else {
                kept.push_back(w);
            }
        }
        self.waiting = kept;
        self.rebuild_deadlines();
        self.give_back_room_if_empty();
        removed
    }

    fn rebuild_deadlines(&mut self) {
        self.deadlines.clear();
        for w in &self.waiting {
            *self.deadlines.entry((w.deadline, w.id)).or_insert(0) += 1;
        }
    }

    fn earliest_deadline(&self) -> Option<Timestamp> {
        self.deadlines.keys().next().map(|&(deadline, _)| deadline)
    }

    /// Expire overdue waiters, then try the head repeatedly until it must wait or the
    /// queue is empty. Each waiter that leaves is passed to `exit`. Returns the next
    /// instant worth waking at: the head's wait or the earliest remaining deadline.
    pub fn poll<G, R>(
        &mut self,
        now: Timestamp,
        mut try_head: impl FnMut(&mut T) -> Step<G, R>,
        mut exit: impl FnMut(T, Exit<G, R>),
    ) -> Option<Timestamp> {
        if self.earliest_deadline().is_some_and(|d| d <= now) {
            // Overdue waiters leave in queue order, in one pass.
            let mut kept = VecDeque::with_capacity(self.waiting.len());
            for w in self.waiting.drain(..) {
                if w.deadline <= now {
                    exit(w.item, Exit::DeadlineExceeded);
                } else {
                    kept.push_back(w);
                }
            }
            self.waiting = kept;
            self.deadlines.retain(|&(deadline, _), _| deadline > now);
        }
        let mut head_wait = None;
        while let Some(head) = self.waiting.front_mut() {
            match try_head(&mut head.item) {
                Step::Wait(at) => {
                    head_wait = Some(at);
                    break;
                }
                Step::Grant(g) => exit(self.pop(), Exit::Granted(g)),
                Step::Refuse(r) => exit(self.pop(), Exit::Refused(r)),
                Step::Drop => exit(self.pop(), Exit::Dropped),
            }
        }
        self.give_back_room_if_empty();
        match (head_wait, self.earliest_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn pop(&mut self) -> T {
        let w = self
            .waiting
            .pop_front()
            .expect("poll only pops an existing head");
        self.forget_deadline(w.deadline, w.id);
        w.item
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    /// Whether the queue holds any allocation.
    fn holds_room<T>(q: &WaitQueue<T>) -> bool {
        q.waiting.capacity() > 0 || !q.deadlines.is_empty()
    }

    #[test]
    fn a_queue_emptied_by_grants_cancellations_or_deadlines_holds_no_room() {
        let grant = |_: &mut &str| Step::<(), ()>::Grant(());
        let wait = |_: &mut &str| Step::<(), ()>::Wait(ms(500));
        let mut q = WaitQueue::default();
        q.push(1, ms(1_000), "a");
        q.push(2, ms(1_000), "b");
        q.poll(ms(0), grant, |_, _| {});
        assert!(q.is_empty());
        assert!(!holds_room(&q), "granted: no room left");

        q.push(3, ms(1_000), "c");
        q.poll(ms(0), wait, |_, _| {});
        assert!(holds_room(&q), "a waiter keeps its room");
        q.cancel(3);
        assert!(!holds_room(&q), "cancelled: no room left");

        q.push(4, ms(1_000), "d");
        q.cancel_where(|_| true);
        assert!(!holds_room(&q), "cancelled by scope: no room left");

        q.push(5, ms(10), "e");
        q.poll(ms(20), wait, |_, _| {});
        assert!(!holds_room(&q), "overdue: no room left");
    }

    #[test]
    fn head_blocks_the_line_and_overdue_waiters_leave() {
        let mut q = WaitQueue::default();
        q.push(1, ms(1_000), "big");
        q.push(2, ms(50), "small");
        let mut exits = Vec::new();
        let next = q.poll(
            ms(10),
            |item: &mut &str| {
                if *item == "big" {
                    Step::<(), ()>::Wait(ms(500))
                } else {
                    Step::Grant(())
                }
            },
            |item, exit| exits.push((item, exit)),
        );
        assert!(exits.is_empty(), "the small one must not overtake");
        assert_eq!(next, Some(ms(50)));
        q.poll(
            ms(50),
            |_| Step::<(), ()>::Wait(ms(500)),
            |item, exit| exits.push((item, exit)),
        );
        assert_eq!(exits, vec![("small", Exit::DeadlineExceeded)]);
    }

    #[test]
    fn cancelled_waiter_is_never_tried() {
        let mut q = WaitQueue::default();
        q.push(1, ms(1_000), 1);
        q.push(2, ms(1_000), 2);
        assert_eq!(q.cancel(1), Some(1));
        let mut tried = Vec::new();
        q.poll(
            ms(0),
            |i: &mut i32| {
                tried.push(*i);
                Step::<(), ()>::Grant(())
            },
            |_, _| {},
        );
        assert_eq!(tried, vec![2]);
    }

    /// One step of a random workload: push a waiter (its id and deadline), cancel one by
    /// id, cancel every odd id, or poll at an instant with the head granted or waiting.
    #[derive(Debug, Clone)]
    enum Op {
        Push(u64, u64),
        Cancel(u64),
        CancelOdd,
        Poll(u64, bool),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0u64..20, 0u64..100).prop_map(|(id, d)| Op::Push(id, d)),
            (0u64..20).prop_map(Op::Cancel),
            Just(Op::CancelOdd),
            (0u64..100, any::<bool>()).prop_map(|(t, g)| Op::Poll(t, g)),
        ]
    }

    proptest::proptest! {
        /// The ordered deadlines change no answer: every poll exits the same waiters in
        /// the same order, and names the same wake-up, as a scan of the FIFO (the queue's
        /// former rule) would.
        #[test]
        fn polls_answer_as_a_scan_of_every_waiter_would(ops in proptest::collection::vec(op(), 0..60)) {
            let mut q = WaitQueue::default();
            // The model: (id, deadline, item) in arrival order.
            let mut model: Vec<(u64, u64, usize)> = Vec::new();
            for (n, op) in ops.into_iter().enumerate() {
                match op {
                    Op::Push(id, d) => {
                        q.push(id, ms(d), n);
                        model.push((id, d, n));
                    }
                    Op::Cancel(id) => {
                        let expected = model.iter().position(|w| w.0 == id).map(|p| model.remove(p).2);
                        proptest::prop_assert_eq!(q.cancel(id), expected);
                    }
                    Op::CancelOdd => {
                        let removed = q.cancel_where(|item| item % 2 == 1);
                        let expected: Vec<usize> = model.iter().map(|w| w.2).filter(|i| i % 2 == 1).collect();
                        model.retain(|w| w.2 % 2 == 0);
                        proptest::prop_assert_eq!(removed, expected);
                    }
                    Op::Poll(t, grant) => {
                        let mut exits = Vec::new();
                        let next = q.poll(
                            ms(t),
                            |_| if grant { Step::<(), ()>::Grant(()) } else { Step::Wait(ms(t + 7)) },
                            |item, exit| exits.push((item, exit)),
                        );
                        let mut expected = Vec::new();
                        model.retain(|w| {
                            let overdue = w.1 <= t;
                            if overdue {
                                expected.push((w.2, Exit::DeadlineExceeded));
                            }
                            !overdue
                        });
                        let mut head_wait = None;
                        if grant {
                            expected.extend(model.drain(..).map(|w| (w.2, Exit::Granted(()))));
                        } else if !model.is_empty() {
                            head_wait = Some(t + 7);
                        }
                        let earliest = model.iter().map(|w| w.1).min();
                        let expected_next = match (head_wait, earliest) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        };
                        proptest::prop_assert_eq!(exits, expected);
                        proptest::prop_assert_eq!(next, expected_next.map(ms));
                    }
                }
                proptest::prop_assert_eq!(q.len(), model.len());
            }
        }
    }
}
