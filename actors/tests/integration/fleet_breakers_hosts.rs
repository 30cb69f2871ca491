//! The spec path of fleet breakers: with fleet mode and a breaker store in the
//! coordinator spec, every coordinator started with it shares its breakers through the
//! store. Two
//! admission directories are two hosts (each its own coordinator, host id and breaker
//! board) over one in-memory table. Real clock: the test waits for conditions, never
//! asserts a speed.

use std::sync::Arc;
use std::time::Duration;

use tollgate_actors::fleet::{MemoryBreakerStore, MemoryFleetStore};
use tollgate_actors::{connect, AdmissionError, AdmissionHandle, CoordinatorSpec, FleetSpec};
use tollgate_quota::fleet::FleetConfig;
use tollgate_quota::{BreakerScope, Outcome, Passage, QuotaKey};
use tollgate_storage::AdmissionDir;
use tollgate_testkit::runtime;

fn key() -> QuotaKey {
    "aws/123456789012/eu-west-1/ec2:describe".parse().unwrap()
}

/// Poll `check` every 10 ms for up to 10 s.
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..1_000 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: not within 10 s");
}

async fn refused(handle: &AdmissionHandle) -> bool {
    matches!(
        handle.breaker_pass(&key(), Duration::ZERO).await,
        Err(AdmissionError::BreakerOpen { .. })
    )
}

#[test]
fn a_coordinator_in_fleet_mode_publishes_its_opening_and_another_host_adopts_it() {
    let breakers = Arc::new(MemoryBreakerStore::new());
    let spec = CoordinatorSpec::none().with_fleet(Some(FleetSpec {
        store: Arc::new(MemoryFleetStore::new()),
        config: FleetConfig::default(),
        breakers: Some(breakers.clone()),
    }));

    let tmp = tempfile::tempdir().unwrap();
    let host_a = connect(
        &AdmissionDir::at(tmp.path().join("a")).unwrap(),
        spec.clone(),
    )
    .unwrap();
    let host_b = connect(&AdmissionDir::at(tmp.path().join("b")).unwrap(), spec).unwrap();
    assert!(host_a.is_coordinator() && host_b.is_coordinator());
    let (a, b) = (host_a.handle(), host_b.handle());
    let scope = BreakerScope::of(&key());
    runtime().block_on(async {
        for _ in 0..5 {
            assert_eq!(
                a.breaker_pass(&key(), Duration::ZERO).await.unwrap(),
                Passage::Go
            );
            a.breaker_report(&key(), Some(Outcome::Transient), None);
        }
        eventually("A's opening reaches the table", || async {
            breakers
                .item(&scope)
                .is_some_and(|v| v.item.failing_since.is_some())
        })
        .await;
        assert!(refused(&a).await);
        assert_eq!(
            b.breaker_pass(&key(), Duration::ZERO).await.unwrap(),
            Passage::Go,
            "B has seen no failure yet"
        );
        b.breaker_report(&key(), Some(Outcome::Transient), None);
        eventually("B adopts A's opening on its first failure", || refused(&b)).await;
        let status = b.coordination().await.unwrap();
        assert!(status.breakers[0].from_fleet, "{:?}", status.breakers);
    });
    runtime().block_on(async {
        host_a.shutdown().await.unwrap();
        host_b.shutdown().await.unwrap();
    });
}
