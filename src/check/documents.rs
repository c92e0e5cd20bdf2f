//! Documents of a flat token stream: the runs of tokens between two
//! end-of-document ids (`eod_id`), judged by the length rules.
//!
//! A raw nanoGPT or llm.c `.bin` is one scalar column of token ids, row i
//! being token i; the documents are only visible through the EOD id the
//! tokenizer job wrote between them. nanoGPT's `prepare.py` appends it after
//! each document, llm.c's `fineweb.py` (and modded-nanogpt's) puts it before
//! each one, and neither data loader looks at documents at all (they cut
//! windows of `block_size` / `T` tokens across them); Megatron's
//! `--append-eod` puts it last in each sequence, and its `reset_position_ids`
//! restarts positions after it. So a document here is what lies *between*
//! two EOD ids, the ids themselves not counted: the same lengths whether the
//! writer prepends or appends, an empty document (two EODs in a row, an
//! empty text tokenised) has length 0 and is reported under its own rule,
//! `empty_document` (and under no length rule, as a null row is only `null`).
//!
//! The two ends of a file are not whole documents: llm.c and modded-nanogpt
//! cut their shards at a fixed token count, in the middle of a document, and
//! a leading (llm.c) or trailing (nanoGPT) EOD leaves nothing outside it. So
//! the tokens before a file's first EOD and after its last are judged only
//! where that can never be a false alarm: by `max_length`, when they alone
//! exceed it; an empty end is no document.
//!
//! Documents never cross units: the token reader ends every unit but the
//! last right after an EOD id ([`crate::source::read::Source::documents`]), so a
//! unit's first document starts at its first row. Within a unit, batches
//! come in row order and a [`Cursor`] carries the open document from one to
//! the next; examples and violations name the document's first row, its
//! value is the document's length.

use arrow::array::downcast_integer;
use arrow::array::{Array, AsArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Float32Type, Float64Type};

use super::{ColumnCheck, Place, type_name};
use crate::check::tally::{Spot, Tally, Value};

/// Tokens looked at per step of the search for EOD ids: a block is first
/// tested as a whole (a branch-free, vectorised comparison), and only a
/// block holding an EOD is walked token by token.
const BLOCK: usize = 64;

/// The open document of one column within a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cursor {
    /// Row of the open document's first token.
    start: u64,
    /// Whether it began at the file's first row (its beginning may lie in
    /// another shard: only `max_length` judges it).
    edge: bool,
}

/// The open documents of a unit, one per schema column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Documents {
    cursors: Vec<Option<Cursor>>,
    /// The row after the last one checked.
    end: u64,
}

impl Documents {
    /// Nothing open yet, for `columns` schema columns.
    pub(crate) fn new(columns: usize) -> Documents {
        Documents {
            cursors: vec![None; columns],
            end: 0,
        }
    }

    /// The first row of the earliest open document: violations at or past
    /// it may still be preceded by that document's own.
    pub(crate) fn open_from(&self) -> Option<u64> {
        self.cursors.iter().flatten().map(|c| c.start).min()
    }
}

/// Judges the documents closed in one batch of column `col`: `array` holds
/// rows `at.first_row..`, `cursor` the document left open by the previous
/// batch of the unit (`None` before the unit's first batch).
pub(crate) fn check_documents(
    col: &ColumnCheck,
    ci: usize,
    eod: i128,
    array: &dyn Array,
    docs: &mut Documents,
    at: Place,
    tally: &mut Tally,
) -> Result<(), String> {
    let first = at.first_row;
    docs.end = first + array.len() as u64;
    let Some(cursor) = docs.cursors.get_mut(ci) else {
        return Ok(());
    };
    let open = cursor.get_or_insert(Cursor {
        start: first,
        edge: first == 0,
    });
    let mut close = |row: u64| {
        judge(col, *open, row - open.start, at.file, tally, false);
        *open = Cursor {
            start: row + 1,
            edge: false,
        };
    };
    macro_rules! ints {
        ($t:ty) => {{
            let a = array.as_primitive::<$t>();
            // An id the type cannot hold never occurs.
            if let Ok(e) = <$t as ArrowPrimitiveType>::Native::try_from(eod) {
                each_eod(a.values(), e, |p| close(first + p as u64));
            }
        }};
    }
    macro_rules! floats {
        ($t:ty) => {{
            let a = array.as_primitive::<$t>();
            let e = eod as <$t as ArrowPrimitiveType>::Native;
            if e as i128 == eod {
                each_eod(a.values(), e, |p| close(first + p as u64));
            }
        }};
    }
    downcast_integer! {
        array.data_type() => (ints),
        DataType::Float32 => floats!(Float32Type),
        DataType::Float64 => floats!(Float64Type),
        t => return Err(not_a_stream(t)),
    }
    Ok(())
}

/// Why an `eod_id` column of this type (or of a source that does not keep
/// documents within units) has no documents to judge.
pub(crate) fn not_a_stream(t: &DataType) -> String {
    match t {
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => format!(
            "is {}: its rows are sequences already, each its own document (`eod_id` splits a flat token stream, \
             a raw or llm.c .bin; drop it, and max_length judges the rows)",
            type_name(t)
        ),
        _ => "`eod_id` splits a flat token stream (a raw or llm.c .bin) into documents; this file is no such stream"
            .to_string(),
    }
}

/// Judges the document left open at the end of a unit: the tokens after the
/// file's last EOD id (every unit but the last ends right after one).
pub(crate) fn finish_documents(col: &ColumnCheck, ci: usize, docs: &Documents, file: usize, tally: &mut Tally) {
    if let Some(Some(open)) = docs.cursors.get(ci)
        && docs.end > open.start
    {
        judge(col, *open, docs.end - open.start, file, tally, true);
    }
}

/// Judges one document of `len` tokens; `tail` marks the file's trailing end.
fn judge(col: &ColumnCheck, doc: Cursor, len: u64, file: usize, tally: &mut Tally, tail: bool) {
    let s = &col.slots;
    let spot = Spot::row(doc.start);
    if doc.edge || tail {
        // A file's end: possibly part of a document of another shard.
        if let (Some(max), Some(slot)) = (col.spec.max_length, s.max_length)
            && len > max
        {
            tally.hit(slot, file, spot, || Value::Int(len.into()));
        }
        return;
    }
    if len == 0 {
        if let Some(slot) = s.empty_document {
            tally.hit(slot, file, spot, || Value::Int(0));
        }
        return;
    }
    if let (Some(max), Some(slot)) = (col.spec.max_length, s.max_length)
        && len > max
    {
        tally.hit(slot, file, spot, || Value::Int(len.into()));
    }
    if let (Some(min), Some(slot)) = (col.spec.min_length, s.min_length)
        && len < min
    {
        tally.hit(slot, file, spot, || Value::Int(len.into()));
    }
}

/// Calls `f` with the position of every `eod` in `values`, in order.
#[inline]
fn each_eod<T: Copy + PartialEq>(values: &[T], eod: T, mut f: impl FnMut(usize)) {
    for (b, block) in values.chunks(BLOCK).enumerate() {
        if block.iter().fold(false, |hit, &v| hit | (v == eod)) {
            for (i, &v) in block.iter().enumerate() {
                if v == eod {
                    f(b * BLOCK + i);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eods_are_found_in_every_block_position() {
        let mut v = vec![7u16; 300];
        for p in [0, 63, 64, 65, 127, 200, 299] {
            v[p] = 9;
        }
        let mut found = Vec::new();
        each_eod(&v, 9, |p| found.push(p));
        assert_eq!(found, [0, 63, 64, 65, 127, 200, 299]);
    }
}
