//! How many subagents of one parent work at once (`[subagents] max_parallel`): a slot per
//! child, foreground or background, taken before the child is sent its task and freed when
//! the [`TaskSlot`] is dropped (its runs have settled); the others wait their turn, first
//! come first served. A cancel (or the deletion) of the parent drops the ones still
//! waiting.
//!
//! Counted per parent: a child's own subagents take the child's slots, so a parent waiting
//! for its children never waits for a slot its children hold.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// The slots of every parent that has children working or waiting.
#[derive(Debug)]
pub struct TaskSlots {
    limit: usize,
    /// Kept while a slot or a wait holds it; a parent nobody holds is dropped.
    parents: Mutex<HashMap<String, Weak<Parent>>>,
}

/// One parent's slots and its waiters' cancellation.
#[derive(Debug)]
struct Parent {
    semaphore: Arc<Semaphore>,
    /// Cancelled (and replaced) to drop the waiters of the moment.
    waiters: Mutex<CancellationToken>,
    /// How many wait now.
    waiting: AtomicUsize,
}

/// Counts one waiter of a parent while it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Waiting<'a> {
        count.fetch_add(1, Ordering::SeqCst);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A child's turn to work; dropping it lets the next waiting one start.
#[derive(Debug)]
pub struct TaskSlot {
    _permit: OwnedSemaphorePermit,
    _parent: Arc<Parent>,
}

impl TaskSlots {
    /// Slots for `limit` children of each parent at once (at least one).
    pub fn new(limit: usize) -> TaskSlots {
        TaskSlots {
            limit: limit.max(1),
            parents: Mutex::new(HashMap::new()),
        }
    }

    /// How many children of one parent work at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    fn parent(&self, parent_id: &str) -> Arc<Parent> {
        let mut parents = self.parents.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(parent) = parents.get(parent_id).and_then(Weak::upgrade) {
            return parent;
        }
        parents.retain(|_, p| p.strong_count() > 0);
        let parent = Arc::new(Parent {
            semaphore: Arc::new(Semaphore::new(self.limit)),
            waiters: Mutex::new(CancellationToken::new()),
            waiting: AtomicUsize::new(0),
        });
        parents.insert(parent_id.to_owned(), Arc::downgrade(&parent));
        parent
    }

    /// A slot now, if one is free.
    pub fn try_take(&self, parent_id: &str) -> Option<TaskSlot> {
        let parent = self.parent(parent_id);
        let permit = parent.semaphore.clone().try_acquire_owned().ok()?;
        Some(TaskSlot {
            _permit: permit,
            _parent: parent,
        })
    }

    /// Waits for a slot of `parent_id` (in turn); `None` when a cancel or the deletion of
    /// the parent dropped the wait.
    pub async fn take(&self, parent_id: &str) -> Option<TaskSlot> {
        let parent = self.parent(parent_id);
        let dropped = parent
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let waiting = Waiting::new(&parent.waiting);
        let permit = tokio::select! {
            permit = parent.semaphore.clone().acquire_owned() => permit.ok()?,
            () = dropped.cancelled() => return None,
        };
        drop(waiting);
        Some(TaskSlot {
            _permit: permit,
            _parent: parent,
        })
    }

    /// Drops the children of `parent_id` still waiting for a slot (its run was cancelled,
    /// or it was deleted); true if there were any.
    pub fn drop_waiting(&self, parent_id: &str) -> bool {
        let parent = self
            .parents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(parent_id)
            .and_then(Weak::upgrade);
        let Some(parent) = parent else {
            return false;
        };
        let mut waiters = parent
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let waiting = parent.waiting.load(Ordering::SeqCst) > 0;
        waiters.cancel();
        *waiters = CancellationToken::new();
        waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A current-thread runtime: a spawned task runs, up to its first wait, when the test
    // yields once.
    #[tokio::test]
    async fn a_parents_children_take_turns_and_a_cancel_drops_the_waiting() {
        let slots = Arc::new(TaskSlots::new(2));
        let wait = |parent: &'static str| {
            let slots = slots.clone();
            tokio::spawn(async move { slots.take(parent).await })
        };
        let a = slots.try_take("p").unwrap();
        let b = slots.take("p").await.unwrap();
        assert!(slots.try_take("p").is_none(), "two of two are taken");
        assert!(!slots.drop_waiting("p"), "nobody waits yet");
        // Another parent has slots of its own.
        let other = slots.try_take("q").unwrap();
        // A third child waits until one ends, then gets the freed slot.
        let third = wait("p");
        tokio::task::yield_now().await;
        assert!(!third.is_finished());
        drop(a);
        let c = third.await.unwrap().expect("the freed slot");
        // A cancel of the parent drops the one waiting now, and only it.
        let dropped = wait("p");
        tokio::task::yield_now().await;
        assert!(slots.drop_waiting("p"));
        assert!(
            dropped.await.unwrap().is_none(),
            "a dropped wait gets no slot"
        );
        assert!(!slots.drop_waiting("q"), "nobody waits for q");
        // Later waits are not dropped by that cancel.
        let later = wait("p");
        drop(b);
        assert!(later.await.unwrap().is_some());
        drop((c, other));
        // A parent nobody holds is forgotten when the next one comes.
        drop(slots.try_take("r"));
        assert_eq!(slots.parents.lock().unwrap().len(), 1);
    }
}
