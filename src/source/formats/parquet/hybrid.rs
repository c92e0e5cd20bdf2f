//! Parquet's RLE / bit-packing hybrid encoding, decoded run by run: the
//! repetition and definition levels of a page and its dictionary indices.
//!
//! Hand-written because the parquet crate keeps its decoders private (they
//! are public only behind its `experimental` feature, which pulls in the
//! Variant crates); `shape` has a level-only walker of its own that never
//! needs values wider than a byte. Runs are handed out as runs, so a caller
//! can treat a run of equal levels (most of them in real files) at once.
//!
//! Everything comes from the file: a run header may claim any count, so a
//! run is only ever consumed as far as the caller asks and the bytes go;
//! nothing is allocated from a claimed count.

use super::thrift::{Bad, uleb128};
use crate::error::ReadError;

/// Values decoded from a bit-packed run at a time.
pub(super) const LITERAL: usize = 1024;

/// The current run: `k` copies of a value, or `k` values in the literal
/// buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Run {
    Repeat(u32, usize),
    Literal(usize),
}

/// How the stream is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The hybrid encoding.
    Hybrid,
    /// One bit stream (the deprecated BIT_PACKED level encoding), least
    /// significant bit first, as parquet-cpp and arrow-rs read it.
    Packed,
    /// Nothing stored: every value is 0 (levels whose maximum is 0).
    Zeros,
}

/// A hybrid-encoded stream over a byte range; the bytes are passed to each
/// call (they live in a page buffer the caller owns).
#[derive(Debug, Clone)]
pub(super) struct Hybrid {
    mode: Mode,
    pos: usize,
    end: usize,
    width: u32,
    /// Value of the current repeat run, and how many of it are left.
    repeat: u32,
    repeat_left: usize,
    /// Values of the current bit-packed run not yet unpacked, and the bit
    /// where they start.
    packed_left: usize,
    bit: usize,
    lit: Vec<u32>,
    lit_at: usize,
    lit_len: usize,
}

impl Hybrid {
    /// A hybrid stream of `width`-bit values in `data[range]`.
    pub(super) fn new(range: std::ops::Range<usize>, width: u32) -> Result<Self, ReadError> {
        if width > 32 {
            return Err(ReadError::new(format!(
                "a bit width of {width} is more than 32, corrupt RLE data"
            )));
        }
        Ok(Self::with(Mode::Hybrid, range, width))
    }

    /// The deprecated bit-packed encoding of `values` levels of `width` bits.
    pub(super) fn packed(range: std::ops::Range<usize>, width: u32, values: usize) -> Self {
        let mut h = Self::with(Mode::Packed, range.clone(), width);
        h.bit = range.start * 8;
        h.packed_left = values;
        h
    }

    /// A stream of zeros (no levels stored).
    pub(super) fn zeros() -> Self {
        let mut h = Self::with(Mode::Zeros, 0..0, 0);
        h.repeat_left = usize::MAX;
        h
    }

    fn with(mode: Mode, range: std::ops::Range<usize>, width: u32) -> Self {
        Hybrid {
            mode,
            pos: range.start,
            end: range.end,
            width,
            repeat: 0,
            repeat_left: 0,
            packed_left: 0,
            bit: 0,
            lit: vec![0; LITERAL],
            lit_at: 0,
            lit_len: 0,
        }
    }

    /// The current run, at most `max` long (`max` > 0); an error where the
    /// bytes end first.
    pub(super) fn run(&mut self, data: &[u8], max: usize) -> Result<Run, ReadError> {
        loop {
            if self.repeat_left > 0 {
                return Ok(Run::Repeat(self.repeat, self.repeat_left.min(max)));
            }
            if self.lit_at < self.lit_len {
                return Ok(Run::Literal((self.lit_len - self.lit_at).min(max)));
            }
            if self.packed_left > 0 {
                self.unpack(data)?;
                continue;
            }
            self.next_header(data)?;
        }
    }

    /// Consumes `k` values of the current run (as returned by [`Hybrid::run`]).
    pub(super) fn advance(&mut self, k: usize) {
        if self.repeat_left > 0 {
            self.repeat_left -= k;
        } else {
            self.lit_at += k;
        }
    }

