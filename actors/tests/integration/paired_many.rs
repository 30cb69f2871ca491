//! Admission charged on several keys at once (issue 33: a Cloud Control call spends its
//! own key and one token of each underlying operation), in paused time: the binding key
//! paces the attempt, every key is charged at the same instant, and a key shared with
//! plain callers never admits more than its policy allows.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::{
    paused_system, start_in_current_system, AdmissionHandle, BudgetCharge, CanonicalKey,
    RuntimeConfig, TokioClock, WaitOptions,
};
use tollgate_quota::{Owner, Policy, QuotaKey, Timestamp};
use tollgate_storage::MemoryStore;

fn key(text: &str) -> QuotaKey {
    text.parse().unwrap()
}

fn cloudcontrol() -> QuotaKey {
    key("aws/123456789012/us-east-1/cloudcontrol:ListResources")
}

fn list_roles() -> QuotaKey {
    key("aws/123456789012/-/iam:ListRoles")
}

fn list_policies() -> QuotaKey {
    key("aws/123456789012/-/iam:ListPolicies")
}

fn start() -> AdmissionHandle {
    let config = RuntimeConfig::simulated(Owner {
        pid: 1,
        generation: 1,
    });
    let config = RuntimeConfig {
        store: Arc::new(MemoryStore::new()),
        ..config
    };
    start_in_current_system(config, Arc::new(TokioClock::starting_at(Timestamp::ZERO)))
}

fn charge(key: &QuotaKey, policy: Policy) -> BudgetCharge {
    BudgetCharge {
        key: CanonicalKey::new(key),
        policy,
        cost: 1,
    }
}

/// `n` attempts on the Cloud Control key, each also charging `budgets`: their
/// admission instants in ms.
async fn charged(
    handle: &AdmissionHandle,
    own: Policy,
    budgets: &[BudgetCharge],
    n: usize,
) -> Vec<u64> {
    let slot = handle
        .reserve(&cloudcontrol(), own, WaitOptions::default())
        .await
        .unwrap();
    let mut at = Vec::new();
    for _ in 0..n {
        let grant = slot
            .admit_with_budgets(1, false, budgets.to_vec(), WaitOptions::default())
            .await
            .unwrap();
        at.push(grant.admitted_at.as_micros() / 1_000);
    }
    slot.release();
    at
}

#[test]
fn the_slowest_of_three_keys_paces_an_attempt_charged_on_all_of_them() {
    paused_system().block_on(async {
        let handle = start();
        let own = Policy::with_rate(100.0, 100.0).unwrap();
        let roles = Policy::with_rate(2.0, 2.0).unwrap();
        let policies = Policy::with_rate(50.0, 50.0).unwrap();
        let budgets = [
            charge(&list_roles(), roles),
            charge(&list_policies(), policies),
        ];
        let at = charged(&handle, own, &budgets, 5).await;
        // iam:ListRoles binds: its burst of 2 at once, then two per rolling second (its
        // window of starts), as it would alone.
        assert_eq!(at, vec![0, 0, 1_000, 1_000, 2_000]);
        let status = handle.status().await.unwrap();
        for k in [cloudcontrol(), list_roles(), list_policies()] {
            let row = status.iter().find(|s| s.key == k.to_string());
            assert!(row.is_some(), "{k} was charged and reports its status");
        }
        handle.shutdown().await.unwrap();
    });
}

#[test]
fn no_budgets_admit_as_a_plain_admission() {
    paused_system().block_on(async {
        let handle = start();
        let own = Policy::with_rate(1.0, 1.0).unwrap();
        let at = charged(&handle, own, &[], 3).await;
        assert_eq!(at, vec![0, 1_000, 2_000]);
        handle.shutdown().await.unwrap();
    });
}

#[test]
fn an_underlying_key_shared_with_plain_callers_never_admits_beyond_its_policy() {
    // Two Cloud Control callers and one direct iam:ListRoles caller compete for two
    // tokens a second (burst 2): every grant of the shared key, from either path, fits
    // the bucket (at most 2 + 2t tokens by t seconds), and every caller gets through.
    paused_system().block_on(async {
        let handle = start();
        let own = Policy::with_rate(100.0, 100.0).unwrap();
        let roles = Policy::with_rate(2.0, 2.0).unwrap();
        let budgets = vec![charge(&list_roles(), roles)];
        let (a, b) = (handle.clone(), handle.clone());
        let (ba, bb) = (budgets.clone(), budgets.clone());
        let one = actix::spawn(async move { charged(&a, own, &ba, 4).await });
        let two = actix::spawn(async move { charged(&b, own, &bb, 4).await });
        let direct = handle
            .reserve(&list_roles(), roles, WaitOptions::default())
            .await
            .unwrap();
        let mut at = Vec::new();
        for _ in 0..4 {
            let grant = direct
                .admit(1, false, WaitOptions::default())
                .await
                .unwrap();
            at.push(grant.admitted_at.as_micros() / 1_000);
        }
        direct.release();
        at.extend(one.await.unwrap());
        at.extend(two.await.unwrap());
        at.sort_unstable();
        assert_eq!(at.len(), 12, "every caller got through: {at:?}");
        for (n, ms) in at.iter().enumerate() {
            let allowed = 2 + 2 * ms / 1_000;
            assert!(
                (n as u64) < allowed,
                "grant {} at {ms} ms is over the bucket's {allowed}: {at:?}",
                n + 1
            );
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        handle.shutdown().await.unwrap();
    });
}
