//! One vectorised pass over a decoded mask plane (8- or 16-bit) that says
//! whether it holds a bad value, and what the report needs of a plane that
//! does not.
//!
//! Most masks hold no bad value. For a rule whose good values are an
//! interval plus at most one extra value (`num_classes` + `ignore_index`,
//! a range, a contiguous `values` set: [`crate::proof::Interval`]), the
//! smallest and largest values other than the extra one decide that, and
//! they, whether the extra value occurs, and the 0/255 test are everything
//! a clean plane contributes (the smallest value, the binary-mask and
//! 16-bit hints). Each is a min/max/or reduction, which the compiler turns
//! into SIMD code (an AVX2 build is picked at run time, as for the check
//! kernels), so a clean plane costs one streaming read instead of a
//! histogram. Planes with a bad value go on to the histogram, which the
//! pixel counts need; [`Bounds::has_bad`] then finds the blocks of pixels
//! that hold one.

use crate::proof::Interval;

/// A plane's sample type.
pub(super) trait Lane: Copy + Ord + Into<u32> + std::ops::BitOr<Output = Self> + Send + Sync + 'static {
    /// The type's zero.
    const ZERO: Self;
    /// The type's largest value.
    const TOP: Self;
    /// The value 255 (the usual `ignore_index` and the 0/255 masks' one).
    const V255: Self;
    /// `v`, which lies within `0..=TOP`.
    fn narrow(v: i128) -> Self;
}

impl Lane for u8 {
    const ZERO: u8 = 0;
    const TOP: u8 = u8::MAX;
    const V255: u8 = 255;
    fn narrow(v: i128) -> u8 {
        v.clamp(0, 255) as u8
    }
}

impl Lane for u16 {
    const ZERO: u16 = 0;
    const TOP: u16 = u16::MAX;
    const V255: u16 = 255;
    fn narrow(v: i128) -> u16 {
        v.clamp(0, 65535) as u16
    }
}

/// A rule's good values within a lane type: `lo..=hi` (empty when
/// `lo > hi`) and `extra`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds<N> {
    pub(super) lo: N,
    pub(super) hi: N,
    pub(super) extra: Option<N>,
}

impl<N: Lane> Bounds<N> {
    /// The interval's good values that the lane type can hold.
    pub(super) fn new(iv: &Interval) -> Bounds<N> {
        let top: u32 = N::TOP.into();
        let (lo, hi) = (iv.lo.max(0), iv.hi.min(i128::from(top)));
        let (lo, hi) = if lo > hi {
            (N::narrow(1), N::ZERO)
        } else {
            (N::narrow(lo), N::narrow(hi))
        };
        let extra = iv.extra.filter(|x| (0..=i128::from(top)).contains(x)).map(N::narrow);
        Bounds { lo, hi, extra }
    }

    /// Whether `v` (a value of the lane type) is bad under the rule.
    #[inline]
    pub(super) fn bad(&self, v: u32) -> bool {
        let (lo, hi): (u32, u32) = (self.lo.into(), self.hi.into());
        !(lo <= v && v <= hi) && self.extra.is_none_or(|x| x.into() != v)
    }

    /// Whether any of `vals` is bad (a branch-free reduction, for blocks of
    /// pixels that the bad-pixel scan then walks one by one).
    #[inline]
    pub(super) fn has_bad(&self, vals: &[N]) -> bool {
        let (lo, hi) = (self.lo, self.hi);
        match self.extra {
            Some(x) => vals
                .iter()
                .fold(false, |a, &v| a | (!((v >= lo) & (v <= hi)) & (v != x))),
            None => vals.iter().fold(false, |a, &v| a | !((v >= lo) & (v <= hi))),
        }
    }
}

/// What one pass over a plane found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Summary<N> {
    /// The smallest and the largest value other than the rule's extra
    /// value (`None`: every pixel holds the extra value).
    pub range: Option<(N, N)>,
    /// Whether the extra value occurs.
    pub extra_seen: bool,
    /// Whether 255 occurs.
    pub has_255: bool,
    /// Whether every value is 0 or 255.
    pub only_0_255: bool,
}

impl<N: Lane> Summary<N> {
    /// Whether the plane holds no bad value.
    pub(super) fn clean(&self, b: &Bounds<N>) -> bool {
        self.range.is_none_or(|(mn, mx)| b.lo <= mn && mx <= b.hi)
    }

    /// The largest value of the plane.
    pub(super) fn max(&self, b: &Bounds<N>) -> Option<N> {
        let extra = b.extra.filter(|_| self.extra_seen);
        match (self.range, extra) {
            (Some((_, mx)), Some(x)) => Some(mx.max(x)),
            (Some((_, mx)), None) => Some(mx),
            (None, x) => x,
        }
    }
}

