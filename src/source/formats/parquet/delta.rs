//! Parquet's DELTA_BINARY_PACKED encoding of INT32 / INT64 values, decoded
//! into a caller's buffer.
//!
//! Hand-written for the reason `hybrid` is (the parquet crate's decoder is
//! private). It accepts what arrow-rs's `DeltaBitPackDecoder` accepts and
//! refuses what it refuses (block sizes, miniblock counts, bit widths past
//! the physical type, first values and minimum deltas that do not fit it),
//! so a file reads or fails the same way on either path. Arithmetic wraps
//! in 64 bits and INT32 values are the low 32 bits, which is what wrapping
//! 32-bit arithmetic gives.
//!
//! Nothing is allocated from a header's counts: the miniblock bit widths are
//! read where they lie in the page.

use super::thrift::uleb128;
use crate::error::ReadError;

#[derive(Debug, Clone)]
pub(super) struct Delta {
    pos: usize,
    end: usize,
    /// Physical width: 32 or 64.
    bits: u32,
    miniblocks: usize,
    per_mini: usize,
    /// Values the page header says the page holds, not yet handed out.
    left: usize,
    first: Option<u64>,
    last: u64,
    min_delta: u64,
    /// Where the current block's miniblock widths lie, and which is current
    /// (`usize::MAX` before the first block).
    widths_at: usize,
    mini: usize,
    mini_left: usize,
    /// Bit position of the next value in the current miniblock.
    bit: usize,
}

fn bad(what: &str) -> ReadError {
    ReadError::new(format!("DELTA_BINARY_PACKED: {what}"))
}

impl Delta {
    /// The stream in `data[range]` of a column of `bits`-bit integers.
    pub(super) fn new(data: &[u8], range: std::ops::Range<usize>, bits: u32) -> Result<Self, ReadError> {
        let mut d = Delta {
            pos: range.start,
            end: range.end,
            bits,
            miniblocks: 0,
            per_mini: 0,
            left: 0,
            first: None,
            last: 0,
            min_delta: 0,
            widths_at: 0,
            // No block read yet.
            mini: usize::MAX,
            mini_left: 0,
            bit: 0,
        };
        let block = d.varint(data, "the header ends early")?;
        let miniblocks = d.varint(data, "the header ends early")?;
        let total = d.varint(data, "the header ends early")?;
        let first = d.zigzag(data, "the header ends early")?;
        if miniblocks == 0 {
            return Err(bad("cannot have zero miniblocks per block"));
        }
        if block == 0 || !block.is_multiple_of(128) || !block.is_multiple_of(miniblocks) {
            return Err(bad(&format!(
                "a block of {block} values in {miniblocks} miniblocks is not a multiple of 128 in whole miniblocks"
            )));
        }
        let per_mini = block / miniblocks;
        if !per_mini.is_multiple_of(32) {
            return Err(bad(&format!("{per_mini} values per miniblock is not a multiple of 32")));
        }
        d.fits(first, "the first value")?;
        d.miniblocks = usize::try_from(miniblocks).map_err(|_| bad("too many miniblocks"))?;
        d.per_mini = usize::try_from(per_mini).map_err(|_| bad("too many values per miniblock"))?;
        d.left = usize::try_from(total).map_err(|_| bad("too many values"))?;
        d.first = Some(first as u64);
        Ok(d)
    }

    /// Decodes exactly `out.len()` values.
    pub(super) fn decode(&mut self, data: &[u8], out: &mut [i64]) -> Result<(), ReadError> {
        if out.len() > self.left {
            return Err(bad(&format!(
                "the page needs {} more values, its header holds {}",
                out.len(),
                self.left
            )));
        }
        let mut done = 0;
        if let Some(first) = self.first.take()
            && !out.is_empty()
        {
            out[0] = first as i64;
            self.last = first;
            self.left -= 1;
            done = 1;
        }
        while done < out.len() {
            if self.mini_left == 0 {
                self.next_miniblock(data)?;
            }
            let w = usize::from(data[self.widths_at + self.mini]);
            if w > self.bits as usize {
                return Err(bad(&format!(
                    "a bit width of {w} is more than the {}-bit values hold",
                    self.bits
                )));
            }
            let k = self.mini_left.min(out.len() - done);
            if (self.bit + k * w).div_ceil(8) > self.end {
                return Err(bad("the page ends inside a miniblock"));
            }
            let mut last = self.last;
            for slot in &mut out[done..done + k] {
                let delta = unpack(data, self.bit, w);
                self.bit += w;
                last = last.wrapping_add(self.min_delta).wrapping_add(delta);
                *slot = last as i64;
            }
            self.last = last;
            self.mini_left -= k;
            self.left -= k;
            done += k;
        }
        Ok(())
    }

    /// Moves to the next miniblock, reading a block header when the block
    /// is done.
    fn next_miniblock(&mut self, data: &[u8]) -> Result<(), ReadError> {
        let first_block = self.mini == usize::MAX;
        if first_block || self.mini + 1 >= self.miniblocks {
            // The previous block ends where its last miniblock's bits end.
            if !first_block {
                self.pos = self.bit.div_ceil(8);
            }
            let min_delta = self.zigzag(data, "a block header ends early")?;
            self.fits(min_delta, "a block's minimum delta")?;
            self.min_delta = min_delta as u64;
            if self.end - self.pos < self.miniblocks {
                return Err(bad("insufficient mini block bit widths"));
            }
            self.widths_at = self.pos;
            self.pos += self.miniblocks;
            self.mini = 0;
            self.bit = self.pos * 8;
        } else {
            self.mini += 1;
        }
        self.mini_left = self.per_mini;
        Ok(())
    }