    /// Decodes exactly `out.len()` values into `out`.
    pub(super) fn decode(&mut self, data: &[u8], out: &mut [u32]) -> Result<(), ReadError> {
        let mut done = 0;
        while done < out.len() {
            match self.run(data, out.len() - done)? {
                Run::Repeat(v, k) => {
                    out[done..done + k].fill(v);
                    self.advance(k);
                    done += k;
                }
                Run::Literal(k) => {
                    out[done..done + k].copy_from_slice(&self.lit[self.lit_at..self.lit_at + k]);
                    self.advance(k);
                    done += k;
                    // The rest of a bit-packed run goes straight into `out`.
                    let direct = self.packed_left.min(out.len() - done);
                    if direct > 0 && self.lit_at == self.lit_len {
                        self.unpack_into(data, &mut out[done..done + direct])?;
                        done += direct;
                    }
                }
            }
        }
        Ok(())
    }

    /// Skips the next `k` values; a bit-packed run is stepped over without
    /// unpacking it.
    pub(super) fn skip(&mut self, data: &[u8], mut k: usize) -> Result<(), ReadError> {
        while k > 0 {
            if self.repeat_left == 0 && self.lit_at == self.lit_len && self.packed_left > 0 {
                let m = self.packed_left.min(k);
                let bit = self.bit + m * self.width as usize;
                if bit.div_ceil(8) > self.end {
                    return Err(ReadError::new("the RLE data ends before the page's last value"));
                }
                self.bit = bit;
                self.packed_left -= m;
                k -= m;
                continue;
            }
            let (Run::Repeat(_, m) | Run::Literal(m)) = self.run(data, k)?;
            self.advance(m);
            k -= m;
        }
        Ok(())
    }

    /// Walks the next `n` values: how many of them are `count`, or `None`
    /// as soon as one is neither `count` nor `allow`.
    pub(super) fn count_only(
        &mut self,
        data: &[u8],
        n: usize,
        count: u32,
        allow: Option<u32>,
    ) -> Result<Option<usize>, ReadError> {
        let (mut left, mut hits) = (n, 0);
        while left > 0 {
            let k = match self.run(data, left)? {
                Run::Repeat(v, k) => {
                    if v == count {
                        hits += k;
                    } else if Some(v) != allow {
                        return Ok(None);
                    }
                    k
                }
                Run::Literal(k) => {
                    for &v in &self.lit[self.lit_at..self.lit_at + k] {
                        if v == count {
                            hits += 1;
                        } else if Some(v) != allow {
                            return Ok(None);
                        }
                    }
                    k
                }
            };
            self.advance(k);
            left -= k;
        }
        Ok(Some(hits))
    }

