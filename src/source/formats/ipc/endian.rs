//! Arrays decoded from IPC data written on a big-endian machine, put into
//! native byte order.
//!
//! arrow-rs reads IPC buffers as native (little-endian) bytes and has no
//! byte-swapping reader: its file reader refuses big-endian files and its
//! stream reader misreads them. pyarrow swaps on read, and so does preflight:
//! the batch is decoded without validation (its offsets are still
//! big-endian), every fixed-width buffer is swapped here by the width of its
//! elements, and the result is fully validated before anything reads it.

use arrow::array::{ArrayData, ArrayRef, RecordBatch, RecordBatchOptions, make_array};
use arrow::buffer::{Buffer, MutableBuffer};
use arrow::datatypes::{DataType, IntervalUnit, UnionMode};

use crate::error::ReadError;

/// How one buffer's bytes are swapped.
#[derive(Clone, Copy)]
enum Swap {
    /// Left as is: bytes, bits, or an 8-bit type.
    Keep,
    /// Elements of this many bytes, each reversed as a whole.
    Width(usize),
    /// Month-day-nano intervals: two 4-byte fields and an 8-byte one.
    MonthDayNano,
    /// String and binary views: a 4-byte length, then (past 12 bytes) a
    /// 4-byte prefix kept as is, a 4-byte buffer index and a 4-byte offset.
    Views,
}

/// The batch's columns in native byte order, validated in full.
pub(crate) fn batch_to_native(batch: RecordBatch) -> Result<RecordBatch, ReadError> {
    let columns = batch
        .columns()
        .iter()
        .map(|c| array_to_native(c))
        .collect::<Result<Vec<_>, _>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(batch.schema(), columns, &options)?)
}

/// One array in native byte order, validated in full.
pub(crate) fn array_to_native(array: &ArrayRef) -> Result<ArrayRef, ReadError> {
    let data = to_native(array.to_data())?;
    data.validate_full()
        .map_err(|e| ReadError::new(format!("invalid big-endian data: {e}")))?;
    Ok(make_array(data))
}

