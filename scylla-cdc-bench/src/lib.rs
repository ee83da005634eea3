//! Benchmark programs live in `src/bin/`.
