//! Exit when idle (`--exit-when-idle SECS`): the rule that decides when the daemon has
//! been unused long enough, kept apart from the accept loop that applies it.
//!
//! Idle means no client connected, no run under way and no permission prompt waiting for
//! an answer. The accept loop knows the connections; what else keeps the daemon busy is
//! asked of the daemon ([`IdleExit::busy`]) only while no connection is open, since a run
//! or a prompt can begin only through a connection. The quiet time is counted from the
//! first observation that found the daemon idle, never from a guess: an accepted
//! connection starts it over, so the daemon may stay up a little longer than asked, never
//! shorter.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

/// What, besides a connection, keeps the daemon busy: `None` when nothing does, else the
/// reason (for the log).
pub type BusyCheck =
    Box<dyn Fn() -> Pin<Box<dyn Future<Output = Option<&'static str>> + Send>> + Send + Sync>;

/// When the accept loop stops for lack of use.
pub struct IdleExit {
    /// How long the daemon must stay idle.
    pub after: Duration,
    /// Runs under way or prompts waiting (asked while no connection is open).
    pub busy: BusyCheck,
}

/// The reason the accept loop gives when a connection is open.
pub const CLIENT_CONNECTED: &str = "a client is connected";

impl std::fmt::Debug for IdleExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdleExit")
            .field("after", &self.after)
            .finish_non_exhaustive()
    }
}

/// The quiet-time clock: fed observations, it says when to look again and when the quiet
/// time is over.
#[derive(Debug, Clone)]
pub struct IdleClock {
    after: Duration,
    /// Since when every observation found the daemon idle.
    quiet_since: Option<Instant>,
}

impl IdleClock {
    pub fn new(after: Duration) -> IdleClock {
        IdleClock {
            after,
            quiet_since: None,
        }
    }

    /// How often a busy daemon is looked at again: often enough that the quiet time starts
    /// soon after the last activity ends, rarely enough to cost nothing.
    fn poll_interval(&self) -> Duration {
        (self.after / 4).clamp(Duration::from_millis(50), Duration::from_secs(2))
    }

    /// Something happened (a connection was accepted): the quiet time starts over.
    pub fn activity(&mut self) {
        self.quiet_since = None;
    }

    /// One look at the daemon at `now`; true when it has been idle for the whole quiet time.
    pub fn observe(&mut self, now: Instant, busy: bool) -> bool {
        if busy {
            self.quiet_since = None;
            return false;
        }
        let since = *self.quiet_since.get_or_insert(now);
        now.saturating_duration_since(since) >= self.after
    }

    /// When to look next.
    pub fn next_check(&self, now: Instant) -> Instant {
        match self.quiet_since {
            Some(since) => (since + self.after).max(now),
            None => now + self.poll_interval(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A script of events at offsets (ms) from a start: `busy`, `idle` (observations),
    /// `accept`; each observation's expected answer, and the next check after it.
    #[test]
    fn quiet_time_is_counted_from_the_first_idle_observation() {
        type Step = (u64, &'static str, Option<bool>, Option<u64>);
        let cases: &[(&str, u64, &[Step])] = &[
            (
                "idle from the start: exits once the quiet time has passed",
                1000,
                &[
                    (0, "idle", Some(false), Some(1000)),
                    (999, "idle", Some(false), Some(1000)),
                    (1000, "idle", Some(true), Some(1000)),
                ],
            ),
            (
                "busy, then idle: the quiet time starts at the first idle look",
                1000,
                &[
                    (0, "busy", Some(false), Some(250)),
                    (250, "busy", Some(false), Some(500)),
                    (500, "idle", Some(false), Some(1500)),
                    (1499, "idle", Some(false), Some(1500)),
                    (1500, "idle", Some(true), Some(1500)),
                ],
            ),
            (
                "a connection between two looks starts the quiet time over",
                1000,
                &[
                    (0, "idle", Some(false), Some(1000)),
                    (600, "accept", None, Some(850)),
                    (1000, "idle", Some(false), Some(2000)),
                    (2000, "idle", Some(true), Some(2000)),
                ],
            ),
            (
                "busy again before the end of the quiet time",
                1000,
                &[
                    (0, "idle", Some(false), Some(1000)),
                    (1000, "busy", Some(false), Some(1250)),
                    (1250, "idle", Some(false), Some(2250)),
                ],
            ),
            (
                "a long quiet time is polled at most every 2 s while busy",
                600_000,
                &[(0, "busy", Some(false), Some(2000))],
            ),
            (
                "a short one at least every 50 ms",
                100,
                &[(0, "busy", Some(false), Some(50))],
            ),
        ];
        let start = Instant::now();
        for (name, after_ms, steps) in cases {
            let mut clock = IdleClock::new(Duration::from_millis(*after_ms));
            for (at, event, answer, next) in *steps {
                let now = start + Duration::from_millis(*at);
                let got = match *event {
                    "busy" => Some(clock.observe(now, true)),
                    "idle" => Some(clock.observe(now, false)),
                    "accept" => {
                        clock.activity();
                        None
                    }
                    other => panic!("unknown event {other}"),
                };
                assert_eq!(got, *answer, "{name}: {event} at {at}");
                if let Some(next) = next {
                    let want = start + Duration::from_millis(*next);
                    assert_eq!(clock.next_check(now), want, "{name}: next after {at}");
                }
            }
        }
    }
}
