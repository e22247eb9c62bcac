//! What each message of an agent's history costs in the request, kept between model calls.
//!
//! Before every model call the whole visible history is built into the request and each of
//! its messages is priced ([`estimate_message`]) so that [`super::budget::fit_priced`] can decide
//! what to stub or leave out. Pricing reads every byte of the history, so a turn cost more
//! the longer the history grew (4.3 ms of a 2,000-message agent's turn). Messages do not
//! change once finished, so their prices are kept here, per position in the history, and
//! only new or changed messages are priced again.
//!
//! Only histories of [`KEEP_FROM`] messages and more keep prices: a few messages are priced
//! afresh in microseconds, and thousands of short-lived agents should not hold a copy each.
//! A kept message costs 32 bytes (its key and its price; a message that became several
//! request messages, a heap slice more).
//!
//! A kept price is used only for the same message as it was then: same id, update time,
//! status and number of blocks (a key hashed from them), priced for the same model
//! capabilities. Messages still being written or waiting are priced every time.

use std::hash::{DefaultHasher, Hash, Hasher};

use agent_proto::{Message, MessageStatus};

use crate::provider::ChatMessage;

use super::tokens::estimate_message;

/// Histories shorter than this are priced afresh on every call. Low: pricing reads every
/// byte, and a history of 200 short turns priced afresh was 4% of a turn's CPU.
pub(super) const KEEP_FROM: usize = 16;

/// The model capabilities that change what a message becomes in the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Shape {
    pub vision: bool,
    pub documents: bool,
    pub legacy: bool,
}

/// The kept prices of one agent's history (see the module doc).
#[derive(Debug, Default)]
pub struct Prices {
    shape: Shape,
    /// By position in the history: the message's key and the prices of the request
    /// messages it became, in order.
    by_position: Vec<Option<(u64, Kept)>>,
}

/// The prices of the request messages one history message became.
#[derive(Debug, Clone)]
enum Kept {
    /// Most messages become one (no allocation).
    One(u32),
    Many(Box<[u32]>),
}

// What the module doc promises a kept message costs.
const _: () = assert!(std::mem::size_of::<Option<(u64, Kept)>>() <= 32);

impl Kept {
    fn as_slice(&self) -> &[u32] {
        match self {
            Kept::One(price) => std::slice::from_ref(price),
            Kept::Many(prices) => prices,
        }
    }
}

/// Identifies a message as it was when priced.
fn key(message: &Message) -> u64 {
    let mut h = DefaultHasher::new();
    message.id.hash(&mut h);
    message.updated_at.hash(&mut h);
    message.status.as_str().hash(&mut h);
    message.blocks.len().hash(&mut h);
    h.finish()
}

/// A message that can change no more while it is in a request's history.
fn settled(message: &Message) -> bool {
    !matches!(
        message.status,
        MessageStatus::Pending | MessageStatus::Streaming | MessageStatus::Waiting
    )
}

impl Prices {
    /// Forgets everything priced for other model capabilities.
    pub(super) fn for_shape(&mut self, shape: Shape) {
        if self.shape != shape {
            self.by_position.clear();
            self.shape = shape;
        }
    }

    /// Drops positions past the history's end (a history that got shorter).
    pub(super) fn truncate(&mut self, len: usize) {
        self.by_position.truncate(len);
    }

    /// Appends to `out` the prices of `messages`, what the history message at `position`
    /// became: the kept ones when they are for this message as it is now, else priced now
    /// and kept (if the message is settled).
    pub(super) fn price_at(
        &mut self,
        position: usize,
        message: &Message,
        messages: &[ChatMessage],
        out: &mut Vec<u64>,
    ) {
        if !settled(message) {
            return price(messages, out);
        }
        let key = key(message);
        if let Some(Some((kept, prices))) = self.by_position.get(position)
            && *kept == key
            && prices.as_slice().len() == messages.len()
        {
            return out.extend(prices.as_slice().iter().map(|&p| u64::from(p)));
        }
        let from = out.len();
        price(messages, out);
        if self.by_position.len() <= position {
            self.by_position.resize(position + 1, None);
        }
        let price = |p: &u64| u32::try_from(*p).unwrap_or(u32::MAX);
        let prices = match &out[from..] {
            [one] => Kept::One(price(one)),
            many => Kept::Many(many.iter().map(price).collect()),
        };
        self.by_position[position] = Some((key, prices));
    }
}

/// Appends the prices of `messages` to `out`, priced now.
pub(super) fn price(messages: &[ChatMessage], out: &mut Vec<u64>) {
    out.extend(messages.iter().map(estimate_message));
}