fn to_native(data: ArrayData) -> Result<ArrayData, ReadError> {
    use DataType as T;
    let swaps: &[Swap] = match data.data_type() {
        T::Null | T::Boolean | T::Int8 | T::UInt8 | T::FixedSizeBinary(_) => &[],
        T::Struct(_) | T::FixedSizeList(..) | T::RunEndEncoded(..) => &[],
        T::Int16 | T::UInt16 | T::Float16 => &[Swap::Width(2)],
        T::Int32 | T::UInt32 | T::Float32 | T::Date32 | T::Time32(_) | T::Decimal32(..) => &[Swap::Width(4)],
        T::Int64 | T::UInt64 | T::Float64 | T::Date64 | T::Time64(_) | T::Timestamp(..) | T::Duration(_) => {
            &[Swap::Width(8)]
        }
        T::Decimal64(..) => &[Swap::Width(8)],
        T::Decimal128(..) => &[Swap::Width(16)],
        T::Decimal256(..) => &[Swap::Width(32)],
        // Day-time intervals are two 4-byte fields, not one 8-byte number.
        T::Interval(IntervalUnit::YearMonth | IntervalUnit::DayTime) => &[Swap::Width(4)],
        T::Interval(IntervalUnit::MonthDayNano) => &[Swap::MonthDayNano],
        T::Utf8 | T::Binary | T::List(_) | T::Map(..) => &[Swap::Width(4)],
        T::LargeUtf8 | T::LargeBinary | T::LargeList(_) => &[Swap::Width(8)],
        T::ListView(_) => &[Swap::Width(4), Swap::Width(4)],
        T::LargeListView(_) => &[Swap::Width(8), Swap::Width(8)],
        T::Utf8View | T::BinaryView => &[Swap::Views],
        T::Union(_, UnionMode::Sparse) => &[Swap::Keep],
        T::Union(_, UnionMode::Dense) => &[Swap::Keep, Swap::Width(4)],
        // The keys only: the values are a dictionary batch of their own,
        // put into native order when it was read.
        T::Dictionary(key, _) => {
            let width = key.primitive_width().unwrap_or(1);
            let buffers = swap_buffers(data.buffers(), &[Swap::Width(width)]);
            return rebuild(data, buffers, None);
        }
    };
    let buffers = swap_buffers(data.buffers(), swaps);
    let children = data
        .child_data()
        .iter()
        .map(|c| to_native(c.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    rebuild(data, buffers, Some(children))
}

fn rebuild(data: ArrayData, buffers: Vec<Buffer>, children: Option<Vec<ArrayData>>) -> Result<ArrayData, ReadError> {
    let mut builder = data.into_builder().buffers(buffers);
    if let Some(children) = children {
        builder = builder.child_data(children);
    }
    builder
        .build()
        .map_err(|e| ReadError::new(format!("invalid big-endian data: {e}")))
}

fn swap_buffers(buffers: &[Buffer], swaps: &[Swap]) -> Vec<Buffer> {
    buffers
        .iter()
        .enumerate()
        .map(|(i, b)| swap(b, swaps.get(i).copied().unwrap_or(Swap::Keep)))
        .collect()
}

/// A copy of `buffer` with its elements' bytes reversed (into a buffer
/// aligned for any element type).
fn swap(buffer: &Buffer, how: Swap) -> Buffer {
    if matches!(how, Swap::Keep | Swap::Width(1)) {
        return buffer.clone();
    }
    let mut out = MutableBuffer::new(buffer.len());
    out.extend_from_slice(buffer.as_slice());
    let bytes = out.as_slice_mut();
    match how {
        Swap::Keep => {}
        Swap::Width(w) => bytes.chunks_exact_mut(w).for_each(<[u8]>::reverse),
        Swap::MonthDayNano => {
            for v in bytes.chunks_exact_mut(16) {
                v[0..4].reverse();
                v[4..8].reverse();
                v[8..16].reverse();
            }
        }
        Swap::Views => {
            for v in bytes.chunks_exact_mut(16) {
                v[0..4].reverse();
                let len = u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
                if len > 12 {
                    v[8..12].reverse();
                    v[12..16].reverse();
                }
            }
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{AsArray, Int32Array, ListArray};
    use arrow::datatypes::Int32Type;

    /// Big-endian bytes of `values` decoded as if native, as the reader does.
    fn as_if_native(values: &[i32]) -> ArrayData {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        ArrayData::builder(DataType::Int32)
            .len(values.len())
            .add_buffer(Buffer::from_vec(bytes))
            .build()
            .unwrap()
    }

    #[test]
    fn swaps_values_and_offsets() {
        let values = as_if_native(&[1, -2, 300_000]);
        let swapped = make_array(to_native(values.clone()).unwrap());
        assert_eq!(
            swapped.as_primitive::<Int32Type>(),
            &Int32Array::from(vec![1, -2, 300_000])
        );
        // A list of those: its offsets [0, 2, 3] are big-endian too.
        let offsets: Vec<u8> = [0i32, 2, 3].iter().flat_map(|v| v.to_be_bytes()).collect();
        let field = std::sync::Arc::new(arrow::datatypes::Field::new_list_field(DataType::Int32, true));
        let list = unsafe {
            ArrayData::builder(DataType::List(field))
                .len(2)
                .add_buffer(Buffer::from_vec(offsets))
                .child_data(vec![values])
                .build_unchecked()
        };
        let native = array_to_native(&make_array(list)).unwrap();
        let native: &ListArray = native.as_list();
        assert_eq!(native.value_offsets(), &[0, 2, 3]);
        assert_eq!(native.value(1).as_primitive::<Int32Type>().value(0), 300_000);
    }
}
