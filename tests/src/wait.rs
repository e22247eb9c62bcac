//! Waiting for a condition that nothing announces: [`eventually`] polls it until it holds
//! or a timeout passes, then fails saying what was awaited and what was last seen.
//!
//! For what the daemon does announce, wait for the announcement instead (an event:
//! [`crate::events::collect_until`]; a request to the mock: `MockModel::wait_requests`).
//! This is for what only polling shows: a process in /proc, a line in a log, a file, a
//! status behind an RPC. It never sleeps "to let things settle": it returns as soon as the
//! condition holds.

use std::fmt;
use std::time::Duration;

/// The first pause between two checks; it doubles up to [`MAX_PAUSE`], so a condition that
/// holds soon is seen soon and a slow one is not polled hundreds of times a second.
const FIRST_PAUSE: Duration = Duration::from_millis(5);
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// What one check of [`eventually`] returns: whether the condition holds (and the value to
/// return if so) or what was seen instead, for the failure message.
///
/// - `bool`: holds when `true`;
/// - `Option<T>`: holds when `Some(value)`, which `eventually` returns;
/// - `Result<T, E>`: holds when `Ok(value)`; `Err(seen)` says what was seen instead (shown
///   with `{:?}`, or as it is when it is a [`Verbatim`]), and the last one is in the panic.
pub trait Check {
    /// What `eventually` returns once the condition holds.
    type Value;
    /// `Ok(value)` when the condition holds, else what was seen (if anything).
    fn outcome(self) -> Result<Self::Value, Option<String>>;
}

impl Check for bool {
    type Value = ();
    fn outcome(self) -> Result<(), Option<String>> {
        if self { Ok(()) } else { Err(None) }
    }
}

impl<T> Check for Option<T> {
    type Value = T;
    fn outcome(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: fmt::Debug> Check for Result<T, E> {
    type Value = T;
    fn outcome(self) -> Result<T, Option<String>> {
        self.map_err(|seen| Some(format!("{seen:?}")))
    }
}

/// Text shown as it is in a failure message (a log, with its line ends), where `{:?}` would
/// escape it onto one line: `Err(Verbatim(log))`.
pub struct Verbatim(pub String);

impl fmt::Debug for Verbatim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\n{}", self.0)
    }
}

/// Checks `check` until it holds, pausing between checks, and returns its value. Panics
/// after `timeout` (which also bounds a check that itself hangs) with
/// `waited <timeout> for <what>; last seen: <the last Err>`.
///
/// `what` names the condition awaited ("the server to be ready"). A condition that needs no
/// await is an `async` closure that awaits nothing:
///
/// ```no_run
/// # async fn f(log: &std::path::Path) {
/// use std::time::Duration;
/// use agentd_testkit::wait::eventually;
/// let text = eventually(Duration::from_secs(10), "the log to say hello", async || {
///     let text = std::fs::read_to_string(log).unwrap_or_default();
///     if text.contains("hello") { Ok(text) } else { Err(text) }
/// })
/// .await;
/// # }
/// ```
pub async fn eventually<C: Check>(
    timeout: Duration,
    what: &str,
    mut check: impl AsyncFnMut() -> C,
) -> C::Value {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut pause = FIRST_PAUSE;
    let mut last_seen = None;
    loop {
        let outcome = match tokio::time::timeout_at(deadline, check()).await {
            Ok(outcome) => outcome.outcome(),
            Err(_) => panic!(
                "waited {timeout:?} for {what}: a check did not finish in time{}",
                seen(last_seen.as_deref())
            ),
        };
        match outcome {
            Ok(value) => return value,
            Err(seen) => last_seen = seen,
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            panic!(
                "waited {timeout:?} for {what}{}",
                seen(last_seen.as_deref())
            );
        }
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

fn seen(last: Option<&str>) -> String {
    match last {
        Some(last) => format!("; last seen: {last}"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_the_value_once_the_condition_holds() {
        let mut checks = 0;
        let value = eventually(Duration::from_secs(5), "the third check", async || {
            checks += 1;
            if checks == 3 {
                Ok(checks * 10)
            } else {
                Err(checks)
            }
        })
        .await;
        assert_eq!((value, checks), (30, 3));
        let mut flips = [false, true].into_iter();
        eventually(Duration::from_secs(5), "a flip", async || {
            flips.next().unwrap()
        })
        .await;
        let got = eventually(Duration::from_secs(5), "a value", async || Some("v")).await;
        assert_eq!(got, "v");
    }

    #[tokio::test]
    #[should_panic(expected = "waited 50ms for the count to reach 1000; last seen: ")]
    async fn a_timeout_names_what_was_awaited_and_the_last_value_seen() {
        let mut count = 0;
        eventually(
            Duration::from_millis(50),
            "the count to reach 1000",
            async || {
                count += 1;
                if count >= 1000 { Ok(()) } else { Err(count) }
            },
        )
        .await;
    }

    #[tokio::test]
    #[should_panic(expected = "waited 50ms for a log line; last seen: \none\ntwo")]
    async fn verbatim_text_keeps_its_lines() {
        eventually(Duration::from_millis(50), "a log line", async || {
            Err::<(), _>(Verbatim("one\ntwo".into()))
        })
        .await;
    }

    #[tokio::test]
    #[should_panic(expected = "waited 50ms for an answer: a check did not finish in time")]
    async fn a_check_that_hangs_fails_at_the_timeout() {
        eventually(Duration::from_millis(50), "an answer", async || {
            std::future::pending::<bool>().await
        })
        .await;
    }
}
