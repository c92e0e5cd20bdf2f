//! Row shapes of a list column from its levels alone: which rows are null,
//! and how many elements each of the others holds.
//!
//! In a top-level list column a repetition level of 0 starts a row and 1
//! adds an element to it; the definition level at a row's start tells a
//! null list (below the list's own level), an empty one (at it) and a first
//! element (above it). That is all a length rule needs, so the values behind
//! the levels are never decoded (see `pages`). The levels are walked run by
//! run and a page is left as soon as a batch's rows are known, so memory
//! holds one batch of rows however many a page claims in a few bytes.

use std::sync::Arc;

use arrow::array::{ArrayRef, LargeListArray, NullArray};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::{DataType, Field};

use super::pages::{LevelEncoding, PageWalker, bit_width};
use super::thrift::{Bad, uleb128};
use crate::error::ReadError;

/// Reads the shapes of one list column chunk, batch by batch.
pub(super) struct ShapeReader<'f> {
    pages: PageWalker<'f>,
    max_rep: i16,
    max_def: i16,
    /// Rows the footer says the chunk holds.
    footer_rows: u64,
    /// Rows handed out so far.
    handed: u64,
    /// The current page's level bytes and how far they have been walked.
    rep_bytes: Vec<u8>,
    def_bytes: Vec<u8>,
    rep: Levels,
    def: Levels,
    rows: Rows,
    /// Whether every page has been read.
    done: bool,
}

impl<'f> ShapeReader<'f> {
    /// `element_def` is the definition level of the list's repeated node.
    pub(super) fn new(
        pages: PageWalker<'f>,
        max_rep: i16,
        max_def: i16,
        element_def: i16,
        footer_rows: u64,
    ) -> Result<Self, ReadError> {
        if max_rep != 1 || !(1..=max_def).contains(&element_def) || max_def > 255 {
            return Err(ReadError::new(format!(
                "levels (repetition {max_rep}, definition {element_def} of {max_def}) are not those of a list"
            )));
        }
        Ok(ShapeReader {
            pages,
            max_rep,
            max_def,
            footer_rows,
            handed: 0,
            rep_bytes: Vec::new(),
            def_bytes: Vec::new(),
            rep: Levels::new(LevelEncoding::Rle, 1, 0),
            def: Levels::new(LevelEncoding::Rle, 1, 0),
            rows: Rows {
                lens: Vec::new(),
                valid: Vec::new(),
                element_def: element_def as u8,
            },
            done: false,
        })
    }

    /// Walks levels until `want` rows are buffered or the chunk ends.
    fn fill(&mut self, want: usize) -> Result<(), ReadError> {
        while self.rows.lens.len() < want {
            if self.rep.left == 0 {
                let Some(page) = self.pages.next_page()? else {
                    self.done = true;
                    return Ok(());
                };
                self.rep_bytes.clear();
                self.rep_bytes.extend_from_slice(page.rep);
                self.def_bytes.clear();
                self.def_bytes.extend_from_slice(page.def);
                self.rep = Levels::new(page.rep_encoding, self.max_rep, page.values);
                self.def = Levels::new(page.def_encoding, self.max_def, page.values);
                continue;
            }
            walk(
                &mut self.rep,
                &self.rep_bytes,
                &mut self.def,
                &self.def_bytes,
                &mut self.rows,
                want,
            )?;
        }
        Ok(())
    }

    /// The next `n` rows as a list array whose elements are nulls: the
    /// shape of the column, offsets and row nulls exact.
    pub(super) fn next_rows(&mut self, n: usize) -> Result<ArrayRef, ReadError> {
        // A row is complete once the next one starts or the chunk ends.
        self.fill(n.saturating_add(1))?;
        let buffered = self.rows.lens.len();
        let complete = if self.done {
            buffered
        } else {
            buffered.saturating_sub(1)
        };
        if complete < n {
            return Err(super::fewer_rows(self.footer_rows, self.handed + complete as u64));
        }
        let mut offsets = Vec::with_capacity(n + 1);
        let mut total = 0u64;
        offsets.push(0i64);
        for &len in &self.rows.lens[..n] {
            total += len;
            offsets.push(i64::try_from(total).map_err(|_| ReadError::new("list lengths overflow"))?);
        }
        let valid = &self.rows.valid[..n];
        let nulls = valid.contains(&false).then(|| NullBuffer::from(valid));
        self.rows.lens.drain(..n);
        self.rows.valid.drain(..n);
        self.handed += n as u64;
        let items = usize::try_from(total).map_err(|_| ReadError::new("list lengths overflow"))?;
        let array = LargeListArray::try_new(
            Arc::new(Field::new_list_field(DataType::Null, true)),
            OffsetBuffer::new(offsets.into()),
            Arc::new(NullArray::new(items)),
            nulls,
        )?;
        Ok(Arc::new(array))
    }

