//! `bench admission --processes P --serve --stand-in`: a stand-in for `tollgate serve` of
//! another shape, to measure what that shape would reach with tollgate's own clients.
//!
//! Issue 35 asks the cross-process admission p50 to stay within 2× a blocking Unix-socket
//! echo's. The echo floors (`--floor`) showed that no event-loop coordinator can: an echo
//! shaped like tollgate, deciding nothing, is already at about 2×; only a server that
//! reads on a thread per client, deciding there under a lock (`--floor locked`), leaves
//! room. That means taking each key's state out of its actor (DESIGN §3's rules would
//! then hold under a lock shared by threads), which is a decision above the issue. This
//! stand-in measures that shape with what an echo lacks: tollgate's real clients, its
//! frames and JSON codec, and the quota maths.
//!
//! It is **not a coordinator**: it holds the directory's lock and socket, as a coordinator
//! does, so the workers join it as clients; then a thread per client, blocked in `read`,
//! decodes each request and answers it from the key's [`QuotaState`], all keys in one map
//! under one lock. It answers hello, ping, reserve (and reserve-and-pass, always passed),
//! admit, release and feedback (accepted, not applied); any other operation, and any
//! admission the state does not grant at once, is answered with an error. Nothing is
//! persisted, nothing waits, no lease is written ahead, no peer is checked: none of the
//! rules that make the real coordinator safe. Those are what a real coordinator of this
//! shape would add to these figures.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use tollgate_actors::ops::{Answer, Operation};
use tollgate_actors::remote::frame::{self, FrameReader};
use tollgate_actors::remote::protocol::{Request, RequestBody, Response, ResponseBody, WireError};
use tollgate_actors::{CanonicalKey, TokioClock};
use tollgate_quota::{
    Admission, AdmitRequest, Clock, Owner, Passage, Policy, QuotaState, ReservationId, Timestamp,
};
use tollgate_storage::{AdmissionDir, CoordinatorLock};

/// The hidden subcommand that runs the stand-in.
pub const STAND_IN: &str = "stand-in-coordinator";

/// How long a reservation lives at least (the bench's workers hold one for the run).
const RESERVATION_LIFETIME: Duration = Duration::from_secs(600);

/// The stand-in's arguments.
#[derive(Debug, clap::Args)]
pub struct StandInArgs {
    /// The admission directory whose lock and socket it takes.
    #[arg(long)]
    pub dir: PathBuf,
}

/// Every key's state, under one lock.
type Keys = Arc<Mutex<HashMap<CanonicalKey, QuotaState>>>;

/// What every client thread shares.
#[derive(Clone)]
struct Shared {
    keys: Keys,
    clock: TokioClock,
    generation: u64,
}

/// Take `--dir`'s lock and socket and serve until SIGTERM, which ends it with success (as
/// `tollgate serve` ends).
pub fn run(args: &StandInArgs) -> anyhow::Result<ExitCode> {
    let dir = AdmissionDir::at(&args.dir)?;
    let lock = CoordinatorLock::try_acquire(&dir)?.with_context(|| {
        format!(
            "{} has a coordinator already; the stand-in needs the directory to itself",
            args.dir.display()
        )
    })?;
    let socket = dir.socket_path();
    match std::fs::remove_file(&socket) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing the stale {}", socket.display()))
        }
        _ => {}
    }
    let listener =
        UnixListener::bind(&socket).with_context(|| format!("binding {}", socket.display()))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    let shared = Shared {
        keys: Arc::default(),
        clock: TokioClock::system(),
        generation: lock.generation(),
    };
    std::thread::spawn(move || serve(&listener, &shared));
    wait_for_sigterm()?;
    let _ = std::fs::remove_file(&socket);
    drop(lock);
    Ok(ExitCode::SUCCESS)
}

fn wait_for_sigterm() -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        term.recv().await;
        anyhow::Ok(())
    })
}

/// Accept clients for ever, a thread each.
fn serve(listener: &UnixListener, shared: &Shared) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let shared = shared.clone();
        std::thread::spawn(move || client(stream, &shared));
    }
}

/// One client: read what it sent, answer every whole request, write the answers at once.
fn client(mut stream: UnixStream, shared: &Shared) {
    let mut frames = FrameReader::new();
    let mut out = Vec::new();
    let mut owner = None;
    loop {
        match frames.read_from(&stream) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        loop {
            let request = match frames.next_frame::<Request>() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(_) => return,
            };
            let body = match request.body {
                RequestBody::Hello {
                    pid, generation, ..
                } => {
                    owner = Some(Owner { pid, generation });
                    ResponseBody::Welcome {
                        coordinator_pid: std::process::id(),
                        generation: shared.generation,
                    }
                }
                RequestBody::Ping => ResponseBody::Pong,
                RequestBody::Op(op) => match owner {
                    Some(owner) => answer(op, owner, shared),
                    None => return,
                },
            };
            let response = Response {
                id: request.id,
                body,
            };
            if frame::encode_into(&mut out, &response).is_err() {
                return;
            }
        }
        if !out.is_empty() {
            if stream.write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
    }
}

