//! CQL values and their wire codec (in progress).