/// Summarises `vals` under `b` in one pass.
pub(super) fn summarize<N: Lane>(vals: &[N], b: &Bounds<N>) -> Summary<N> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { summarize_avx2(vals, b) };
        }
    }
    summarize_body(vals, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn summarize_avx2<N: Lane>(vals: &[N], b: &Bounds<N>) -> Summary<N> {
    summarize_body(vals, b)
}

#[inline(always)]
fn summarize_body<N: Lane>(vals: &[N], b: &Bounds<N>) -> Summary<N> {
    match b.extra {
        // The usual mask rule: 255 is the extra value, so whether it occurs
        // and whether the others are all 0 answer the 0/255 test.
        Some(x) if x == N::V255 => {
            let (mn, mx, seen, _, _) = reduce::<N, true, false>(vals, x);
            let range = (mn <= mx).then_some((mn, mx));
            Summary {
                range,
                extra_seen: seen != N::ZERO,
                has_255: seen != N::ZERO,
                only_0_255: range.is_none_or(|(_, mx)| mx == N::ZERO),
            }
        }
        Some(x) => {
            let (mn, mx, seen, odd, h255) = reduce::<N, true, true>(vals, x);
            Summary {
                range: (mn <= mx).then_some((mn, mx)),
                extra_seen: seen != N::ZERO,
                has_255: h255 != N::ZERO,
                only_0_255: odd == N::ZERO,
            }
        }
        None => {
            let (mn, mx, _, odd, h255) = reduce::<N, false, true>(vals, N::ZERO);
            Summary {
                range: (mn <= mx).then_some((mn, mx)),
                extra_seen: false,
                has_255: h255 != N::ZERO,
                only_0_255: odd == N::ZERO,
            }
        }
    }
}

/// The reductions: smallest and largest value other than `x` (with
/// `EXTRA`; the smallest exceeds the largest when there is none), whether
/// `x` occurs, and (with `ZERO_255`) a value that is not zero when some
/// value is neither 0 nor 255, and one that is not zero when 255 occurs.
#[inline(always)]
fn reduce<N: Lane, const EXTRA: bool, const ZERO_255: bool>(vals: &[N], x: N) -> (N, N, N, N, N) {
    let (mut mn, mut mx, mut seen, mut odd, mut h255) = (N::TOP, N::ZERO, N::ZERO, N::ZERO, N::ZERO);
    // `mn <= mx` exactly when some value other than `x` occurs (it sets
    // both), even when that value is TOP or ZERO.
    for &v in vals {
        let is_x = EXTRA && v == x;
        mn = mn.min(if is_x { N::TOP } else { v });
        mx = mx.max(if is_x { N::ZERO } else { v });
        if EXTRA {
            seen = seen | if is_x { N::TOP } else { N::ZERO };
        }
        if ZERO_255 {
            let is_255 = v == N::V255;
            odd = odd | if is_255 { N::ZERO } else { v };
            h255 = h255 | if is_255 { N::TOP } else { N::ZERO };
        }
    }
    (mn, mx, seen, odd, h255)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary, computed the obvious way.
    fn naive<N: Lane>(vals: &[N], b: &Bounds<N>) -> Summary<N> {
        let others: Vec<N> = vals.iter().copied().filter(|&v| Some(v) != b.extra).collect();
        Summary {
            range: others.iter().min().map(|&mn| (mn, *others.iter().max().unwrap_or(&mn))),
            extra_seen: vals.iter().any(|&v| Some(v) == b.extra),
            has_255: vals.contains(&N::V255),
            only_0_255: vals.iter().all(|&v| v == N::ZERO || v == N::V255),
        }
    }

    fn intervals() -> Vec<Interval> {
        let iv = |lo, hi, extra| Interval { lo, hi, extra };
        vec![
            iv(0, 149, Some(255)),
            iv(0, 2, None),
            iv(0, 1, Some(0)),
            iv(0, 4, Some(70000)),
            iv(1, 200, None),
            iv(1, 0, None),
            iv(-5, -1, Some(3)),
            iv(300, 400, Some(255)),
            iv(0, 39999, Some(65535)),
            iv(i128::MIN, i128::MAX, None),
        ]
    }

    #[test]
    fn one_pass_says_what_the_values_say() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let ivs = intervals();
        let mut runner = TestRunner::new(Config {
            cases: 256,
            ..Config::default()
        });
        let few = [0u16, 1, 2, 3, 7, 149, 150, 200, 254, 255, 256, 300, 40000, 65535];
        let strategy = (
            0..ivs.len(),
            proptest::collection::vec(any::<u16>(), 0..300),
            any::<bool>(),
        );
        runner
            .run(&strategy, |(i, raw, spread)| {
                let wide: Vec<u16> = raw
                    .iter()
                    .map(|&r| if spread { r } else { few[r as usize % few.len()] })
                    .collect();
                let narrow: Vec<u8> = wide.iter().map(|&v| v as u8).collect();
                let (b8, b16) = (Bounds::<u8>::new(&ivs[i]), Bounds::<u16>::new(&ivs[i]));
                let (s8, s16) = (summarize(&narrow, &b8), summarize(&wide, &b16));
                prop_assert_eq!(s8, naive(&narrow, &b8));
                prop_assert_eq!(s16, naive(&wide, &b16));
                // Clean exactly when the rule finds no bad value.
                let ok = |v: i128| ivs[i].contains(v);
                prop_assert_eq!(s8.clean(&b8), narrow.iter().all(|&v| ok(v.into())));
                prop_assert_eq!(s16.clean(&b16), wide.iter().all(|&v| ok(v.into())));
                prop_assert_eq!(b8.has_bad(&narrow), !s8.clean(&b8));
                prop_assert_eq!(s16.max(&b16), wide.iter().max().copied());
                for &v in &narrow {
                    prop_assert_eq!(b8.has_bad(&[v]), !ok(v.into()));
                    prop_assert_eq!(b8.bad(v.into()), !ok(v.into()));
                }
                for &v in &wide {
                    prop_assert_eq!(b16.bad(v.into()), !ok(v.into()));
                }
                Ok(())
            })
            .unwrap();
    }
}
