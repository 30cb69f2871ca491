//! A FIFO of waiting requests with deadlines and cancellation, independent of what waits.
//!
//! Only the head is ever tried, so nobody is overtaken: a waiter that needs a large cost
//! is not starved by a stream of small ones behind it. A waiter whose deadline passes is
//! removed wherever it stands, and a cancelled one is removed before it can be tried, so a
//! cancelled waiter never starts. The quota actor keeps one queue for reservations and
//! one for final admission; the queue itself is pure and is tested with simulated time.

use std::collections::VecDeque;

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
}

impl<T> Default for WaitQueue<T> {
    fn default() -> Self {
        WaitQueue {
            waiting: VecDeque::new(),
        }
    }
}

impl<T> WaitQueue<T> {
    /// Add a waiter at the tail.
    pub fn push(&mut self, id: u64, deadline: Timestamp, item: T) {
        self.waiting.push_back(Waiting { id, deadline, item });
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
        self.waiting.remove(pos).map(|w| w.item)
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
        removed
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
        if self.waiting.iter().any(|w| w.deadline <= now) {
            let mut kept = VecDeque::with_capacity(self.waiting.len());
            for w in self.waiting.drain(..) {
                if w.deadline <= now {
                    exit(w.item, Exit::DeadlineExceeded);
                } else {
                    kept.push_back(w);
                }
            }
            self.waiting = kept;
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
        let earliest_deadline = self.waiting.iter().map(|w| w.deadline).min();
        match (head_wait, earliest_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn pop(&mut self) -> T {
        self.waiting
            .pop_front()
            .map(|w| w.item)
            .expect("poll only pops an existing head")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
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
}
