//! [`OperationType`]: what a log row describes (`cdc$operation`).

use std::fmt;

/// What a log row describes (`cdc$operation`).
///
/// Codes outside those Scylla documents become [`OperationType::Unknown`] rather than an
/// error, so a newer Scylla does not stop the reader; consumers decide what to do with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OperationType {
    /// 0: the row's state before the change (pre-image).
    PreImage,
    /// 1: an update of a row (also column deletions and all static-row changes).
    RowUpdate,
    /// 2: an insert (the change sets the row marker).
    RowInsert,
    /// 3: a row deletion (-3: a row expired by Scylla, with `is_expiration`).
    RowDelete,
    /// 4: a partition deletion (-4: expired by Scylla, with `is_expiration`).
    PartitionDelete,
    /// 5: start bound of a range deletion, inclusive.
    RowRangeDelInclLeft,
    /// 6: start bound of a range deletion, exclusive.
    RowRangeDelExclLeft,
    /// 7: end bound of a range deletion, inclusive.
    RowRangeDelInclRight,
    /// 8: end bound of a range deletion, exclusive.
    RowRangeDelExclRight,
    /// 9: the row's state after the change (post-image).
    PostImage,
    /// A code this version of the library does not know.
    Unknown(i8),
}

impl OperationType {
    /// The operation of a `cdc$operation` code and whether it is a Scylla-initiated
    /// expiration (codes -3 and -4).
    pub fn from_code(code: i8) -> (Self, bool) {
        match code {
            0 => (Self::PreImage, false),
            1 => (Self::RowUpdate, false),
            2 => (Self::RowInsert, false),
            3 => (Self::RowDelete, false),
            4 => (Self::PartitionDelete, false),
            5 => (Self::RowRangeDelInclLeft, false),
            6 => (Self::RowRangeDelExclLeft, false),
            7 => (Self::RowRangeDelInclRight, false),
            8 => (Self::RowRangeDelExclRight, false),
            9 => (Self::PostImage, false),
            -3 => (Self::RowDelete, true),
            -4 => (Self::PartitionDelete, true),
            other => (Self::Unknown(other), false),
        }
    }
}

impl OperationType {
    /// The `cdc$operation` code of the operation ([`OperationType::from_code`] reversed).
    pub(crate) fn code(self, is_expiration: bool) -> i8 {
        let code = match self {
            Self::PreImage => 0,
            Self::RowUpdate => 1,
            Self::RowInsert => 2,
            Self::RowDelete => 3,
            Self::PartitionDelete => 4,
            Self::RowRangeDelInclLeft => 5,
            Self::RowRangeDelExclLeft => 6,
            Self::RowRangeDelInclRight => 7,
            Self::RowRangeDelExclRight => 8,
            Self::PostImage => 9,
            Self::Unknown(code) => return code,
        };
        if is_expiration { -code } else { code }
    }
}

impl fmt::Display for OperationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PreImage => f.write_str("PreImage"),
            Self::RowUpdate => f.write_str("RowUpdate"),
            Self::RowInsert => f.write_str("RowInsert"),
            Self::RowDelete => f.write_str("RowDelete"),
            Self::PartitionDelete => f.write_str("PartitionDelete"),
            Self::RowRangeDelInclLeft => f.write_str("RowRangeDelInclLeft"),
            Self::RowRangeDelExclLeft => f.write_str("RowRangeDelExclLeft"),
            Self::RowRangeDelInclRight => f.write_str("RowRangeDelInclRight"),
            Self::RowRangeDelExclRight => f.write_str("RowRangeDelExclRight"),
            Self::PostImage => f.write_str("PostImage"),
            Self::Unknown(code) => write!(f, "Unknown({code})"),
        }
    }
}
