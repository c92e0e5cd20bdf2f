//! NumPy arrays as Arrow arrays, without a copy and without pyarrow: the
//! fast path of a DataLoader batch (`Validator.passes_numpy`).
//!
//! Why by hand: the buffer protocol is not in the stable ABI before Python
//! 3.11 (PyO3's `PyBuffer` is unavailable to an abi3-py39 wheel), and going
//! through pyarrow costs about 10 µs a column in Python calls, as much as
//! the kernels spend on a 32 x 512 batch. NumPy's `__array_interface__`
//! gives the data pointer, element type and shape of an array in one
//! attribute read.
//!
//! Only what maps exactly is taken: C-contiguous, aligned, native-endian
//! integers and floats of a known width. Anything else (booleans, which
//! Arrow packs into bits; strides; object or structured dtypes; an empty
//! dimension) gives `None`, and the caller converts through pyarrow as
//! before. Rank n > 1 becomes a fixed-size list of each row's elements, as
//! `preflight.to_arrow` builds it.

use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow::array::{ArrayRef, FixedSizeListArray, PrimitiveArray, RecordBatch};
use arrow::buffer::{Buffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowPrimitiveType, Field, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, Schema, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

/// Keeps the NumPy array alive while Arrow buffers point into its memory;
/// never used otherwise, so no state is seen across a caught panic.
struct Held(#[allow(dead_code)] AssertUnwindSafe<Py<PyAny>>);

/// One record batch of `arrays` named `names`, or `None` when some array
/// is not one this module takes as it is.
pub(crate) fn batch(names: &[String], arrays: &[Bound<'_, PyAny>]) -> PyResult<Option<RecordBatch>> {
    let mut fields = Vec::with_capacity(arrays.len());
    let mut columns = Vec::with_capacity(arrays.len());
    for (name, array) in names.iter().zip(arrays) {
        let Some(column) = column(array)? else {
            return Ok(None);
        };
        fields.push(Field::new(name, column.data_type().clone(), true));
        columns.push(column);
    }
    // Columns of different lengths are no batch: declined.
    let rows = columns.first().map_or(0, |c| c.len());
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options).ok())
}

/// One array's column, from its `__array_interface__`.
fn column(array: &Bound<'_, PyAny>) -> PyResult<Option<ArrayRef>> {
    let py = array.py();
    // A subclass may mean more than its data (a masked array's mask).
    static NDARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    if !array.get_type().is(NDARRAY.import(py, "numpy", "ndarray")?) {
        return Ok(None);
    }
    let Ok(interface) = array.getattr(intern!(py, "__array_interface__")) else {
        return Ok(None);
    };
    let Ok(interface) = interface.cast_into::<PyDict>() else {
        return Ok(None);
    };
    // `strides` is None exactly when the array is C-contiguous.
    if interface
        .get_item(intern!(py, "strides"))?
        .is_some_and(|s| !s.is_none())
    {
        return Ok(None);
    }
    let (Some(typestr), Some(shape), Some(data)) = (
        interface.get_item(intern!(py, "typestr"))?,
        interface.get_item(intern!(py, "shape"))?,
        interface.get_item(intern!(py, "data"))?,
    ) else {
        return Ok(None);
    };
    let typestr = typestr.cast_into::<PyString>()?;
    let typestr = typestr.to_cow()?;
    let shape: Vec<usize> = shape.extract()?;
    let Ok(data) = data.cast_into::<PyTuple>() else {
        return Ok(None);
    };
    let address: usize = data.get_item(0)?.extract()?;
    if shape.contains(&0) && shape.len() > 1 {
        return Ok(None);
    }
    let Some(count) = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) else {
        return Ok(None);
    };
    let held: Arc<Held> = Arc::new(Held(AssertUnwindSafe(array.clone().unbind())));
    let values = match typestr.as_ref() {
        "|i1" => values::<Int8Type>(address, count, held),
        "<i2" => values::<Int16Type>(address, count, held),
        "<i4" => values::<Int32Type>(address, count, held),
        "<i8" => values::<Int64Type>(address, count, held),
        "|u1" => values::<UInt8Type>(address, count, held),
        "<u2" => values::<UInt16Type>(address, count, held),
        "<u4" => values::<UInt32Type>(address, count, held),
        "<u8" => values::<UInt64Type>(address, count, held),
        "<f4" => values::<Float32Type>(address, count, held),
        "<f8" => values::<Float64Type>(address, count, held),
        _ => None,
    };
    let Some(values) = values else {
        return Ok(None);
    };
    if shape.len() <= 1 {
        return Ok(Some(values));
    }
    let width = i32::try_from(count / shape[0]).ok();
    Ok(width.and_then(|width| {
        let item = Arc::new(Field::new_list_field(values.data_type().clone(), true));
        FixedSizeListArray::try_new(item, width, values, None)
            .ok()
            .map(|a| Arc::new(a) as ArrayRef)
    }))
}

/// `count` values of `T` at `address`, owned by `held`.
fn values<T: ArrowPrimitiveType>(address: usize, count: usize, held: Arc<Held>) -> Option<ArrayRef> {
    if cfg!(target_endian = "big") {
        return None;
    }
    let width = std::mem::size_of::<T::Native>();
    let bytes = count.checked_mul(width)?;
    let pointer = if count == 0 {
        NonNull::<T::Native>::dangling().cast::<u8>()
    } else {
        NonNull::new(address as *mut u8)?
    };
    if pointer.as_ptr().align_offset(std::mem::align_of::<T::Native>()) != 0 {
        return None;
    }
    // SAFETY: NumPy's interface promises `count` elements of this type at
    // `address`, contiguous, for as long as the array lives; `held` keeps
    // it alive for as long as the buffer does.
    let buffer = unsafe { Buffer::from_custom_allocation(pointer, bytes, held) };
    let array = PrimitiveArray::<T>::try_new(ScalarBuffer::new(buffer, 0, count), None).ok()?;
    Some(Arc::new(array))
}