/// Answer one operation from the key's state, under the lock.
fn answer(op: Operation, owner: Owner, shared: &Shared) -> ResponseBody {
    let now = shared.clock.now();
    let mut keys = shared.keys.lock().unwrap_or_else(|p| p.into_inner());
    let answer = match op {
        Operation::Reserve { key, policy, .. } => match reserve(&mut keys, key, policy, owner, now)
        {
            Some(id) => Answer::Reserved(id),
            None => return refused("no slot is free"),
        },
        Operation::ReservePass { key, policy, .. } => {
            match reserve(&mut keys, key, policy, owner, now) {
                Some(reservation) => Answer::ReservedPassed {
                    reservation,
                    passage: Passage::Go,
                    admitted_at: None,
                },
                None => return refused("no slot is free"),
            }
        }
        Operation::Admit {
            key,
            reservation,
            cost,
            retry,
            ..
        } => {
            let Some(state) = keys.get_mut(&key) else {
                return refused("the key has no reservation");
            };
            let request = AdmitRequest {
                reservation,
                cost,
                retry,
            };
            match state.admit(&request, now) {
                Admission::Granted(g) => Answer::Admitted {
                    admitted_at: g.admitted_at,
                    retry_spent: g.retry_spent,
                },
                _ => return refused("the key does not admit it at once"),
            }
        }
        Operation::Release {
            key, reservation, ..
        } => {
            if let Some(state) = keys.get_mut(&key) {
                state.release(reservation, now);
            }
            Answer::Done
        }
        Operation::Feedback { .. } => Answer::Done,
        _ => return refused("the stand-in does not serve this operation"),
    };
    ResponseBody::Answer(answer)
}

fn reserve(
    keys: &mut HashMap<CanonicalKey, QuotaState>,
    key: CanonicalKey,
    policy: Policy,
    owner: Owner,
    now: Timestamp,
) -> Option<ReservationId> {
    let state = keys
        .entry(key)
        .or_insert_with(|| QuotaState::new(policy, now));
    state.reserve(owner, now + RESERVATION_LIFETIME, now).ok()
}

fn refused(why: &str) -> ResponseBody {
    ResponseBody::Error(WireError::Rejected {
        reason: format!("the bench's stand-in coordinator: {why}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_actors::{connect, CoordinatorSpec, WaitOptions};
    use tollgate_quota::QuotaKey;

    #[test]
    fn tollgates_own_client_reserves_admits_and_releases_through_the_stand_in() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("admission");
        let dir = AdmissionDir::at(&path).unwrap();
        let lock = CoordinatorLock::try_acquire(&dir).unwrap().unwrap();
        let listener = UnixListener::bind(dir.socket_path()).unwrap();
        let shared = Shared {
            keys: Arc::default(),
            clock: TokioClock::system(),
            generation: lock.generation(),
        };
        let keys = shared.keys.clone();
        std::thread::spawn(move || serve(&listener, &shared));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let joined = connect(&dir, CoordinatorSpec::none()).unwrap();
        assert!(!joined.is_coordinator(), "the stand-in holds the lock");
        let key: QuotaKey = "aws/123456789012/us-east-1/bench:stand-in".parse().unwrap();
        let policy = Policy::new(10.0, 2.0, 4, 10).unwrap();
        let wait = WaitOptions {
            timeout: Duration::from_secs(5),
            scope: None,
        };
        let handle = joined.handle();
        rt.block_on(async {
            let slot = handle.reserve(&key, policy, wait).await.unwrap();
            // Grants until the burst is spent; then the stand-in answers an error (it
            // never makes a caller wait).
            let mut granted = Vec::new();
            while let Ok(grant) = slot.admit(1, false, wait).await {
                granted.push(grant.admitted_at);
                assert!(granted.len() <= 10, "a burst of 2 cannot grant {granted:?}");
            }
            assert!(!granted.is_empty(), "the first admission is granted");
            assert!(granted.windows(2).all(|w| w[0] <= w[1]), "{granted:?}");
            drop(slot);
        });
        drop(rt); // writes whatever the runtime still held back: the release
                  // The release is told, not asked: wait for the stand-in's thread to apply it.
        let held = || {
            let keys = keys.lock().unwrap_or_else(|p| p.into_inner());
            let state = keys
                .values()
                .next()
                .expect("the key was reserved on the stand-in");
            state.reservations().len()
        };
        for _ in 0..500 {
            if held() == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(held(), 0, "the release reached the stand-in");
        drop(lock);
    }
}
