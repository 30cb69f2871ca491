//! Shared set-up for actor tests in simulated time.

/// An actix system on a tokio runtime whose clock is paused from the start, so timer
/// ticks align with the simulated clock's epoch and sleeps advance instantly.
pub fn paused_system() -> actix::SystemRunner {
    actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a paused tokio runtime")
    })
}