    /// Walks at most `max` values of a stream of 0s and 1s (repetition
    /// levels of a top-level list), calling `at(i)` for the `i`th value
    /// walked when it is 0, and stopping before the 0 past the first
    /// `limit`. Runs are taken whole: a repeat run at once, and a 1-bit
    /// packed run up to 64 values per load, its 0s found by counting zeros, so a
    /// long row costs a few operations, not one per value. Returns (values
    /// walked, 0s found); a value above 1 is an error.
    pub(super) fn row_starts(
        &mut self,
        data: &[u8],
        max: usize,
        limit: usize,
        mut at: impl FnMut(usize),
    ) -> Result<(usize, usize), ReadError> {
        let over = || ReadError::new("a page holds a level above its column's maximum");
        let (mut done, mut found) = (0usize, 0usize);
        while done < max {
            if self.repeat_left > 0 {
                let k = self.repeat_left.min(max - done);
                let take = match self.repeat {
                    0 => {
                        let m = k.min(limit - found);
                        for j in 0..m {
                            at(done + j);
                        }
                        found += m;
                        m
                    }
                    1 => k,
                    _ => return Err(over()),
                };
                self.repeat_left -= take;
                done += take;
                if take < k {
                    break;
                }
            } else if self.lit_at < self.lit_len {
                let k = (self.lit_len - self.lit_at).min(max - done);
                let mut take = 0;
                for &v in &self.lit[self.lit_at..self.lit_at + k] {
                    match v {
                        0 if found == limit => break,
                        0 => {
                            at(done + take);
                            found += 1;
                        }
                        1 => {}
                        _ => return Err(over()),
                    }
                    take += 1;
                }
                self.lit_at += take;
                done += take;
                if take < k {
                    break;
                }
            } else if self.packed_left > 0 && self.width == 1 {
                let k = self.packed_left.min(max - done);
                if (self.bit + k).div_ceil(8) > self.end {
                    return Err(ReadError::new("the RLE data ends before the page's last value"));
                }
                let bytes = &data[..self.end];
                let (mut walked, mut stopped) = (0usize, false);
                while walked < k {
                    let bit = self.bit + walked;
                    let byte = bit / 8;
                    let mut b = [0u8; 8];
                    let have = (bytes.len() - byte).min(8);
                    b[..have].copy_from_slice(&bytes[byte..byte + have]);
                    let valid = (64 - bit % 8).min(k - walked);
                    let keep = if valid == 64 { u64::MAX } else { (1u64 << valid) - 1 };
                    let mut zeros = !(u64::from_le_bytes(b) >> (bit % 8)) & keep;
                    while zeros != 0 {
                        let i = zeros.trailing_zeros() as usize;
                        if found == limit {
                            walked += i;
                            stopped = true;
                            break;
                        }
                        at(done + walked + i);
                        found += 1;
                        zeros &= zeros - 1;
                    }
                    if stopped {
                        break;
                    }
                    walked += valid;
                }
                self.bit += walked;
                self.packed_left -= walked;
                done += walked;
                if stopped {
                    break;
                }
            } else if self.packed_left > 0 {
                self.unpack(data)?;
            } else {
                self.next_header(data)?;
            }
        }
        Ok((done, found))
    }

    fn next_header(&mut self, data: &[u8]) -> Result<(), ReadError> {
        let end = || ReadError::new("the RLE data ends before the page's last value");
        if self.mode != Mode::Hybrid {
            return Err(end());
        }
        let header = uleb128(data, &mut self.pos, self.end).map_err(|e| match e {
            Bad::Short => end(),
            Bad::Corrupt(_) => ReadError::new("an RLE run header overflows"),
        })?;
        let count = usize::try_from(header >> 1).unwrap_or(usize::MAX);
        if header & 1 == 0 {
            // A repeated value in ceil(width / 8) bytes, little-endian.
            let bytes = self.width.div_ceil(8) as usize;
            if self.end - self.pos < bytes {
                return Err(end());
            }
            let mut v = 0u32;
            for (i, &b) in data[self.pos..self.pos + bytes].iter().enumerate() {
                v |= u32::from(b) << (8 * i);
            }
            self.pos += bytes;
            if count == 0 {
                return Ok(());
            }
            self.repeat = v;
            self.repeat_left = count;
        } else {
            // `count` groups of 8 values in `width` bytes each, as far as
            // the bytes go (as arrow-rs reads a short last run).
            let width = self.width as usize;
            let groups = (self.end - self.pos)
                .checked_div(width)
                .map_or(count, |fit| count.min(fit));
            if groups == 0 && count > 0 && width > 0 {
                return Err(end());
            }
            self.packed_left = groups.saturating_mul(8);
            self.bit = self.pos * 8;
            self.pos += groups * width;
        }
        Ok(())
    }

    /// Unpacks the next values of a bit-packed run into the literal buffer,
    /// least significant bit first.
    fn unpack(&mut self, data: &[u8]) -> Result<(), ReadError> {
        let n = self.packed_left.min(LITERAL);
        let mut lit = std::mem::take(&mut self.lit);
        let result = self.unpack_into(data, &mut lit[..n]);
        self.lit = lit;
        result?;
        self.lit_at = 0;
        self.lit_len = n;
        Ok(())
    }

