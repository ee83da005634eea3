//! The error of the lexer and the parser.

use std::fmt;

/// Which CQL error a [`ParseError`] becomes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ParseErrorKind {
    /// The text is not valid CQL: answered with `SyntaxError` (0x2000).
    Syntax,
    /// The text is well formed, but a rule that Scylla checks while parsing fails (two
    /// primary keys, unmatched INSERT columns and values, an out-of-range duration):
    /// answered with `Invalid` (0x2200).
    Invalid,
}

/// Why a statement or a type could not be parsed, and where.
///
/// Displayed as Scylla does: `line 1:14 mismatched input 'x' expecting FROM` for syntax errors,
/// the bare message for [`ParseErrorKind::Invalid`] ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) struct ParseError {
    /// Which CQL error this is.
    pub(crate) kind: ParseErrorKind,
    /// Line of the offending input, from 1.
    pub(crate) line: usize,
    /// Column of the offending input within its line, in characters, from 0.
    pub(crate) column: usize,
    /// What is wrong, without the position.
    pub(crate) message: String,
}

impl ParseError {
    /// A syntax error at byte `offset` of `src`.
    pub(crate) fn syntax(src: &str, offset: usize, message: impl Into<String>) -> Self {
        Self::new(ParseErrorKind::Syntax, src, offset, message)
    }

    /// An invalid-request error at byte `offset` of `src`.
    pub(crate) fn invalid(src: &str, offset: usize, message: impl Into<String>) -> Self {
        Self::new(ParseErrorKind::Invalid, src, offset, message)
    }

    /// An error of `kind` at byte `offset` of `src`.
    fn new(kind: ParseErrorKind, src: &str, offset: usize, message: impl Into<String>) -> Self {
        let (line, column) = line_column(src, offset);
        ParseError {
            kind,
            line,
            column,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ParseErrorKind::Syntax => {
                write!(f, "line {}:{} {}", self.line, self.column, self.message)
            }
            ParseErrorKind::Invalid => f.write_str(&self.message),
        }
    }
}

/// The 1-based line and 0-based character column of byte `offset` in `src` (clamped to the
/// text; an offset inside a character counts as that character).
pub(crate) fn line_column(src: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut column = 0;
    for (i, c) in src.char_indices() {
        if i >= offset {
            break;
        }
        if c == '\n' {
            line += 1;
            column = 0;
        } else {
            column += 1;
        }
    }
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_and_characters() {
        assert_eq!(line_column("abc", 0), (1, 0));
        assert_eq!(line_column("abc", 2), (1, 2));
        assert_eq!(line_column("abc", 3), (1, 3));
        assert_eq!(line_column("abc", 99), (1, 3));
        assert_eq!(line_column("a\nbc", 3), (2, 1));
        assert_eq!(line_column("é x", 3), (1, 2));
    }

    #[test]
    fn displays_like_scylla() {
        let e = ParseError::syntax("SELECT x y", 9, "mismatched input 'y' expecting FROM");
        assert_eq!(
            e.to_string(),
            "line 1:9 mismatched input 'y' expecting FROM"
        );
        let e = ParseError::invalid("x", 0, "Multiple PRIMARY KEYs specified");
        assert_eq!(e.to_string(), "Multiple PRIMARY KEYs specified");
        assert_eq!((e.line, e.column), (1, 0));
    }
}
