//! How a run is stopped or paused from outside, and how a stop and the run's own end are
//! settled: [`RunControl`] holds one state, so a stop either takes effect or is refused
//! with nothing changed.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

/// Why a run was stopped from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A client called `cancelLoop` (or deleted the agent).
    User,
    /// The daemon is shutting down.
    Shutdown,
}

/// Where a run is in its life. A stop and the run's own end race; this settles who won,
/// so a stop either takes effect or is refused with nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The run slot was taken for a run that has not started yet (its start may still
    /// give up: a prompt answered already, a store failure).
    Claimed,
    Running,
    /// Decided to end at a permission prompt: the prompt is or will be saved and sent.
    Suspending,
    /// Decided to end for another reason (completed, max steps or tokens, paused, error).
    Finishing,
    /// Stopped from outside (cancel, delete, shutdown): it ends as cancelled.
    Stopped,
}

/// What [`RunControl::stop`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopOutcome {
    /// The run was running and will end as stopped.
    Stopped,
    /// An earlier stop did that already.
    AlreadyStopped,
    /// The slot is taken for a run that has not started: it starts stopped, if it starts.
    /// Wait for [`RunControl::started`] (it took effect) or the slot's release (it did not).
    NotStarted,
    /// The run had already decided how it ends (a prompt, its answer, an error): the stop
    /// changes nothing. Wait for the run's end and look again.
    Ending,
}

/// The handle to stop or pause a run; the first stop reason given wins.
#[derive(Debug)]
pub struct RunControl {
    pub(super) token: CancellationToken,
    /// Cancelled when the run starts.
    started: CancellationToken,
    state: Mutex<(Phase, Option<StopReason>)>,
    pause: AtomicBool,
    pub(super) steps: AtomicU32,
}

impl Default for RunControl {
    fn default() -> Self {
        RunControl {
            token: CancellationToken::new(),
            started: CancellationToken::new(),
            state: Mutex::new((Phase::Claimed, None)),
            pause: AtomicBool::new(false),
            steps: AtomicU32::new(0),
        }
    }
}

impl RunControl {
    pub fn new() -> Arc<RunControl> {
        Arc::new(RunControl::default())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, (Phase, Option<StopReason>)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops the run, unless it has already decided how it ends.
    pub fn stop(&self, reason: StopReason) -> StopOutcome {
        let mut state = self.state();
        match state.0 {
            Phase::Claimed | Phase::Running => {
                let claimed = state.0 == Phase::Claimed;
                *state = (Phase::Stopped, Some(reason));
                drop(state);
                self.token.cancel();
                if claimed {
                    StopOutcome::NotStarted
                } else {
                    StopOutcome::Stopped
                }
            }
            Phase::Stopped => StopOutcome::AlreadyStopped,
            Phase::Suspending | Phase::Finishing => StopOutcome::Ending,
        }
    }

    /// The run decides to end at a permission prompt; false if it was stopped first.
    pub(super) fn try_suspend(&self) -> bool {
        self.enter(Phase::Suspending)
    }

    /// The run decides to end for another reason; false if it was stopped first.
    pub(super) fn try_finish(&self) -> bool {
        self.enter(Phase::Finishing)
    }

    /// The run starts (whether stopped already or not).
    pub fn mark_started(&self) {
        {
            let mut state = self.state();
            if state.0 == Phase::Claimed {
                state.0 = Phase::Running;
            }
        }
        self.started.cancel();
    }

    /// Cancelled once the run has started.
    pub fn started(&self) -> &CancellationToken {
        &self.started
    }

    fn enter(&self, phase: Phase) -> bool {
        let mut state = self.state();
        match state.0 {
            Phase::Stopped => false,
            Phase::Claimed | Phase::Running => {
                state.0 = phase;
                true
            }
            Phase::Suspending | Phase::Finishing => state.0 == phase,
        }
    }

    pub fn reason(&self) -> Option<StopReason> {
        self.state().1
    }

    /// A token cancelled when the run is stopped (for work tied to the run, e.g. hooks).
    pub fn stopped_token(&self) -> CancellationToken {
        self.token.clone()
    }

    pub fn is_stopped(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Asks the run to stop at its next checkpoint, resumable.
    pub fn request_pause(&self) {
        self.pause.store(true, Ordering::SeqCst);
    }

    pub fn pause_requested(&self) -> bool {
        self.pause.load(Ordering::SeqCst)
    }

    /// True once the run has decided how it ends (a prompt, or its end): whoever wants the
    /// run slot waits for the run's end instead of failing.
    pub fn is_ending(&self) -> bool {
        matches!(self.state().0, Phase::Suspending | Phase::Finishing)
    }

    /// Model calls the run has made so far.
    pub fn steps(&self) -> u32 {
        self.steps.load(Ordering::SeqCst)
    }
}