    /// Unpacks the next `dst.len()` values of the current bit-packed run
    /// into `dst`.
    fn unpack_into(&mut self, data: &[u8], dst: &mut [u32]) -> Result<(), ReadError> {
        let n = dst.len();
        let w = self.width as usize;
        if w == 0 {
            dst.fill(0);
        } else {
            let need = (self.bit + n * w).div_ceil(8);
            if need > self.end {
                return Err(ReadError::new("the RLE data ends before the page's last value"));
            }
            let mask = if w == 32 { u64::MAX >> 32 } else { (1u64 << w) - 1 };
            let bytes = &data[..self.end];
            let mut bit = self.bit;
            // Up to a byte boundary value by value, then 32 at a time with
            // the width a constant (see `unpack32`), the rest value by value.
            let mut done = 0;
            while !bit.is_multiple_of(8) && done < n {
                let at = bit / 8;
                let mut b = [0u8; 8];
                let tail = &bytes[at..bytes.len().min(at + 8)];
                b[..tail.len()].copy_from_slice(tail);
                dst[done] = ((u64::from_le_bytes(b) >> (bit % 8)) & mask) as u32;
                bit += w;
                done += 1;
            }
            let fast = unpack32(w, &bytes[bit / 8..], &mut dst[done..]);
            bit += fast * w;
            let dst = &mut dst[done + fast..];
            let n = dst.len();
            // Values whose 8-byte window lies inside the data: one load each.
            let whole = if bytes.len() >= 8 {
                ((bytes.len() - 8) * 8 + 1).saturating_sub(bit).div_ceil(w).min(n)
            } else {
                0
            };
            for slot in &mut dst[..whole] {
                let at = bit / 8;
                let b = &bytes[at..at + 8];
                let word = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                *slot = ((word >> (bit % 8)) & mask) as u32;
                bit += w;
            }
            for slot in &mut dst[whole..] {
                let at = bit / 8;
                let mut b = [0u8; 8];
                let tail = &bytes[at..bytes.len().min(at + 8)];
                b[..tail.len()].copy_from_slice(tail);
                *slot = ((u64::from_le_bytes(b) >> (bit % 8)) & mask) as u32;
                bit += w;
            }
            self.bit = bit;
        }
        self.packed_left -= n;
        Ok(())
    }
}

