//! Errors: [`CqlError`] (what an ERROR response carries: an [`ErrorKind`] with its
//! code-specific fields, plus a message), and how a [`ProtocolViolation`] (a malformed
//! request body) becomes a Protocol error.

use bytes::{BufMut, Bytes, BytesMut};

use super::consistency::Consistency;
use super::extensions::Extensions;
use super::wire::{
    ProtocolViolation, put_consistency, put_int, put_short_bytes, put_string, put_string_list,
};

impl From<ProtocolViolation> for CqlError {
    fn from(v: ProtocolViolation) -> Self {
        CqlError::new(ErrorKind::ProtocolError, v.into_message())
    }
}

/// The kind of a write that timed out or failed (`WriteTimeout`, `WriteFailure`).
#[allow(
    dead_code,
    reason = "the spec's complete set; injected write timeouts only use SIMPLE so far"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WriteType {
    /// A single-partition write that is not a batch or a counter update.
    Simple,
    /// A logged batch (after the batch log write).
    Batch,
    /// An unlogged batch.
    UnloggedBatch,
    /// A counter write.
    Counter,
    /// The batch log write of a logged batch.
    BatchLog,
    /// The Paxos phase of a lightweight transaction.
    Cas,
    /// A materialized-view update.
    View,
    /// A CDC log write.
    Cdc,
}

impl WriteType {
    /// The wire spelling (`SIMPLE`, `BATCH_LOG`, ...).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WriteType::Simple => "SIMPLE",
            WriteType::Batch => "BATCH",
            WriteType::UnloggedBatch => "UNLOGGED_BATCH",
            WriteType::Counter => "COUNTER",
            WriteType::BatchLog => "BATCH_LOG",
            WriteType::Cas => "CAS",
            WriteType::View => "VIEW",
            WriteType::Cdc => "CDC",
        }
    }
}

/// The kind of a CQL error with its code-specific fields (spec §9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// 0x0000: an unexpected server-side failure.
    ServerError,
    /// 0x000A: the client broke the protocol.
    ProtocolError,
    /// 0x0100: bad credentials.
    AuthenticationError,
    /// 0x1000: not enough live replicas for the consistency level.
    Unavailable {
        /// Consistency level of the query.
        consistency: Consistency,
        /// Replicas required.
        required: i32,
        /// Replicas known alive.
        alive: i32,
    },
    /// 0x1001: the coordinator is overloaded.
    Overloaded,
    /// 0x1002: the coordinator is bootstrapping.
    IsBootstrapping,
    /// 0x1003: a TRUNCATE failed.
    #[allow(dead_code, reason = "spec error code; TRUNCATE cannot fail in memory")]
    TruncateError,
    /// 0x1100: a write timed out waiting for replicas.
    WriteTimeout {
        /// Consistency level of the query.
        consistency: Consistency,
        /// Replicas that acknowledged.
        received: i32,
        /// Acknowledgements needed.
        block_for: i32,
        /// What kind of write timed out.
        write_type: WriteType,
    },
    /// 0x1200: a read timed out waiting for replicas.
    ReadTimeout {
        /// Consistency level of the query.
        consistency: Consistency,
        /// Replicas that answered.
        received: i32,
        /// Answers needed.
        block_for: i32,
        /// Whether the replica asked for data answered.
        data_present: bool,
    },
    /// 0x1300: a read failed on some replicas.
    ReadFailure {
        /// Consistency level of the query.
        consistency: Consistency,
        /// Replicas that answered.
        received: i32,
        /// Answers needed.
        block_for: i32,
        /// Replicas that failed.
        num_failures: i32,
        /// Whether the replica asked for data answered.
        data_present: bool,
    },
    /// 0x1400: a function failed (`fromJson` / `toJson` conversions).
    FunctionFailure {
        /// Keyspace of the function.
        keyspace: String,
        /// Function name.
        function: String,
        /// Argument types (CQL spelling).
        arg_types: Vec<String>,
    },
    /// 0x1500: a write failed on some replicas.
    #[allow(
        dead_code,
        reason = "spec error code; fault injection has no write failure yet"
    )]
    WriteFailure {
        /// Consistency level of the query.
        consistency: Consistency,
        /// Replicas that acknowledged.
        received: i32,
        /// Acknowledgements needed.
        block_for: i32,
        /// Replicas that failed.
        num_failures: i32,
        /// What kind of write failed.
        write_type: WriteType,
    },
    /// 0x2000: the statement does not parse.
    SyntaxError,
    /// 0x2100: the user lacks a permission.
    Unauthorized,
    /// 0x2200: the statement parses but is invalid.
    Invalid,
    /// 0x2300: the statement is invalid for the configuration.
    ConfigError,
    /// 0x2400: a keyspace or table being created already exists.
    AlreadyExists {
        /// Keyspace name.
        keyspace: String,
        /// Table name, empty when the keyspace itself exists.
        table: String,
    },
    /// 0x2500: the prepared statement id is unknown to this node.
    Unprepared {
        /// The unknown statement id, as the client sent it.
        id: Bytes,
    },
    /// 0xF000 (Scylla extension `SCYLLA_RATE_LIMIT_ERROR`): per-partition rate limit hit.
    /// Sent as a Config error (0x2300) to a client that did not negotiate the extension.
    #[allow(
        dead_code,
        reason = "Scylla extension; per-partition rate limits are not emulated"
    )]
    RateLimitReached {
        /// 0 read, 1 write.
        op_type: u8,
        /// Whether the coordinator (rather than a replica) rejected the operation.
        rejected_by_coordinator: bool,
    },
}

