//! A column's value rule handed to a reader, so that a reader can prove
//! stretches of integer values clean where they are stored (a Parquet page
//! of dictionary indices or PLAIN values) without building arrays for them.
//!
//! Why: under `--full-scan` building the arrays was most of the time, and
//! the kernels then found nothing in nearly every batch. A reader that
//! proves a batch clean hands its rows over as a shape, flagged proven
//! ([`crate::source::read::Source::read_judged`]); the checks then apply the
//! length rules only, exactly as for a column whose statistics proved it.
//! Anything not proven clean goes through the kernels as before, so the
//! report has one path.
//!
//! A judge is only offered for a rule whose every effect on a clean integer
//! value is "nothing": an interval rule (plus `ignore_index`), no minimum
//! kept for hints (`class`), no tokenizer band, no documents, no pad id, no
//! pixels. Nulls are the reader's to leave unproven.

use super::Interval;

/// Which whole numbers pass a column's value rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judge {
    interval: Interval,
}

/// A judge's bounds in a reader's integer domain (see [`Judge::bounds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Smallest passing value.
    pub lo: i64,
    /// Largest passing value.
    pub hi: i64,
    /// One more passing value outside `lo..=hi` (`ignore_index`).
    pub extra: Option<i64>,
}

impl Judge {
    pub(crate) fn new(interval: Interval) -> Judge {
        Judge { interval }
    }

    /// Whether `v` passes.
    pub fn passes(&self, v: i128) -> bool {
        self.interval.contains(v)
    }

    /// The passing values of the domain `min..=max` (a reader's integer
    /// type), as bounds in that domain; `None` when `lo..=hi` holds none
    /// of them (a reader then proves nothing: it has no value to show).
    pub fn bounds(&self, min: i64, max: i64) -> Option<Bounds> {
        let iv = self.interval;
        let lo = iv.lo.max(i128::from(min));
        let hi = iv.hi.min(i128::from(max));
        if lo > hi {
            return None;
        }
        let extra = iv
            .extra
            .filter(|&x| !(lo..=hi).contains(&x))
            .and_then(|x| i64::try_from(x).ok())
            .filter(|x| (min..=max).contains(x));
        Some(Bounds {
            lo: lo as i64,
            hi: hi as i64,
            extra,
        })
    }
}

impl Bounds {
    /// Whether `v` (of the domain the bounds were made for) passes.
    #[inline(always)]
    pub fn passes(&self, v: i64) -> bool {
        ((v >= self.lo) & (v <= self.hi)) | (Some(v) == self.extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_follow_the_domain() {
        let j = Judge::new(Interval {
            lo: 0,
            hi: 30521,
            extra: Some(-100),
        });
        assert!(j.passes(0) && j.passes(30521) && j.passes(-100) && !j.passes(30522) && !j.passes(-1));
        let b = j.bounds(i64::from(i8::MIN), i64::from(i8::MAX)).unwrap();
        assert_eq!((b.lo, b.hi, b.extra), (0, 127, Some(-100)));
        assert!(b.passes(127) && b.passes(-100) && !b.passes(-1));
        // A domain that holds no passing value.
        let j = Judge::new(Interval {
            lo: 300,
            hi: 400,
            extra: None,
        });
        assert_eq!(j.bounds(0, 255), None);
        // An extra outside the domain is dropped; one inside the interval too.
        let j = Judge::new(Interval {
            lo: 0,
            hi: 9,
            extra: Some(1 << 40),
        });
        assert_eq!(j.bounds(0, 255).unwrap().extra, None);
        let j = Judge::new(Interval {
            lo: i128::MIN,
            hi: i128::MAX,
            extra: None,
        });
        let b = j.bounds(i64::MIN, i64::MAX).unwrap();
        assert_eq!((b.lo, b.hi), (i64::MIN, i64::MAX));
    }
}