/// Unpacks whole groups of 32 `w`-bit values from the start of `src` into
/// `dst` while both hold one (and 8 bytes to spare for the last load):
/// how many values. The width is a constant in each instance, so the
/// shifts and loads of a group unroll; this was the largest cost of
/// reading dictionary indices.
fn unpack32(w: usize, src: &[u8], dst: &mut [u32]) -> usize {
    macro_rules! widths {
        ($($w:literal)*) => {
            match w {
                $($w => unpack32_w::<$w>(src, dst),)*
                _ => 0,
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32)
}

#[inline(always)]
fn unpack32_w<const W: usize>(src: &[u8], dst: &mut [u32]) -> usize {
    let mask = if W == 32 { u64::from(u32::MAX) } else { (1u64 << W) - 1 };
    let mut done = 0;
    for out in dst.chunks_exact_mut(32) {
        let start = done / 32 * 4 * W;
        // The group's bytes and 8 more (the last value's load reads past).
        let (Some(bytes), Ok(out)) = (src.get(start..start + 4 * W + 8), <&mut [u32; 32]>::try_from(out)) else {
            break;
        };
        for (i, slot) in out.iter_mut().enumerate() {
            let bit = i * W;
            let b = &bytes[bit / 8..bit / 8 + 8];
            let word = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            *slot = ((word >> (bit % 8)) & mask) as u32;
        }
        done += 32;
    }
    done
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Encodes values in the hybrid encoding: runs of 8+ equal values as
    /// repeats, the rest bit-packed in groups of 8 (a short last group
    /// padded with zeros).
    pub(crate) fn encode(values: &[u32], width: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let varint = |out: &mut Vec<u8>, mut v: u64| loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        };
        let mut i = 0;
        while i < values.len() {
            let mut j = i;
            while j < values.len() && values[j] == values[i] {
                j += 1;
            }
            if j - i >= 8 {
                varint(&mut out, ((j - i) as u64) << 1);
                let v = values[i];
                for b in 0..width.div_ceil(8) {
                    out.push((v >> (8 * b)) as u8);
                }
                i = j;
                continue;
            }
            let group: Vec<u32> = (0..8).map(|k| values.get(i + k).copied().unwrap_or(0)).collect();
            varint(&mut out, (1 << 1) | 1);
            let (mut acc, mut bits) = (0u64, 0u32);
            for v in group {
                acc |= u64::from(v) << bits;
                bits += width;
                while bits >= 8 {
                    out.push(acc as u8);
                    acc >>= 8;
                    bits -= 8;
                }
            }
            i += 8;
        }
        out
    }

    fn decode_all(data: &[u8], width: u32, n: usize) -> Result<Vec<u32>, ReadError> {
        let mut h = Hybrid::new(0..data.len(), width)?;
        let mut out = vec![0; n];
        h.decode(data, &mut out)?;
        Ok(out)
    }

    #[test]
    fn round_trips_every_width() {
        for width in 1..=32u32 {
            let max = if width == 32 { u32::MAX } else { (1 << width) - 1 };
            let values: Vec<u32> = (0..3000u64)
                .map(|i| {
                    if (i / 40) % 2 == 0 {
                        (i * 2654435761 % (u64::from(max) + 1)) as u32
                    } else {
                        max
                    }
                })
                .collect();
            let data = encode(&values, width);
            assert_eq!(decode_all(&data, width, values.len()).unwrap(), values, "width {width}");
        }
    }

    /// One bit-packed run of 1000 values, decoded in pieces of odd sizes
    /// (unaligned starts, groups of 32 unpacked at once, short tails) and
    /// skipped in part.
    #[test]
    fn long_packed_runs_round_trip_in_pieces() {
        for width in 1..=32u32 {
            let max = if width == 32 {
                u64::from(u32::MAX)
            } else {
                (1u64 << width) - 1
            };
            let values: Vec<u32> = (0..1000u64).map(|i| (i * 2654435761 % (max + 1)) as u32).collect();
            // A bit-packed run header of 125 groups: (125 << 1 | 1) as a varint.
            let mut data = vec![0xfb, 0x01];
            let (mut acc, mut bits) = (0u64, 0u32);
            for &v in &values {
                acc |= u64::from(v) << bits;
                bits += width;
                while bits >= 8 {
                    data.push(acc as u8);
                    acc >>= 8;
                    bits -= 8;
                }
            }
            for pieces in [&[1usize, 7, 33, 100][..], &[64, 3, 500], &[1000]] {
                let mut h = Hybrid::new(0..data.len(), width).unwrap();
                let (mut got, mut at, mut turn) = (Vec::new(), 0, 0);
                while at < values.len() {
                    let k = pieces[turn % pieces.len()].min(values.len() - at);
                    if turn % 3 == 2 {
                        h.skip(&data, k).unwrap();
                        got.extend_from_slice(&values[at..at + k]);
                    } else {
                        let mut out = vec![0; k];
                        h.decode(&data, &mut out).unwrap();
                        got.extend(out);
                    }
                    at += k;
                    turn += 1;
                }
                assert_eq!(got, values, "width {width} pieces {pieces:?}");
                assert!(h.decode(&data, &mut [0]).is_err(), "width {width}: past the run");
            }
        }
    }

    /// `zeros` against the values one by one: rows of random lengths (long
    /// ones as repeat runs, short ones bit-packed, one long packed run),
    /// walked in pieces of odd sizes with odd limits, mixed with `decode`.
    #[test]
    fn row_starts_finds_every_zero() {
        let mut seed = 11u64;
        let mut rand = |m: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let mut values = Vec::new();
        for _ in 0..400 {
            values.push(0u32);
            let len = match rand(4) {
                0 => 0,
                1 => rand(8),
                2 => rand(100),
                _ => rand(700),
            };
            values.extend(std::iter::repeat_n(1, len as usize));
        }
        let mut streams = vec![encode(&values, 1)];
        // The same values as one bit-packed run (as some writers store levels).
        let groups = values.len().div_ceil(8);
        let mut packed = Vec::new();
        super::super::thrift::push_uleb128(&mut packed, (groups as u64) << 1 | 1);
        let mut bytes = vec![0u8; groups];
        for (i, &v) in values.iter().enumerate() {
            bytes[i / 8] |= (v as u8) << (i % 8);
        }
        packed.extend(bytes);
        streams.push(packed);
        for data in &streams {
            for (pieces, limits) in [
                (&[1usize, 64, 7, 1000][..], &[0usize, 1, 5, 100][..]),
                (&[5000], &[3, 1000]),
            ] {
                let mut h = Hybrid::new(0..data.len(), 1).unwrap();
                let (mut at, mut turn) = (0usize, 0usize);
                while at < values.len() {
                    let max = pieces[turn % pieces.len()].min(values.len() - at);
                    let limit = limits[turn % limits.len()];
                    if turn % 5 == 4 {
                        let mut out = vec![9; max];
                        h.decode(data, &mut out).unwrap();
                        assert_eq!(out, values[at..at + max]);
                        at += max;
                    } else {
                        let mut got = Vec::new();
                        let (walked, found) = h.row_starts(data, max, limit, |i| got.push(at + i)).unwrap();
                        let want: Vec<usize> = (at..at + max).filter(|&i| values[i] == 0).take(limit).collect();
                        assert_eq!(got, want);
                        assert_eq!(found, want.len());
                        // It stops right before the zero past the limit.
                        let stop = (at..at + max)
                            .filter(|&i| values[i] == 0)
                            .nth(limit)
                            .unwrap_or(at + max);
                        assert_eq!(at + walked, stop, "turn {turn}");
                        at += walked;
                    }
                    turn += 1;
                }
            }
        }
        // A level of 2 is an error; a stream that ends early too.
        let data = encode(&[0, 1, 2, 1, 1, 1, 1, 1], 2);
        assert!(
            Hybrid::new(0..data.len(), 2)
                .unwrap()
                .row_starts(&data, 8, 8, |_| {})
                .is_err()
        );
        let data = encode(&[2; 10], 2);
        assert!(
            Hybrid::new(0..data.len(), 2)
                .unwrap()
                .row_starts(&data, 10, 8, |_| {})
                .is_err()
        );
        let data = encode(&[0, 1, 1], 1);
        assert!(
            Hybrid::new(0..data.len(), 1)
                .unwrap()
                .row_starts(&data, 9, 9, |_| {})
                .is_err()
        );
        // A packed run claiming more groups than its bytes hold.
        let data = [0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0xfe];
        let mut h = Hybrid::new(0..data.len(), 1).unwrap();
        let mut got = Vec::new();
        assert_eq!(h.row_starts(&data, 8, 8, |i| got.push(i)).unwrap(), (8, 1));
        assert_eq!(got, vec![0]);
        assert!(h.row_starts(&data, 1, 8, |_| {}).is_err());
    }

    #[test]
    fn hostile_streams_are_errors() {
        // Bit width past 32.
        assert!(Hybrid::new(0..0, 33).is_err());
        // A bit-packed run claiming 2^40 groups of 4 bytes in 8 bytes: only
        // what the bytes hold, then an error, no allocation.
        let mut data = vec![0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40];
        data.extend([0xff; 8]);
        let e = decode_all(&data, 32, 100).unwrap_err();
        assert!(e.message.contains("ends before"), "{e:?}");
        // A repeat run of 2^62 values hands out what is asked.
        let data = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x05];
        assert_eq!(decode_all(&data, 3, 5).unwrap(), vec![5; 5]);
        // A header that never ends.
        assert!(decode_all(&[0xff; 20], 3, 1).is_err());
        // Width 0: headers still parsed, values all 0.
        assert!(decode_all(&[0x10], 0, 10).unwrap_err().message.contains("ends"));
        assert_eq!(decode_all(&[0x10, 0x03], 0, 16).unwrap(), vec![0; 16]);
        assert_eq!(decode_all(&[0x14], 0, 10).unwrap(), vec![0; 10]);
        // Nothing at all.
        assert!(decode_all(&[], 8, 1).is_err());
    }
}
