//! The process's stop token and the signal handlers that request it. Every library takes the
//! token ([`trawl_stop::Stop`]); the reason it carries decides, at the end, whether the run
//! exits as interrupted (128 + the signal) or as failed (2).

use std::sync::LazyLock;

pub use trawl_stop::{Reason, Stop};

/// The one token of this process.
pub static STOP: LazyLock<Stop> = LazyLock::new(Stop::new);

/// Turns SIGINT, SIGTERM and SIGHUP into a stop request, on a thread of their own; a second
/// signal ends the process at once (temporary files, named `*.trawl-tmp`, may then remain).
pub fn install_handlers() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let stop: &'static Stop = &STOP;
    std::thread::spawn(move || {
        for sig in signals.forever() {
            if matches!(stop.reason(), Some(Reason::Signal(_))) {
                std::process::exit(128 + sig);
            }
            stop.request(Reason::Signal(sig));
        }
    });
}
