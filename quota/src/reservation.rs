//! Concurrency reservations: who holds one of the key's `concurrency` slots, until when.
//!
//! A reservation is taken before the SDK prepares a request and held across its retries,
//! so concurrency bounds requests, not attempts. Each records its owner (pid and the
//! owner's generation, which tells apart two lives of one pid) and an expiry that follows
//! the caller's deadline. Reservations of processes that no longer exist, or past their
//! expiry, are reaped: a crash can hold a slot until then, never forever.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// Identifies one reservation within one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReservationId(pub u64);

/// The process that holds a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Owner {
    /// OS process id.
    pub pid: u32,
    /// The owner's generation: a value that differs between two lives of one pid.
    pub generation: u64,
}

/// One held slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    /// Who holds it.
    pub owner: Owner,
    /// When it lapses if not released.
    pub expires_at: Timestamp,
}

/// The held slots of one key.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Reservations {
    next_id: u64,
    held: BTreeMap<ReservationId, Reservation>,
}

impl Reservations {
    /// Slots in use.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// True when no slot is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Look up a reservation that is still valid at `now`.
    pub fn get(&self, id: ReservationId, now: Timestamp) -> Option<&Reservation> {
        self.held.get(&id).filter(|r| r.expires_at > now)
    }

    /// Take a slot if fewer than `concurrency` are held; otherwise the earliest instant a
    /// held slot lapses by expiry (a release may free one sooner).
    pub fn try_reserve(
        &mut self,
        owner: Owner,
        expires_at: Timestamp,
        concurrency: u32,
    ) -> Result<ReservationId, Timestamp> {
        if self.held.len() >= concurrency as usize {
            let earliest = self
                .held
                .values()
                .map(|r| r.expires_at)
                .min()
                .unwrap_or(expires_at);
            return Err(earliest);
        }
        let id = ReservationId(self.next_id);
        self.next_id += 1;
        self.held.insert(id, Reservation { owner, expires_at });
        Ok(id)
    }

    /// Give a slot back; false if it was not held (already reaped or released).
    pub fn release(&mut self, id: ReservationId) -> bool {
        let released = self.held.remove(&id).is_some();
        self.give_back_room_if_empty();
        released
    }

    /// Remove every reservation held by `owner`; returns how many.
    pub fn release_owner(&mut self, owner: Owner) -> usize {
        let before = self.held.len();
        self.held.retain(|_, r| r.owner != owner);
        self.give_back_room_if_empty();
        before - self.held.len()
    }

    /// Remove reservations past expiry at `now` or whose owner pid is gone.
    /// Returns how many were removed.
    pub fn reap(&mut self, now: Timestamp, pid_alive: &dyn Fn(u32) -> bool) -> usize {
        let before = self.held.len();
        self.held
            .retain(|_, r| r.expires_at > now && pid_alive(r.owner.pid));
        self.give_back_room_if_empty();
        before - self.held.len()
    }

    /// No slot is held: drop the map's node (a removal keeps it), so an idle key holds no
    /// memory for its reservations (about 370 bytes otherwise, for every key an
    /// organization scan keeps alive after use: issue 35).
    fn give_back_room_if_empty(&mut self) {
        if self.held.is_empty() {
            self.held = BTreeMap::new();
        }
    }

    /// The held reservations, by id.
    pub fn iter(&self) -> impl Iterator<Item = (ReservationId, &Reservation)> {
        self.held.iter().map(|(id, r)| (*id, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Owner = Owner {
        pid: 10,
        generation: 1,
    };
    const GONE: Owner = Owner {
        pid: 11,
        generation: 1,
    };

    fn ms(v: u64) -> Timestamp {
        Timestamp::from_millis(v)
    }

    #[test]
    fn concurrency_is_a_hard_cap() {
        let mut r = Reservations::default();
        let a = r.try_reserve(ME, ms(100), 2).unwrap();
        r.try_reserve(ME, ms(50), 2).unwrap();
        assert_eq!(r.try_reserve(ME, ms(100), 2), Err(ms(50)));
        assert!(r.release(a));
        assert!(!r.release(a));
        assert!(r.try_reserve(ME, ms(100), 2).is_ok());
    }

    #[test]
    fn reaps_dead_owners_and_expired_slots() {
        let mut r = Reservations::default();
        r.try_reserve(ME, ms(100), 10).unwrap();
        r.try_reserve(ME, ms(10), 10).unwrap();
        r.try_reserve(GONE, ms(100), 10).unwrap();
        let removed = r.reap(ms(20), &|pid| pid == ME.pid);
        assert_eq!(removed, 2);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn ids_are_never_reused_after_the_last_slot_is_given_back() {
        let mut r = Reservations::default();
        let a = r.try_reserve(ME, ms(100), 2).unwrap();
        let b = r.try_reserve(ME, ms(100), 2).unwrap();
        r.release(a);
        r.release(b);
        assert!(r.is_empty());
        let c = r.try_reserve(ME, ms(100), 2).unwrap();
        assert_eq!(c, ReservationId(2), "after {a:?} and {b:?}");
        r.reap(ms(100), &|_| true);
        assert_eq!(r.try_reserve(ME, ms(200), 2), Ok(ReservationId(3)));
    }

    #[test]
    fn expired_reservation_is_not_valid() {
        let mut r = Reservations::default();
        let id = r.try_reserve(ME, ms(10), 1).unwrap();
        assert!(r.get(id, ms(9)).is_some());
        assert!(r.get(id, ms(10)).is_none());
    }
}
