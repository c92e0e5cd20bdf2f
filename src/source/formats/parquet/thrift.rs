//! The Thrift compact protocol, read over a byte slice: Parquet's page
//! headers and footer are Thrift structs. The parquet crate keeps its
//! decoder private, so preflight reads what it must check before that crate
//! does (page headers: `pages`; a footer it cannot decode: `footer`).

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Bad {
    /// The bytes end inside the header.
    Short,
    Corrupt(&'static str),
}

// Thrift compact protocol type codes.
pub(super) const TRUE: u8 = 1;
pub(super) const FALSE: u8 = 2;
pub(super) const BYTE: u8 = 3;
pub(super) const I16: u8 = 4;
pub(super) const I32: u8 = 5;
pub(super) const I64: u8 = 6;
pub(super) const DOUBLE: u8 = 7;
pub(super) const BINARY: u8 = 8;
pub(super) const LIST: u8 = 9;
pub(super) const SET: u8 = 10;
pub(super) const MAP: u8 = 11;
pub(super) const STRUCT: u8 = 12;
pub(super) const UUID: u8 = 13;

/// Nesting deeper than this is corrupt (Parquet's headers nest 3 deep).
pub(super) const MAX_DEPTH: u32 = 32;

/// Writes `v` as [`uleb128`] reads it (hand-made pages in tests).
#[cfg(test)]
pub(super) fn push_uleb128(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// An unsigned LEB128 varint in `data[*pos..end]`, `pos` advanced past it:
/// Thrift's compact integers, the RLE/bit-packed hybrid's run headers and
/// DELTA_BINARY_PACKED's header fields all use it.
pub(super) fn uleb128(data: &[u8], pos: &mut usize, end: usize) -> Result<u64, Bad> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        if *pos >= end.min(data.len()) {
            return Err(Bad::Short);
        }
        let b = data[*pos];
        *pos += 1;
        if shift == 63 && b > 1 {
            return Err(Bad::Corrupt("a varint overflows 64 bits"));
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Bad::Corrupt("a varint overflows 64 bits"))
}

/// A reader of the Thrift compact protocol over a byte slice.
pub(super) struct Compact<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl Compact<'_> {
    pub(super) fn byte(&mut self) -> Result<u8, Bad> {
        let b = *self.buf.get(self.pos).ok_or(Bad::Short)?;
        self.pos += 1;
        Ok(b)
    }

    pub(super) fn bytes(&mut self, n: u64) -> Result<(), Bad> {
        let n = usize::try_from(n).map_err(|_| Bad::Short)?;
        if self.buf.len() - self.pos < n {
            return Err(Bad::Short);
        }
        self.pos += n;
        Ok(())
    }

    pub(super) fn varint(&mut self) -> Result<u64, Bad> {
        uleb128(self.buf, &mut self.pos, self.buf.len())
    }

    pub(super) fn zigzag(&mut self) -> Result<i64, Bad> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    pub(super) fn i32(&mut self) -> Result<i32, Bad> {
        i32::try_from(self.zigzag()?).map_err(|_| Bad::Corrupt("an i32 field is out of range"))
    }

    /// The next field's id and type, or `None` at the struct's end.
    pub(super) fn field(&mut self, last: &mut i16) -> Result<Option<(i16, u8)>, Bad> {
        let b = self.byte()?;
        if b == 0 {
            return Ok(None);
        }
        let delta = (b >> 4) as i16;
        let id = if delta == 0 {
            i16::try_from(self.zigzag()?).map_err(|_| Bad::Corrupt("a field id is out of range"))?
        } else {
            last.checked_add(delta)
                .ok_or(Bad::Corrupt("a field id is out of range"))?
        };
        *last = id;
        Ok(Some((id, b & 0x0f)))
    }

    /// A struct whose fields 1..=N are i32s (a data page header); other
    /// fields are skipped. Also where a field 7 reading `false` is (a v2
    /// header's `is_compressed`): the byte whose type nibble holds it.
    pub(super) fn struct_i32s<const N: usize>(&mut self) -> Result<([Option<i32>; N], Option<usize>), Bad> {
        let mut out = [None; N];
        let mut false_7 = None;
        let mut last = 0i16;
        loop {
            let at = self.pos;
            let Some((id, ty)) = self.field(&mut last)? else { break };
            match usize::try_from(id).ok().filter(|&i| (1..=N).contains(&i)) {
                Some(i) if ty == I32 => out[i - 1] = Some(self.i32()?),
                _ if id == 7 && ty == FALSE => false_7 = Some(at),
                _ => self.skip(ty, 1)?,
            }
        }
        Ok((out, false_7))
    }

    pub(super) fn skip(&mut self, ty: u8, depth: u32) -> Result<(), Bad> {
        if depth > MAX_DEPTH {
            return Err(Bad::Corrupt("nested too deeply"));
        }
        match ty {
            TRUE | FALSE => Ok(()),
            BYTE => self.bytes(1),
            I16 | I32 | I64 => self.varint().map(|_| ()),
            DOUBLE => self.bytes(8),
            UUID => self.bytes(16),
            BINARY => {
                let n = self.varint()?;
                self.bytes(n)
            }
            LIST | SET => {
                let b = self.byte()?;
                let n = match b >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.skip_elements(b & 0x0f, n, depth)
            }
            MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let kv = self.byte()?;
                for _ in 0..n {
                    self.skip_element(kv >> 4, depth)?;
                    self.skip_element(kv & 0x0f, depth)?;
                }
                Ok(())
            }
            STRUCT => {
                let mut last = 0i16;
                while let Some((_, t)) = self.field(&mut last)? {
                    self.skip(t, depth + 1)?;
                }
                Ok(())
            }
            _ => Err(Bad::Corrupt("an unknown field type")),
        }
    }

    pub(super) fn skip_elements(&mut self, ty: u8, n: u64, depth: u32) -> Result<(), Bad> {
        for _ in 0..n {
            self.skip_element(ty, depth)?;
        }
        Ok(())
    }

    /// Elements of lists, sets and maps: booleans take a byte each.
    pub(super) fn skip_element(&mut self, ty: u8, depth: u32) -> Result<(), Bad> {
        match ty {
            TRUE | FALSE => self.bytes(1),
            _ => self.skip(ty, depth + 1),
        }
    }
}