/// The error code Scylla advertises for [`ErrorKind::RateLimitReached`]
/// (`SCYLLA_RATE_LIMIT_ERROR=ERROR_CODE=61440`).
pub(crate) const RATE_LIMIT_ERROR_CODE: i32 = 0xF000;

impl ErrorKind {
    /// The error code (spec §9; [`RATE_LIMIT_ERROR_CODE`] for the rate-limit error).
    pub(crate) fn code(&self) -> i32 {
        match self {
            ErrorKind::ServerError => 0x0000,
            ErrorKind::ProtocolError => 0x000A,
            ErrorKind::AuthenticationError => 0x0100,
            ErrorKind::Unavailable { .. } => 0x1000,
            ErrorKind::Overloaded => 0x1001,
            ErrorKind::IsBootstrapping => 0x1002,
            ErrorKind::TruncateError => 0x1003,
            ErrorKind::WriteTimeout { .. } => 0x1100,
            ErrorKind::ReadTimeout { .. } => 0x1200,
            ErrorKind::ReadFailure { .. } => 0x1300,
            ErrorKind::FunctionFailure { .. } => 0x1400,
            ErrorKind::WriteFailure { .. } => 0x1500,
            ErrorKind::SyntaxError => 0x2000,
            ErrorKind::Unauthorized => 0x2100,
            ErrorKind::Invalid => 0x2200,
            ErrorKind::ConfigError => 0x2300,
            ErrorKind::AlreadyExists { .. } => 0x2400,
            ErrorKind::Unprepared { .. } => 0x2500,
            ErrorKind::RateLimitReached { .. } => RATE_LIMIT_ERROR_CODE,
        }
    }
}

/// An error answered to a request: ERROR frame with [`ErrorKind::code`], the message and
/// the kind's fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct CqlError {
    /// Kind and code-specific fields.
    pub kind: ErrorKind,
    /// Human-readable message.
    pub message: String,
}