    /// After the last batch: the rest of the chunk must start no further
    /// row.
    pub(super) fn finish(&mut self) -> Result<(), ReadError> {
        self.fill(1)?;
        if !self.rows.lens.is_empty() {
            return Err(super::more_rows(self.footer_rows));
        }
        if self.handed != self.footer_rows {
            return Err(super::fewer_rows(self.footer_rows, self.handed));
        }
        Ok(())
    }
}

/// How many value slots of a column chunk hold no value (definition level
/// below `max_def`: null values, and in a list column also null and empty
/// lists), from the levels alone — what a statistics null count says.
pub(super) fn null_slots(mut pages: PageWalker<'_>, max_def: i16) -> Result<u64, ReadError> {
    let mut nulls = 0u64;
    while let Some(page) = pages.next_page()? {
        let mut def = Levels::new(page.def_encoding, max_def, page.values);
        while def.left > 0 {
            match def.peek(page.def)? {
                Run::Repeat(v, k) => {
                    if i16::from(v) < max_def {
                        nulls += k as u64;
                    }
                    def.advance(k);
                }
                Run::Literal(k) => {
                    nulls += def.literal()[..k].iter().filter(|&&v| i16::from(v) < max_def).count() as u64;
                    def.advance(k);
                }
            }
        }
    }
    Ok(nulls)
}

