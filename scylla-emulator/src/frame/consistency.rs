//! The `[consistency]` levels of protocol v4 with their wire codes.

use std::fmt;

/// A consistency level, as requests carry it and some errors report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Consistency {
    /// `ANY` (0x0000)
    Any,
    /// `ONE` (0x0001)
    One,
    /// `TWO` (0x0002)
    Two,
    /// `THREE` (0x0003)
    Three,
    /// `QUORUM` (0x0004)
    Quorum,
    /// `ALL` (0x0005)
    All,
    /// `LOCAL_QUORUM` (0x0006)
    LocalQuorum,
    /// `EACH_QUORUM` (0x0007)
    EachQuorum,
    /// `SERIAL` (0x0008)
    Serial,
    /// `LOCAL_SERIAL` (0x0009)
    LocalSerial,
    /// `LOCAL_ONE` (0x000A)
    LocalOne,
}

impl Consistency {
    /// Every level, in code order.
    pub(crate) const ALL: [Consistency; 11] = [
        Consistency::Any,
        Consistency::One,
        Consistency::Two,
        Consistency::Three,
        Consistency::Quorum,
        Consistency::All,
        Consistency::LocalQuorum,
        Consistency::EachQuorum,
        Consistency::Serial,
        Consistency::LocalSerial,
        Consistency::LocalOne,
    ];

    /// The v4 wire code.
    pub(crate) fn code(self) -> u16 {
        match self {
            Consistency::Any => 0x0000,
            Consistency::One => 0x0001,
            Consistency::Two => 0x0002,
            Consistency::Three => 0x0003,
            Consistency::Quorum => 0x0004,
            Consistency::All => 0x0005,
            Consistency::LocalQuorum => 0x0006,
            Consistency::EachQuorum => 0x0007,
            Consistency::Serial => 0x0008,
            Consistency::LocalSerial => 0x0009,
            Consistency::LocalOne => 0x000A,
        }
    }

    /// The level with this wire code, if any.
    pub(crate) fn from_code(code: u16) -> Option<Consistency> {
        Consistency::ALL.into_iter().find(|c| c.code() == code)
    }

    /// The name CQL and error messages use (`LOCAL_QUORUM`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Consistency::Any => "ANY",
            Consistency::One => "ONE",
            Consistency::Two => "TWO",
            Consistency::Three => "THREE",
            Consistency::Quorum => "QUORUM",
            Consistency::All => "ALL",
            Consistency::LocalQuorum => "LOCAL_QUORUM",
            Consistency::EachQuorum => "EACH_QUORUM",
            Consistency::Serial => "SERIAL",
            Consistency::LocalSerial => "LOCAL_SERIAL",
            Consistency::LocalOne => "LOCAL_ONE",
        }
    }
}

impl fmt::Display for Consistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_codes_are_rejected() {
        for c in Consistency::ALL {
            assert_eq!(Consistency::from_code(c.code()), Some(c));
        }
        assert_eq!(Consistency::from_code(6), Some(Consistency::LocalQuorum));
        assert_eq!(Consistency::from_code(10), Some(Consistency::LocalOne));
        assert_eq!(Consistency::from_code(11), None);
        assert_eq!(Consistency::from_code(0xffff), None);
    }

    #[test]
    fn names() {
        assert_eq!(Consistency::LocalQuorum.to_string(), "LOCAL_QUORUM");
    }
}
