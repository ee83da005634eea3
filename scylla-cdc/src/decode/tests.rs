//! Unit tests of typed decoding.
