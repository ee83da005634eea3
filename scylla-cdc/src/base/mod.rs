//! The ground every other layer stands on: identifiers of the log ([`cdc_types`]: stream ids,
//! generation timestamps), time arithmetic ([`time`]: timeuuids, windows, the clock) and the
//! library's errors with the retry of transient ones ([`error`]). Nothing here knows about
//! readers or consumers.

pub(crate) mod cdc_types;
pub(crate) mod error;
pub(crate) mod time;
