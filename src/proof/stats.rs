//! What a unit's metadata proves about a column, in the kernels' terms: value
//! bounds and counts, whatever format stored them (Parquet row-group
//! statistics today). A source that can prove nothing returns none.

/// What metadata proves about one column of one unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitStats {
    /// Exact smallest value (integers only).
    pub min: i128,
    /// Exact largest value (integers only).
    pub max: i128,
    /// Exact number of nulls (for a list column: leaf slots without a
    /// value, which include empty lists and null rows).
    pub null_count: u64,
    /// Rows in the unit.
    pub rows: u64,
    /// Whether the column is a list (its values are list elements).
    pub repeated: bool,
}
