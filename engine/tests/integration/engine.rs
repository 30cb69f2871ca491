//! The engine end to end on a real admission directory: sled state, the actor thread,
//! and a caller on its own tokio runtime.

use tollgate_engine::{Engine, EngineConfig};
use tollgate_quota::{Outcome, QuotaKey};
use tollgate_storage::DirEnv;

fn config(dir: &std::path::Path) -> EngineConfig {
    EngineConfig {
        dir_env: DirEnv {
            explicit: Some(dir.to_path_buf()),
            xdg_cache_home: None,
            home: None,
            temp_dir: std::env::temp_dir(),
            uid: tollgate_storage::current_uid(),
        },
        policies: tollgate_quota::PolicyTable::defaults(),
        fleet: None,
    }
}

#[tokio::test]
async fn second_engine_joins_as_client_and_state_survives_a_clean_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("admission");
    let key: QuotaKey = "aws/123456789012/us-east-1/kms:GetKeyLastUsage"
        .parse()
        .unwrap();

    let engine = Engine::open(config(&dir)).unwrap();
    assert!(
        engine.is_coordinator(),
        "the first process takes the coordinator role"
    );
    let policy = engine.policies().policy_for_key(&key);
    assert_eq!(
        policy.rate_per_second(),
        5.0,
        "the KMS GetKeyLastUsage default"
    );
    let handle = engine.admission();
    let slot = handle
        .reserve(&key, policy, Default::default())
        .await
        .unwrap();
    let retry = slot.admit(1, true, Default::default()).await.unwrap();
    slot.feedback(Outcome::Throttled, &retry);
    slot.release();

    // A second engine on the same directory is a client of the first: same key, same state.
    let second = Engine::open(config(&dir)).unwrap();
    assert!(!second.is_coordinator());
    let seen = second.admission().status().await.unwrap();
    let kms = seen
        .iter()
        .find(|s| s.key == key.to_string())
        .expect("shared state");
    assert_eq!(
        kms.state.penalty_steps, 1,
        "the client sees the coordinator's penalty"
    );
    second.close().await.unwrap();

    // While this engine holds the directory, nobody else can take the lock.
    let dir_for_thread = dir.clone();
    let blocked = std::thread::spawn(move || {
        let mut cfg = config(&dir_for_thread);
        cfg.dir_env.explicit = Some(dir_for_thread);
        tollgate_storage::CoordinatorLock::try_acquire(
            &tollgate_storage::AdmissionDir::resolve(&cfg.dir_env).unwrap(),
        )
        .unwrap()
        .is_none()
    })
    .join()
    .unwrap();
    assert!(blocked);

    engine.close().await.unwrap();

    let engine = Engine::open(config(&dir)).unwrap();
    assert!(engine.is_coordinator());
    let status = engine.admission().status().await.unwrap();
    let kms = status
        .iter()
        .find(|s| s.key == key.to_string())
        .expect("the key was stored");
    assert_eq!(kms.state.penalty_steps, 1);
    assert_eq!(kms.state.retry_units, 19);
    assert_eq!(kms.state.reservations, 0);
    engine.close().await.unwrap();

    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let meta = entry.unwrap().metadata().unwrap();
        let mode = meta.permissions().mode() & 0o777;
        assert!(mode == 0o600 || mode == 0o700, "mode {mode:o}");
    }
}

/// Overrides whose schedule is always in force: `kms:ListKeys` at `rate` per second.
fn scheduled(rate: u32) -> tollgate_quota::PolicyTable {
    let json = format!(
        r#"{{"kms:ListKeys": {{"ratePerSecond": 100, "burst": 4,
            "schedule": [{{"cron": "* * * * *", "timezone": "UTC", "ratePerSecond": {rate}, "burst": 1}}]}}}}"#
    );
    tollgate_quota::PolicyTable::with_overrides(&json, "test overrides").unwrap()
}

/// Admit one attempt on `key` through `engine`; the rate the coordinator enforced.
async fn enforced_rate(engine: &Engine, key: &QuotaKey) -> f64 {
    let handle = engine.admission();
    let policy = engine.policies().policy_for_key(key);
    let slot = handle
        .reserve(key, policy, Default::default())
        .await
        .unwrap();
    slot.admit(1, false, Default::default()).await.unwrap();
    slot.release();
    let status = handle.status().await.unwrap();
    let seen = status.iter().find(|s| s.key == key.to_string()).unwrap();
    assert_eq!(seen.calendar.and_then(|c| c.entry), Some(0), "scheduled");
    seen.state.policy.rate_per_second()
}

/// Regression (issue 20): the schedules lived in a process-wide static written by every
/// `Engine::open`, so a client that took over a directory's coordinator role enforced
/// whatever engine had opened last in the process, not its own configuration.
#[tokio::test]
async fn two_engines_in_one_process_each_keep_their_own_schedules_through_a_takeover() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir_a, dir_b) = (tmp.path().join("a"), tmp.path().join("b"));
    let key: QuotaKey = "aws/123456789012/eu-west-1/kms:ListKeys".parse().unwrap();
    let with = |dir: &std::path::Path, rate| EngineConfig {
        policies: scheduled(rate),
        ..config(dir)
    };

    let first_a = Engine::open(with(&dir_a, 2)).unwrap();
    let client_a = Engine::open(with(&dir_a, 2)).unwrap();
    assert!(first_a.is_coordinator() && !client_a.is_coordinator());
    // Opened last: with a process-wide install, its schedules would be everyone's.
    let engine_b = Engine::open(with(&dir_b, 7)).unwrap();
    assert!(engine_b.is_coordinator());
    assert_eq!(enforced_rate(&engine_b, &key).await, 7.0);
    assert_eq!(enforced_rate(&first_a, &key).await, 2.0);

    // A's client takes the role over when A leaves, with A's configuration.
    first_a.close().await.unwrap();
    assert_eq!(enforced_rate(&client_a, &key).await, 2.0);
    assert_eq!(enforced_rate(&engine_b, &key).await, 7.0);
    client_a.close().await.unwrap();
    engine_b.close().await.unwrap();
}
