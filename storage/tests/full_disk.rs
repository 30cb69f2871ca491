//! A full filesystem under a real sled store (issue 24, item 5): writes fail while the
//! disk is full and succeed again once space is freed, without reopening the store by
//! hand (sled keeps its first I/O error forever; the store reopens the database).
//! Needs root (it mounts a small tmpfs), so it is `#[ignore]`d; `scripts/test` runs it
//! explicitly as root.

use tollgate_storage::{AdmissionDir, CoordinatorLock, QuotaStore, SledStore, StorageErrorKind};
use tollgate_testkit::tmpfs::Tmpfs;

#[test]
#[ignore = "needs root: mounts a tmpfs"]
fn a_sled_store_on_a_full_filesystem_fails_writes_then_takes_them_once_space_is_freed() {
    let fs = Tmpfs::mount("4m");
    let dir = AdmissionDir::at(fs.path().join("adm")).unwrap();
    let lock = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
    let store = SledStore::open(&dir, &lock).unwrap().store;
    store.save("before", b"v").unwrap();
    store.flush().unwrap();
    let filler = fs.fill("filler");
    let failed = (0..1_000)
        .find_map(|i| {
            store
                .save(&format!("k{i}"), &[b'x'; 4096])
                .and_then(|()| store.flush())
                .err()
        })
        .expect("a write fails on a full filesystem");
    assert_eq!(failed.kind(), StorageErrorKind::Io, "{failed}");
    assert!(failed.to_string().contains("check disk space"), "{failed}");
    std::fs::remove_file(&filler).unwrap();
    store.save("after", b"v").unwrap();
    store.flush().unwrap();
    assert_eq!(store.load("after").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(
        store.load("before").unwrap().as_deref(),
        Some(&b"v"[..]),
        "what was flushed before the disk filled survives the reopening"
    );
}