impl CqlError {
    /// An error of this kind with this message.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        CqlError {
            kind,
            message: message.into(),
        }
    }

    /// The error code of the kind.
    pub(crate) fn code(&self) -> i32 {
        self.kind.code()
    }

    /// Server error (0x0000).
    pub(crate) fn server(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ServerError, message)
    }

    /// Protocol error (0x000A).
    pub(crate) fn protocol(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ProtocolError, message)
    }

    /// Syntax error (0x2000).
    pub(crate) fn syntax(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::SyntaxError, message)
    }

    /// Invalid request (0x2200).
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, message)
    }

    /// Configuration error (0x2300).
    pub(crate) fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::ConfigError, message)
    }

    /// Unprepared (0x2500) for this statement id.
    pub(crate) fn unprepared(id: Bytes, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unprepared { id }, message)
    }

    /// Already exists (0x2400); `table` is empty for a keyspace.
    pub(crate) fn already_exists(
        keyspace: impl Into<String>,
        table: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(
            ErrorKind::AlreadyExists {
                keyspace: keyspace.into(),
                table: table.into(),
            },
            message,
        )
    }

    /// Writes the ERROR body: code, message, then the kind's fields. A rate-limit error
    /// becomes a plain Config error unless the client negotiated the extension.
    pub(crate) fn put_body(&self, out: &mut BytesMut, ext: &Extensions) {
        if let ErrorKind::RateLimitReached { .. } = self.kind
            && !ext.rate_limit_error
        {
            put_int(out, ErrorKind::ConfigError.code());
            put_string(out, &self.message);
            return;
        }
        put_int(out, self.code());
        put_string(out, &self.message);
        match &self.kind {
            ErrorKind::ServerError
            | ErrorKind::ProtocolError
            | ErrorKind::AuthenticationError
            | ErrorKind::Overloaded
            | ErrorKind::IsBootstrapping
            | ErrorKind::TruncateError
            | ErrorKind::SyntaxError
            | ErrorKind::Unauthorized
            | ErrorKind::Invalid
            | ErrorKind::ConfigError => {}
            ErrorKind::Unavailable {
                consistency,
                required,
                alive,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *required);
                put_int(out, *alive);
            }
            ErrorKind::WriteTimeout {
                consistency,
                received,
                block_for,
                write_type,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *received);
                put_int(out, *block_for);
                put_string(out, write_type.as_str());
            }
            ErrorKind::ReadTimeout {
                consistency,
                received,
                block_for,
                data_present,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *received);
                put_int(out, *block_for);
                out.put_u8(u8::from(*data_present));
            }
            ErrorKind::ReadFailure {
                consistency,
                received,
                block_for,
                num_failures,
                data_present,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *received);
                put_int(out, *block_for);
                put_int(out, *num_failures);
                out.put_u8(u8::from(*data_present));
            }
            ErrorKind::FunctionFailure {
                keyspace,
                function,
                arg_types,
            } => {
                put_string(out, keyspace);
                put_string(out, function);
                put_string_list(out, arg_types);
            }
            ErrorKind::WriteFailure {
                consistency,
                received,
                block_for,
                num_failures,
                write_type,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *received);
                put_int(out, *block_for);
                put_int(out, *num_failures);
                put_string(out, write_type.as_str());
            }
            ErrorKind::AlreadyExists { keyspace, table } => {
                put_string(out, keyspace);
                put_string(out, table);
            }
            ErrorKind::Unprepared { id } => put_short_bytes(out, id),
            ErrorKind::RateLimitReached {
                op_type,
                rejected_by_coordinator,
            } => {
                out.put_u8(*op_type);
                out.put_u8(u8::from(*rejected_by_coordinator));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_spec() {
        assert_eq!(CqlError::protocol("x").code(), 0x000A);
        assert_eq!(CqlError::invalid("x").code(), 0x2200);
        assert_eq!(CqlError::syntax("x").code(), 0x2000);
        assert_eq!(CqlError::unprepared(Bytes::new(), "x").code(), 0x2500);
        assert_eq!(
            ErrorKind::RateLimitReached {
                op_type: 0,
                rejected_by_coordinator: false
            }
            .code(),
            61440
        );
    }

    #[test]
    fn protocol_violation_maps_to_protocol_error() {
        let e: CqlError = ProtocolViolation::new("bad").into();
        assert_eq!(e.kind, ErrorKind::ProtocolError);
        assert_eq!(e.message, "bad");
    }

    #[test]
    fn body_has_code_message_and_fields() {
        let mut out = BytesMut::new();
        CqlError::unprepared(Bytes::from_static(b"\xab\xcd"), "m")
            .put_body(&mut out, &Extensions::default());
        assert_eq!(&out[..], &[0, 0, 0x25, 0, 0, 1, b'm', 0, 2, 0xab, 0xcd]);
    }

    #[test]
    fn rate_limit_error_needs_the_extension() {
        let e = CqlError::new(
            ErrorKind::RateLimitReached {
                op_type: 1,
                rejected_by_coordinator: true,
            },
            "r",
        );
        let mut plain = BytesMut::new();
        e.put_body(&mut plain, &Extensions::default());
        assert_eq!(&plain[..], &[0, 0, 0x23, 0, 0, 1, b'r']);
        let mut ext = BytesMut::new();
        e.put_body(
            &mut ext,
            &Extensions {
                rate_limit_error: true,
                ..Extensions::default()
            },
        );
        assert_eq!(&ext[..], &[0, 0, 0xF0, 0, 0, 1, b'r', 1, 1]);
    }
}
