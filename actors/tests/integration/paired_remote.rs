//! Paired admission (a GetMetricData attempt's request key and its datapoint budget) on
//! the real clock, through the coordinator socket as `Engine::open` uses it. In paused
//! time no time passes between the coordinator sending the second key's try and the
//! actor serving it; on the real clock it does, and a try bounded by a deadline computed
//! before the hop (1 µs ahead) had always expired on arrival: every round refunded its
//! lead and swapped, and a lone caller on two free keys waited out its whole deadline.

use std::time::Duration;

use tollgate_actors::{connect, CoordinatorSpec, WaitOptions};
use tollgate_quota::{Outcome, Policy, QuotaKey};
use tollgate_storage::AdmissionDir;
use tollgate_testkit::runtime;

fn request_key() -> QuotaKey {
    "aws/123456789012/us-east-1/cloudwatch:GetMetricData"
        .parse()
        .unwrap()
}

fn budget_key() -> QuotaKey {
    "aws/123456789012/us-east-1/cloudwatch:GetMetricData:recent-datapoints"
        .parse()
        .unwrap()
}

#[test]
fn a_lone_paired_admission_on_free_keys_passes_at_once_through_the_coordinator_on_the_real_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = AdmissionDir::at(tmp.path().join("adm")).unwrap();
    let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(coordinator.is_coordinator());
    let client = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(!client.is_coordinator());
    let request_policy = Policy::new(500.0, 500.0, 10, 20).unwrap();
    let budget_policy = Policy::new(180_000.0, 180_000.0, 10, 20).unwrap();
    let rt = runtime();
    rt.block_on(async {
        for handle in [coordinator.handle(), client.handle()] {
            let slot = handle
                .reserve(&request_key(), request_policy, WaitOptions::default())
                .await
                .unwrap();
            for _ in 0..3 {
                // Far more than a round takes; the bug spun rounds until this passed.
                let wait = WaitOptions {
                    timeout: Duration::from_secs(2),
                    scope: None,
                };
                let grant = slot
                    .admit_with_budget(1, false, &budget_key(), budget_policy, 7_000, wait)
                    .await
                    .unwrap_or_else(|e| panic!("both keys are free: {e}"));
                slot.feedback(Outcome::Success, &grant);
            }
            drop(slot);
        }
        coordinator.shutdown().await.unwrap();
    });
}
