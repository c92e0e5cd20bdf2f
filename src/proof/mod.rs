//! What is known to pass without looking at every value: a rule's valid
//! whole numbers ([`Interval`]), the judge a reader may apply where values
//! are stored ([`Judge`]) and what a unit's metadata proves ([`UnitStats`]).
//!
//! Why a module of its own: readers and kernels both speak these terms, and
//! neither may import the other's layer to do so.

mod judge;
mod stats;

pub(crate) use judge::{Bounds, Judge};
pub(crate) use stats::UnitStats;

/// The valid whole numbers of a rule: `lo..=hi` plus `extra`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Interval {
    pub lo: i128,
    pub hi: i128,
    pub extra: Option<i128>,
}

impl Interval {
    #[inline]
    pub(crate) fn contains(&self, v: i128) -> bool {
        (self.lo <= v && v <= self.hi) || self.extra == Some(v)
    }
}
