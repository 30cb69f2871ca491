//! A key whose store fills up admits again once space is freed, without a restart
//! (issue 24, item 5): the coordinator's real sled store on a small tmpfs that the test
//! fills. While the disk is full the persister's writes fail, and the failure stops
//! dispatch: new keys are refused with a storage error as soon as a write has failed (a
//! new key's provisional first grants go before its first record, so the keys admitted
//! in the meantime pass, each charged to a successor should this coordinator die, as
//! docs/architecture.md says); once the filler is
//! removed, the persister's retry stores the queued records and the store reopens sled,
//! which keeps its first I/O error otherwise. Needs root (it mounts a tmpfs), so it is
//! `#[ignore]`d; `scripts/test` runs it explicitly as root.

use std::time::Duration;

use tollgate_actors::{connect, AdmissionError, CoordinatorSpec, WaitOptions};
use tollgate_quota::{Policy, QuotaKey};
use tollgate_storage::AdmissionDir;
use tollgate_testkit::runtime;
use tollgate_testkit::tmpfs::Tmpfs;

fn key(n: u32) -> QuotaKey {
    format!("aws/123456789012/eu-west-1/ec2:Describe{n}")
        .parse()
        .unwrap()
}

const WAIT: WaitOptions = WaitOptions {
    timeout: Duration::from_secs(5),
    scope: None,
};

#[test]
#[ignore = "needs root: mounts a tmpfs"]
fn a_key_whose_store_filled_up_admits_again_once_space_is_freed_without_a_restart() {
    let fs = Tmpfs::mount("4m");
    let dir = AdmissionDir::at(fs.path().join("adm")).unwrap();
    let coordinator = connect(&dir, CoordinatorSpec::none()).unwrap();
    assert!(coordinator.is_coordinator());
    let handle = coordinator.handle();
    let policy = Policy::new(100.0, 100.0, 10, 20).unwrap();
    let rt = runtime();
    rt.block_on(async {
        let admit = |n| {
            let handle = handle.clone();
            async move {
                let slot = handle.reserve(&key(n), policy, WAIT).await?;
                slot.admit(1, false, WAIT).await.map(drop)
            }
        };
        admit(0).await.expect("admits while the disk has room");
        let filler = fs.fill("filler");
        // New keys' records go to the persister (gathered up to 20 ms): once a write has
        // failed, the next new key is refused. Within seconds of real time either way.
        let mut refused = None;
        for n in 1..2_000 {
            if let Err(e) = admit(n).await {
                refused = Some((n, e));
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (full_at, error) = refused.expect("a key is refused while the disk is full");
        assert!(
            matches!(error, AdmissionError::Storage(_)),
            "a storage refusal, not {error:?}"
        );
        assert!(error.to_string().contains("space"), "{error}");
        std::fs::remove_file(&filler).unwrap();
        // The persister retries after 50 ms, doubling to 2 s: within seconds of real time
        // the refused key (and a fresh one) admit again, in the same process.
        let mut admitted = false;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if admit(full_at).await.is_ok() {
                admitted = true;
                break;
            }
        }
        assert!(admitted, "the refused key admits again once space is freed");
        admit(1_000).await.expect("a fresh key admits too");
    });
    rt.block_on(coordinator.shutdown()).unwrap();
}
