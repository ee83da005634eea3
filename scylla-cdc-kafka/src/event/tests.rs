//! Tests of the events of real changes (embedded cluster) and snapshot rows.
