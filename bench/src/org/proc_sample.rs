//! What a process costs, read from `/proc/<pid>`: its resident set (`VmRSS` of
//! `status`) and its CPU time (`utime + stime` of `stat`, in clock ticks of 1/100 s,
//! Linux's fixed USER_HZ), and whether it has exited (a zombie keeps its times until it
//! is reaped, so a child's final CPU time is read before waiting for it).

use std::path::PathBuf;
use std::time::Duration;

/// Linux exports `/proc/<pid>/stat` times in USER_HZ, 100 per second on every arch.
const TICKS_PER_SECOND: u64 = 100;

/// One reading of a process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// Resident set, in kB (0 once it has exited).
    pub rss_kb: u64,
    /// User plus system CPU time.
    pub cpu: Duration,
    /// It has exited and waits to be reaped.
    pub zombie: bool,
}

fn dir(pid: u32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}"))
}

/// Read `pid` now; None when it is gone.
pub fn read(pid: u32) -> Option<Reading> {
    let stat = std::fs::read_to_string(dir(pid).join("stat")).ok()?;
    let status = std::fs::read_to_string(dir(pid).join("status")).unwrap_or_default();
    parse(&stat, &status)
}

/// The reading in `stat` and `status` texts.
pub fn parse(stat: &str, status: &str) -> Option<Reading> {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    let state = *fields.first()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let ticks = utime + stime;
    let rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Some(Reading {
        rss_kb,
        cpu: Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND),
        zombie: state == "Z",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_after_a_command_name_with_spaces_and_rss_from_status() {
        let stat = "4242 (tollgate (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 \
                    250 75 0 0 20 0 9 0 100 123456 789 18446744073709551615";
        let status = "Name:\ttollgate\nVmPeak:\t  900 kB\nVmRSS:\t   51234 kB\n";
        let r = parse(stat, status).unwrap();
        assert_eq!(r.cpu, Duration::from_millis(3250));
        assert_eq!(r.rss_kb, 51234);
        assert!(!r.zombie);
        let z = parse(&stat.replace(") S ", ") Z "), "").unwrap();
        assert!(z.zombie && z.rss_kb == 0);
    }

    #[test]
    fn this_process_can_be_read() {
        let r = read(std::process::id()).unwrap();
        assert!(r.rss_kb > 0);
    }
}
