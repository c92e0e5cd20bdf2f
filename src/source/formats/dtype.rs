//! NumPy's numeric element types, as the token and shard readers store
//! them (`dtype:` in a schema, an MDS/LitData column, a Megatron index or
//! an llm.c header): one enum, so every reader sizes, names and decodes
//! them the same way.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, PrimitiveArray};
use arrow::buffer::{Buffer, MutableBuffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};

/// A numeric element type, as NumPy names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dtype {
    /// `bool`
    Bool,
    /// `uint8`
    U8,
    /// `int8`
    I8,
    /// `uint16`
    U16,
    /// `int16`
    I16,
    /// `uint32`
    U32,
    /// `int32`
    I32,
    /// `uint64`
    U64,
    /// `int64`
    I64,
    /// `float16`
    F16,
    /// `float32`
    F32,
    /// `float64`
    F64,
}

impl Dtype {
    /// Bytes per element.
    pub(crate) fn size(self) -> usize {
        match self {
            Dtype::Bool | Dtype::U8 | Dtype::I8 => 1,
            Dtype::U16 | Dtype::I16 | Dtype::F16 => 2,
            Dtype::U32 | Dtype::I32 | Dtype::F32 => 4,
            Dtype::U64 | Dtype::I64 | Dtype::F64 => 8,
        }
    }

    /// NumPy's name (`uint16`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Dtype::Bool => "bool",
            Dtype::U8 => "uint8",
            Dtype::I8 => "int8",
            Dtype::U16 => "uint16",
            Dtype::I16 => "int16",
            Dtype::U32 => "uint32",
            Dtype::I32 => "int32",
            Dtype::U64 => "uint64",
            Dtype::I64 => "int64",
            Dtype::F16 => "float16",
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
        }
    }

    /// The type token ids are stored in that NumPy calls `name`: any
    /// integer type, `float32` or `float64`.
    pub(crate) fn of_tokens(name: &str) -> Option<Dtype> {
        Dtype::from_name(name).filter(|d| !matches!(d, Dtype::Bool | Dtype::F16))
    }

    /// The element type NumPy calls `name` (`uint16`, `int32`, ...).
    pub(crate) fn from_name(name: &str) -> Option<Dtype> {
        Some(match name {
            "bool" => Dtype::Bool,
            "uint8" => Dtype::U8,
            "int8" => Dtype::I8,
            "uint16" => Dtype::U16,
            "int16" => Dtype::I16,
            "uint32" => Dtype::U32,
            "int32" => Dtype::I32,
            "uint64" => Dtype::U64,
            "int64" => Dtype::I64,
            "float16" => Dtype::F16,
            "float32" => Dtype::F32,
            "float64" => Dtype::F64,
            _ => return None,
        })
    }

    /// `float16`, `float32` or `float64`.
    pub(crate) fn is_float(self) -> bool {
        matches!(self, Dtype::F16 | Dtype::F32 | Dtype::F64)
    }

    /// A signed integer type.
    pub(crate) fn is_signed(self) -> bool {
        matches!(self, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64)
    }

    /// The Arrow type of one element.
    pub(crate) fn arrow(self) -> DataType {
        match self {
            Dtype::Bool => DataType::Boolean,
            Dtype::U8 => DataType::UInt8,
            Dtype::I8 => DataType::Int8,
            Dtype::U16 => DataType::UInt16,
            Dtype::I16 => DataType::Int16,
            Dtype::U32 => DataType::UInt32,
            Dtype::I32 => DataType::Int32,
            Dtype::U64 => DataType::UInt64,
            Dtype::I64 => DataType::Int64,
            Dtype::F16 => DataType::Float16,
            Dtype::F32 => DataType::Float32,
            Dtype::F64 => DataType::Float64,
        }
    }

    /// Element `i` of little-endian `bytes` as an integer (floats: None).
    pub(crate) fn int_at(self, b: &[u8], i: usize) -> Option<i128> {
        let s = self.size();
        let x = &b[i * s..(i + 1) * s];
        Some(match self {
            Dtype::Bool | Dtype::U8 => x[0] as i128,
            Dtype::I8 => x[0] as i8 as i128,
            Dtype::U16 => u16::from_le_bytes([x[0], x[1]]) as i128,
            Dtype::I16 => i16::from_le_bytes([x[0], x[1]]) as i128,
            Dtype::U32 => u32::from_le_bytes(x.try_into().ok()?) as i128,
            Dtype::I32 => i32::from_le_bytes(x.try_into().ok()?) as i128,
            Dtype::U64 => u64::from_le_bytes(x.try_into().ok()?) as i128,
            Dtype::I64 => i64::from_le_bytes(x.try_into().ok()?) as i128,
            Dtype::F16 | Dtype::F32 | Dtype::F64 => return None,
        })
    }

    /// Element `i` of little-endian `bytes` as a float.
    pub(crate) fn f64_at(self, b: &[u8], i: usize) -> f64 {
        let s = self.size();
        let x = &b[i * s..(i + 1) * s];
        match self {
            Dtype::F16 => {
                <Float16Type as ArrowPrimitiveType>::Native::from_bits(u16::from_le_bytes([x[0], x[1]])).to_f64()
            }
            Dtype::F32 => f32::from_le_bytes([x[0], x[1], x[2], x[3]]) as f64,
            Dtype::F64 => f64::from_le_bytes([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]]),
            _ => self.int_at(b, i).unwrap_or(0) as f64,
        }
    }

    /// An Arrow array of the little-endian values in `bytes` (a whole number of
    /// elements).
    pub(crate) fn values(self, bytes: &[u8]) -> ArrayRef {
        fn mk<T: ArrowPrimitiveType>(bytes: &[u8]) -> ArrayRef {
            let size = std::mem::size_of::<T::Native>();
            let mut buf = MutableBuffer::from_len_zeroed(0);
            buf.extend_from_slice(bytes);
            if cfg!(target_endian = "big") {
                buf.as_slice_mut().chunks_exact_mut(size).for_each(|c| c.reverse());
            }
            let n = bytes.len() / size;
            let buf: Buffer = buf.into();
            Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::new(buf, 0, n), None))
        }
        match self {
            Dtype::Bool => Arc::new(BooleanArray::from_iter(bytes.iter().map(|&b| Some(b != 0)))),
            Dtype::U8 => mk::<UInt8Type>(bytes),
            Dtype::I8 => mk::<Int8Type>(bytes),
            Dtype::U16 => mk::<UInt16Type>(bytes),
            Dtype::I16 => mk::<Int16Type>(bytes),
            Dtype::U32 => mk::<UInt32Type>(bytes),
            Dtype::I32 => mk::<Int32Type>(bytes),
            Dtype::U64 => mk::<UInt64Type>(bytes),
            Dtype::I64 => mk::<Int64Type>(bytes),
            Dtype::F16 => mk::<Float16Type>(bytes),
            Dtype::F32 => mk::<Float32Type>(bytes),
            Dtype::F64 => mk::<Float64Type>(bytes),
        }
    }
}
