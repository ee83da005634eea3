//! CQL text to syntax tree: the lexer, the parser and the AST of the statements the embedded
//! cluster understands.
//!
//! [`parse_statement`] turns one statement's text into a [`Statement`] (an enum with one
//! variant per statement kind: [`Select`], [`Insert`], [`Update`], [`Delete`], [`Batch`], the
//! DDL statements, [`Describe`], and [`Statement::Unsupported`] for recognised but unimplemented ones);
//! `parse_type` (tests only) turns a type string into a [`TypeExpr`]. Both fail with a
//! [`ParseError`](error::ParseError) carrying a position and the CQL error it maps to ([`ParseErrorKind`]).
//!
//! Internally, `lexer` cuts the text into tokens (byte ranges, no allocation per token),
//! `parser` is a hand-written recursive-descent parser over those tokens, and `literal`
//! decodes constants (strings, blobs, durations). Statements keep literals close to their
//! text (integers and floats as strings) and number bind markers in order of appearance; the
//! executor resolves names and types against the schema.

mod ast;
mod error;
mod lexer;
mod literal;
mod parser;

#[cfg(test)]
mod tests;

// The facade of the module; the executor is its consumer.
pub(crate) use ast::*;
pub(crate) use error::ParseErrorKind;
pub(crate) use parser::{is_reserved, parse_statement};
// `fromJson` reads a duration from a JSON string with the literal's rules.
pub(crate) use literal::parse_duration as parse_duration_text;

// Named by tests only.
#[cfg(test)]
pub(crate) use error::ParseError;
#[cfg(test)]
pub(crate) use parser::{MAX_DEPTH, parse_type};