    fn fits(&self, v: i64, what: &str) -> Result<(), ReadError> {
        if self.bits == 32 && i32::try_from(v).is_err() {
            return Err(bad(&format!("{what} ({v}) does not fit 32 bits")));
        }
        Ok(())
    }

    fn varint(&mut self, data: &[u8], what: &str) -> Result<u64, ReadError> {
        uleb128(data, &mut self.pos, self.end).map_err(|_| bad(what))
    }

    fn zigzag(&mut self, data: &[u8], what: &str) -> Result<i64, ReadError> {
        let v = self.varint(data, what)?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }
}

/// `w` bits (0..=64) at bit `bit` of `data`, least significant first; the
/// caller has checked that they lie inside `data`.
fn unpack(data: &[u8], bit: usize, w: usize) -> u64 {
    if w == 0 {
        return 0;
    }
    let at = bit / 8;
    let shift = bit % 8;
    let mut b = [0u8; 16];
    let avail = (data.len() - at).min(16);
    b[..avail].copy_from_slice(&data[at..at + avail]);
    let word = u128::from_le_bytes(b) >> shift;
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    word as u64 & mask
}

#[cfg(test)]
mod tests {
    use super::super::thrift::push_uleb128 as varint;
    use super::*;

    fn zz(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }

    fn decode_all(data: &[u8], bits: u32, n: usize) -> Result<Vec<i64>, ReadError> {
        let mut d = Delta::new(data, 0..data.len(), bits)?;
        let mut out = vec![0; n];
        d.decode(data, &mut out)?;
        Ok(out)
    }

    /// A header, then one block of one miniblock of 128 values all of
    /// width `w` and delta bits `fill`.
    fn one_block(total: u64, first: i64, min_delta: i64, w: u8, fill: u8) -> Vec<u8> {
        let mut d = Vec::new();
        varint(&mut d, 128);
        varint(&mut d, 1);
        varint(&mut d, total);
        varint(&mut d, zz(first));
        varint(&mut d, zz(min_delta));
        d.push(w);
        d.extend(std::iter::repeat_n(fill, 128 * usize::from(w) / 8));
        d
    }

    #[test]
    fn decodes_a_block() {
        // Deltas of min_delta + 1 each (all bits set in width 1).
        let data = one_block(5, 10, -3, 1, 0xff);
        assert_eq!(decode_all(&data, 64, 5).unwrap(), vec![10, 8, 6, 4, 2]);
        // Width 0: an arithmetic progression.
        let data = one_block(4, -1, 7, 0, 0);
        assert_eq!(decode_all(&data, 32, 4).unwrap(), vec![-1, 6, 13, 20]);
        // Width 64 on 64-bit values: wrapping.
        let data = one_block(2, i64::MAX, 0, 64, 0xff);
        assert_eq!(decode_all(&data, 64, 2).unwrap(), vec![i64::MAX, i64::MAX - 1]);
    }

    #[test]
    fn hostile_streams_are_errors() {
        // Bit widths past the physical type.
        assert!(decode_all(&one_block(3, 0, 0, 33, 0), 32, 3).is_err());
        assert!(decode_all(&one_block(3, 0, 0, 65, 0), 64, 3).is_err());
        assert!(decode_all(&one_block(3, 0, 0, 200, 0), 64, 3).is_err());
        // First value and minimum delta past 32 bits.
        assert!(decode_all(&one_block(3, 1 << 40, 0, 1, 0), 32, 3).is_err());
        assert!(decode_all(&one_block(3, 0, 1 << 40, 1, 0), 32, 3).is_err());
        // Absurd miniblock counts: zero, not dividing the block, 2^60.
        for (block, minis) in [(128u64, 0u64), (128, 3), (1 << 62, 1 << 60), (u64::MAX >> 1, 1)] {
            let mut d = Vec::new();
            varint(&mut d, block);
            varint(&mut d, minis);
            varint(&mut d, 10);
            varint(&mut d, 0);
            d.extend([0; 16]);
            assert!(decode_all(&d, 64, 3).is_err(), "{block} {minis}");
        }
        // 2^30 miniblocks of 128 values claimed with 20 bytes of widths.
        let mut d = Vec::new();
        varint(&mut d, 128 << 30);
        varint(&mut d, 1 << 30);
        varint(&mut d, 1000);
        varint(&mut d, 0);
        varint(&mut d, 0);
        d.extend([1; 20]);
        assert!(decode_all(&d, 64, 10).is_err());
        // Truncated anywhere: an error, never a panic.
        let data = one_block(100, 5, -2, 7, 0x5a);
        // 99 deltas of 7 bits need 87 of the block's 112 bytes.
        for cut in 0..data.len() - 112 + 87 {
            assert!(decode_all(&data[..cut], 64, 100).is_err(), "cut {cut}");
        }
        // More values asked than the header holds.
        assert!(decode_all(&one_block(3, 0, 0, 1, 0), 64, 4).is_err());
    }
}
