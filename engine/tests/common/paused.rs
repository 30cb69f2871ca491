//! An actix system on a paused tokio clock, for tests in simulated time.

/// An actix system on a current-thread tokio runtime whose clock is paused from the start:
/// sleeps advance instantly, and timer ticks align with the simulated clock's epoch.
pub fn paused_system() -> actix::SystemRunner {
    actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a paused tokio runtime")
    })
}