/// Walks the current page's levels until it ends or `want` rows are
/// buffered (a row starting beyond them is left for the next call).
fn walk(
    rep: &mut Levels,
    rep_data: &[u8],
    def: &mut Levels,
    def_data: &[u8],
    rows: &mut Rows,
    want: usize,
) -> Result<(), ReadError> {
    while rep.left > 0 {
        let room = want.saturating_sub(rows.lens.len());
        let r = rep.peek(rep_data)?;
        let d = def.peek(def_data)?;
        match r {
            Run::Repeat(v, k) if v != 0 => {
                rows.extend(k as u64)?;
                rep.advance(k);
                def.skip(def_data, k)?;
            }
            Run::Repeat(_, k) => {
                if room == 0 {
                    return Ok(());
                }
                let k = k.min(d.len()).min(room);
                match d {
                    Run::Repeat(dv, _) => rows.start(dv, k),
                    Run::Literal(_) => {
                        for &dv in &def.literal()[..k] {
                            rows.start(dv, 1);
                        }
                    }
                }
                rep.advance(k);
                def.advance(k);
            }
            Run::Literal(k) => {
                let k = k.min(d.len());
                let mut used = 0;
                let mut room = room;
                for (j, &rv) in rep.literal()[..k].iter().enumerate() {
                    if rv == 0 {
                        if room == 0 {
                            break;
                        }
                        let dv = match d {
                            Run::Repeat(dv, _) => dv,
                            Run::Literal(_) => def.literal()[j],
                        };
                        rows.start(dv, 1);
                        room -= 1;
                    } else {
                        rows.extend(1)?;
                    }
                    used += 1;
                }
                rep.advance(used);
                def.advance(used);
                if used < k {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// Rows read and not yet handed out; the last may still grow until the
/// next row starts or the chunk ends.
struct Rows {
    lens: Vec<u64>,
    valid: Vec<bool>,
    /// Definition level of an element slot; one less is an empty list.
    element_def: u8,
}

impl Rows {
    /// `k` rows whose first slot has definition level `def`.
    fn start(&mut self, def: u8, k: usize) {
        let (len, valid) = if def >= self.element_def {
            (1, true)
        } else if def + 1 == self.element_def {
            (0, true)
        } else {
            (0, false)
        };
        self.lens.resize(self.lens.len() + k, len);
        self.valid.resize(self.valid.len() + k, valid);
    }

    fn extend(&mut self, k: u64) -> Result<(), ReadError> {
        let last = self
            .lens
            .last_mut()
            .ok_or_else(|| ReadError::new("the first page continues a row that never started"))?;
        *last += k;
        Ok(())
    }
}

/// The current run of a level stream: `k` copies of a value, or `k` values
/// decoded into the stream's literal buffer.
#[derive(Debug, Clone, Copy)]
enum Run {
    Repeat(u8, usize),
    Literal(usize),
}

impl Run {
    fn len(&self) -> usize {
        match *self {
            Run::Repeat(_, k) | Run::Literal(k) => k,
        }
    }
}

/// Values decoded from a bit-packed run at a time.
const LITERAL: usize = 512;

/// Where a stream of levels (RLE / bit-packing hybrid, or the deprecated
/// bit-packed encoding) stands; the bytes are passed to each call.
struct Levels {
    pos: usize,
    width: u32,
    encoding: LevelEncoding,
    /// Levels of the page not yet handed out.
    left: usize,
    /// The current run repeats this value.
    repeat: Option<u8>,
    /// Values left in the current run (for a bit-packed run, not yet decoded).
    run: usize,
    /// Bit position (deprecated bit-packed encoding).
    bit: u64,
    lit: [u8; LITERAL],
    lit_at: usize,
    lit_len: usize,
}

impl Levels {
    fn new(encoding: LevelEncoding, max: i16, values: usize) -> Self {
        let width = bit_width(max);
        let mut levels = Levels {
            pos: 0,
            width,
            encoding,
            left: values,
            repeat: None,
            run: 0,
            bit: 0,
            lit: [0; LITERAL],
            lit_at: 0,
            lit_len: 0,
        };
        if width == 0 {
            // No levels stored: all are 0.
            levels.repeat = Some(0);
            levels.run = values;
        } else if encoding == LevelEncoding::BitPacked {
            levels.run = values;
        }
        levels
    }

    fn peek(&mut self, data: &[u8]) -> Result<Run, ReadError> {
        loop {
            if self.left == 0 {
                return Err(ReadError::new("the levels hold fewer values than the page says"));
            }
            if let Some(v) = self.repeat
                && self.run > 0
            {
                return Ok(Run::Repeat(v, self.run.min(self.left)));
            }
            if self.lit_at < self.lit_len {
                return Ok(Run::Literal((self.lit_len - self.lit_at).min(self.left)));
            }
            if self.repeat.is_none() && self.run > 0 {
                self.unpack(data)?;
                continue;
            }
            self.next_header(data)?;
        }
    }

    fn literal(&self) -> &[u8] {
        &self.lit[self.lit_at..self.lit_len]
    }

    fn advance(&mut self, k: usize) {
        if self.repeat.is_some() && self.run > 0 {
            self.run -= k;
        } else {
            self.lit_at += k;
        }
        self.left -= k;
    }

    fn skip(&mut self, data: &[u8], mut k: usize) -> Result<(), ReadError> {
        while k > 0 {
            let take = self.peek(data)?.len().min(k);
            self.advance(take);
            k -= take;
        }
        Ok(())
    }

    /// Reads the next run header of the hybrid encoding.
    fn next_header(&mut self, data: &[u8]) -> Result<(), ReadError> {
        let end = || ReadError::new("the levels end before the page's last value");
        if self.encoding == LevelEncoding::BitPacked {
            return Err(end());
        }
        let header = uleb128(data, &mut self.pos, data.len()).map_err(|e| match e {
            Bad::Short => end(),
            Bad::Corrupt(_) => ReadError::new("a level run header overflows"),
        })?;
        let count = usize::try_from(header >> 1).unwrap_or(usize::MAX);
        if header & 1 == 0 {
            let v = *data.get(self.pos).ok_or_else(end)?;
            self.pos += 1;
            self.repeat = Some(v);
            self.run = count;
        } else {
            // `count` groups of 8 values in `width` bytes each, as far as the
            // bytes go.
            let groups = count.min((data.len() - self.pos) / self.width as usize);
            self.repeat = None;
            self.run = groups * 8;
        }
        Ok(())
    }

    /// Decodes the next values of a bit-packed run into the literal buffer,
    /// least significant bit first (the hybrid's runs; and the deprecated
    /// encoding as parquet-cpp and arrow-rs read it, which is what the
    /// training stack sees, although the format's text says the opposite).
    fn unpack(&mut self, data: &[u8]) -> Result<(), ReadError> {
        let n = self.run.min(LITERAL);
        let w = self.width;
        let mask = (1u32 << w) - 1;
        match self.encoding {
            LevelEncoding::Rle => {
                // Whole groups of 8 values.
                let bytes = n / 8 * w as usize;
                let src = &data[self.pos..self.pos + bytes];
                let (mut acc, mut bits, mut out) = (0u64, 0u32, 0usize);
                for &b in src {
                    acc |= u64::from(b) << bits;
                    bits += 8;
                    while bits >= w {
                        self.lit[out] = (acc as u32 & mask) as u8;
                        out += 1;
                        acc >>= w;
                        bits -= w;
                    }
                }
                self.pos += bytes;
            }
            LevelEncoding::BitPacked => {
                // One bit stream for the page.
                let need = (self.bit + (n as u64) * u64::from(w)).div_ceil(8);
                if need > data.len() as u64 {
                    return Err(ReadError::new("the levels end before the page's last value"));
                }
                for slot in &mut self.lit[..n] {
                    let at = (self.bit / 8) as usize;
                    let word = u32::from(data[at]) | u32::from(data.get(at + 1).copied().unwrap_or(0)) << 8;
                    *slot = ((word >> (self.bit % 8)) & mask) as u8;
                    self.bit += u64::from(w);
                }
            }
        }
        self.run -= n;
        self.lit_at = 0;
        self.lit_len = n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::thrift::push_uleb128 as push_varint;
    use super::*;

    /// Encodes levels in the hybrid encoding: runs of 8+ equal values as
    /// repeats, the rest bit-packed in groups of 8.
    fn hybrid(levels: &[u8], width: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < levels.len() {
            let mut j = i;
            while j < levels.len() && levels[j] == levels[i] {
                j += 1;
            }
            if j - i >= 8 {
                push_varint(&mut out, ((j - i) as u64) << 1);
                out.push(levels[i]);
                i = j;
            } else {
                let groups = (levels.len() - i).min(8).div_ceil(8);
                push_varint(&mut out, (groups as u64) << 1 | 1);
                let mut acc = 0u64;
                let mut bits = 0;
                for k in 0..groups * 8 {
                    acc |= u64::from(*levels.get(i + k).unwrap_or(&0)) << bits;
                    bits += width;
                    while bits >= 8 {
                        out.push(acc as u8);
                        acc >>= 8;
                        bits -= 8;
                    }
                }
                i += groups * 8;
            }
        }
        out
    }

    fn decode_all(data: &[u8], encoding: LevelEncoding, max: i16, n: usize) -> Result<Vec<u8>, ReadError> {
        let mut l = Levels::new(encoding, max, n);
        let mut out = Vec::new();
        while l.left > 0 {
            match l.peek(data)? {
                Run::Repeat(v, k) => {
                    out.extend(std::iter::repeat_n(v, k));
                    l.advance(k);
                }
                Run::Literal(k) => {
                    out.extend_from_slice(&l.literal()[..k]);
                    l.advance(k);
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn hybrid_levels_round_trip() {
        let mut seed = 7u64;
        for width in 1..=3u32 {
            for n in [1usize, 7, 8, 9, 100, 5000] {
                let levels: Vec<u8> = (0..n)
                    .map(|i| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        if (seed >> 60) < 6 {
                            (i / 37 % 2) as u8
                        } else {
                            (seed >> 33) as u8 % (1 << width)
                        }
                    })
                    .collect();
                let max = (1i16 << width) - 1;
                let back = decode_all(&hybrid(&levels, width), LevelEncoding::Rle, max, n).unwrap();
                assert_eq!(back, levels, "width {width}, {n} levels");
            }
        }
    }

    #[test]
    fn deprecated_bit_packing_reads_as_parquet_cpp_and_arrow_rs_read_it() {
        // 0,1,2,3 in 2 bits each, least significant bits first: 11 10 01 00.
        assert_eq!(
            decode_all(&[0b1110_0100], LevelEncoding::BitPacked, 3, 4).unwrap(),
            vec![0, 1, 2, 3]
        );
        // 3 bits across a byte boundary: 5, 6, 7 = 101 110 111.
        assert_eq!(
            decode_all(&[0b1111_0101, 0b0000_0001], LevelEncoding::BitPacked, 7, 3).unwrap(),
            vec![5, 6, 7]
        );
        assert!(decode_all(&[0b1110_0100], LevelEncoding::BitPacked, 3, 5).is_err());
    }

    #[test]
    fn levels_that_end_early_are_errors() {
        let data = hybrid(&[1; 20], 1);
        assert!(decode_all(&data, LevelEncoding::Rle, 1, 21).is_err());
        assert!(decode_all(&data[..1], LevelEncoding::Rle, 1, 20).is_err());
        // A bit-packed run claiming more groups than its bytes hold.
        let mut data = Vec::new();
        push_varint(&mut data, 1000 << 1 | 1);
        data.push(0xff);
        assert_eq!(decode_all(&data, LevelEncoding::Rle, 1, 8).unwrap(), vec![1; 8]);
        assert!(decode_all(&data, LevelEncoding::Rle, 1, 9).is_err());
    }

    #[test]
    fn a_repeat_run_of_billions_costs_no_memory() {
        let mut data = Vec::new();
        push_varint(&mut data, (3u64 << 30) << 1);
        data.push(0);
        let mut l = Levels::new(LevelEncoding::Rle, 1, 3 << 30);
        assert!(matches!(l.peek(&data).unwrap(), Run::Repeat(0, k) if k == 3 << 30));
    }
}
