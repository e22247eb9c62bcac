//! What a streaming loop waits for besides its stream: the run's stop and the next timed
//! save of the message. Calls running wait for the same timed save (`Run::saving_while`).
//!
//! One future each for the whole stream, not a new one per piece: a new wait on the stop
//! token and a new timer per piece cost two registrations and two removals, each under a
//! lock, and registering the timer could wake the runtime worker parked on the driver.

use std::pin::Pin;

use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

pub(super) struct StreamWaits {
    /// Ready once the run is stopped.
    pub(super) stopped: Pin<Box<WaitForCancellationFutureOwned>>,
    /// Ready at the armed save time; only polled while [`StreamWaits::save_armed`].
    pub(super) save: Pin<Box<Sleep>>,
    save_at: Option<Instant>,
}

impl StreamWaits {
    pub(super) fn new(stop: &CancellationToken) -> StreamWaits {
        StreamWaits {
            stopped: Box::pin(stop.clone().cancelled_owned()),
            save: Box::pin(tokio::time::sleep_until(Instant::now())),
            save_at: None,
        }
    }

    /// Sets the time of the next timed save (`None`: nothing to save). The timer moves only
    /// when the time changes, which is once per save, not once per piece.
    pub(super) fn arm_save(&mut self, due: Option<Instant>) {
        if due != self.save_at {
            if let Some(at) = due {
                self.save.as_mut().reset(at);
            }
            self.save_at = due;
        }
    }

    /// Whether a timed save is due at some time (the `save` branch may be polled).
    pub(super) fn save_armed(&self) -> bool {
        self.save_at.is_some()
    }
}
