//! Who we are and whether another process still exists.
//!
//! Reservations and the lock file record process ids (DESIGN §5); a new
//! coordinator removes reservations of processes that are gone. This module
//! answers "is pid N alive?" without signalling it, using `kill(pid, 0)`.

use rustix::io::Errno;
use rustix::process::{test_kill_process, Pid};

/// The id of this process.
pub fn current_pid() -> u32 {
    std::process::id()
}

/// The real user id of this process; admission state is shared per user.
pub fn current_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Whether a process with this id exists.
///
/// EPERM means it exists but belongs to someone else, so it counts as alive;
/// ESRCH means it is gone. Any other failure also counts as alive, because
/// treating a live process as dead could release its reservations and
/// over-admit. Pid 0 and ids above `i32::MAX` are never valid targets.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    let Some(pid) = Pid::from_raw(raw) else {
        return false;
    };
    match test_kill_process(pid) {
        Ok(()) => true,
        Err(Errno::SRCH) => false,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive() {
        assert!(pid_alive(current_pid()));
    }

    #[test]
    fn invalid_pids_are_not_alive() {
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
        assert!(!pid_alive(i32::MAX as u32 + 1));
    }

    #[test]
    fn an_exited_child_is_not_alive() {
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn `true`");
        let pid = child.id();
        child.wait().expect("reap child");
        // Reaped, so the pid is free; it could be reused, but not this fast in
        // practice on a 2^22 pid space.
        assert!(!pid_alive(pid));
    }

    #[test]
    fn uid_matches_the_owner_of_a_file_we_create() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let meta = std::fs::metadata(dir.path()).unwrap();
        assert_eq!(meta.uid(), current_uid());
    }
}
