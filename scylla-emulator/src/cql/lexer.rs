//! The CQL lexer: turns statement text into [`Token`]s.
//!
//! Tokens are byte ranges into the source, so lexing allocates only the token vector. Keywords
//! are not distinguished from identifiers here: every word is an [`TokenKind::Ident`] and the
//! parser decides from context whether it is a keyword. Whitespace and comments (`-- ...` and
//! `// ...` up to an end of line, which they need, and `/* ... */`) are skipped. A `-` is always its own token; the parser folds it into
//! negative constants.

use super::error::ParseError;
use super::literal::is_iso_alternative_body;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum TokenKind {
    /// A word: `[A-Za-z][A-Za-z0-9_]*` (keyword or unquoted identifier).
    Ident,
    /// `"Quoted"` identifier (the token includes the quotes).
    QuotedIdent,
    /// `'string'` constant (the token includes the quotes).
    Str,
    /// `$$string$$` constant (the token includes the dollars).
    DollarStr,
    /// Unsigned integer constant: `[0-9]+`.
    Integer,
    /// Unsigned floating-point constant: `1.5`, `2.`, `1e10`, `1.5E-3`.
    Float,
    /// Unquoted uuid constant: `123e4567-e89b-12d3-a456-426614174000`.
    Uuid,
    /// Blob constant: `0x` followed by hex digits (the token includes `0x`).
    Hex,
    /// Duration constant starting with a digit (`1h30m`, `30000ms`) or the alternative ISO
    /// form `P0001-02-03T04:05:06`. (Other ISO forms such as `P1D` are identifier-shaped and
    /// lexed as [`TokenKind::Ident`].)
    Duration,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `;`
    Semicolon,
    /// `.`
    Dot,
    /// `:`
    Colon,
    /// `?`
    Question,
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `+=`
    PlusEq,
    /// `-=`
    MinusEq,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// End of the text (always the last token).
    Eof,
}

/// One token: its kind and its byte range in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    /// What the token is.
    pub(crate) kind: TokenKind,
    /// Byte offset of its first character.
    pub(crate) start: usize,
    /// Byte offset just past its last character.
    pub(crate) end: usize,
}

/// Splits `src` into tokens, ending with one [`TokenKind::Eof`].
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, ParseError> {
    Lexer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
    }
    .run()
}

/// Whether `b` may continue an unquoted identifier.
fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The first two bytes of `µ` (U+00B5) in UTF-8, allowed in the `µs` duration unit.
const MICRO_SIGN: [u8; 2] = [0xC2, 0xB5];

/// The lexer's state.
struct Lexer<'a> {
    /// The source text.
    src: &'a str,
    /// The same text as bytes.
    bytes: &'a [u8],
    /// Current byte offset.
    pos: usize,
}

impl Lexer<'_> {
    /// The byte at `pos + ahead`, if any.
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    /// A syntax error at byte `offset`.
    fn error(&self, offset: usize, message: impl Into<String>) -> ParseError {
        ParseError::syntax(self.src, offset, message)
    }

    /// Lexes the whole text.
    fn run(mut self) -> Result<Vec<Token>, ParseError> {
        let mut tokens = Vec::with_capacity(self.bytes.len() / 4 + 2);
        loop {
            self.skip_trivia()?;
            let start = self.pos;
            let Some(c) = self.peek(0) else {
                tokens.push(Token {
                    kind: TokenKind::Eof,
                    start,
                    end: start,
                });
                return Ok(tokens);
            };
            let kind = self.token(c)?;
            tokens.push(Token {
                kind,
                start,
                end: self.pos,
            });
        }
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), ParseError> {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(c), _) if c.is_ascii_whitespace() => self.pos += 1,
                (Some(b'-'), Some(b'-')) | (Some(b'/'), Some(b'/')) => {
                    // Cql.g `COMMENT: ('--' | '//') .* ('\n'|'\r')`: a line comment needs
                    // its end of line; at the end of the text it is a lexing error.
                    let start = self.pos;
                    loop {
                        match self.peek(0) {
                            Some(b'\n' | b'\r') => break,
                            Some(_) => self.pos += 1,
                            None => {
                                return Err(self.error(
                                    start,
                                    "line comment without an end of line at the end of the text",
                                ));
                            }
                        }
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    let start = self.pos;
                    match find(self.bytes, self.pos + 2, b"*/") {
                        Some(end) => self.pos = end + 2,
                        None => return Err(self.error(start, "unterminated comment '/*'")),
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// Lexes one token starting with byte `c` and returns its kind.
    fn token(&mut self, c: u8) -> Result<TokenKind, ParseError> {
        use TokenKind as K;
        let single = |lexer: &mut Self, kind| {
            lexer.pos += 1;
            Ok(kind)
        };
        let double = |lexer: &mut Self, kind| {
            lexer.pos += 2;
            Ok(kind)
        };
        match c {
            b'\'' => self.quoted(b'\'', K::Str),
            b'"' => self.quoted(b'"', K::QuotedIdent),
            b'$' if self.peek(1) == Some(b'$') => self.dollar_string(),
            b'0'..=b'9' => self.number(),
            b'a'..=b'z' | b'A'..=b'Z' => Ok(self.word()),
            b'(' => single(self, K::LParen),
            b')' => single(self, K::RParen),
            b'[' => single(self, K::LBracket),
            b']' => single(self, K::RBracket),
            b'{' => single(self, K::LBrace),
            b'}' => single(self, K::RBrace),
            b',' => single(self, K::Comma),
            b';' => single(self, K::Semicolon),
            b'.' => single(self, K::Dot),
            b':' => single(self, K::Colon),
            b'?' => single(self, K::Question),
            b'*' => single(self, K::Star),
            b'/' => single(self, K::Slash),
            b'%' => single(self, K::Percent),
            b'=' => single(self, K::Eq),
            b'!' if self.peek(1) == Some(b'=') => double(self, K::Ne),
            b'<' if self.peek(1) == Some(b'=') => double(self, K::Le),
            b'<' => single(self, K::Lt),
            b'>' if self.peek(1) == Some(b'=') => double(self, K::Ge),
            b'>' => single(self, K::Gt),
            b'+' if self.peek(1) == Some(b'=') => double(self, K::PlusEq),
            b'+' => single(self, K::Plus),
            b'-' if self.peek(1) == Some(b'=') => double(self, K::MinusEq),
            b'-' => single(self, K::Minus),
            _ => {
                let ch = self
                    .src
                    .get(self.pos..)
                    .and_then(|s| s.chars().next())
                    .unwrap_or('?');
                Err(self.error(self.pos, format!("unexpected character '{ch}'")))
            }
        }
    }

    /// Lexes a `'string'` or a `"quoted identifier"` (doubled quotes escape the quote).
    fn quoted(&mut self, quote: u8, kind: TokenKind) -> Result<TokenKind, ParseError> {
        let start = self.pos;
        let mut i = start + 1;
        loop {
            match self.bytes.get(i) {
                None => {
                    let what = if kind == TokenKind::Str {
                        "string literal"
                    } else {
                        "quoted identifier"
                    };
                    return Err(self.error(start, format!("unterminated {what}")));
                }
                Some(&b) if b == quote => {
                    if self.bytes.get(i + 1) == Some(&quote) {
                        i += 2;
                    } else {
                        break;
                    }
                }
                Some(_) => i += 1,
            }
        }
        if kind == TokenKind::QuotedIdent && i == start + 1 {
            return Err(self.error(start, "empty quoted identifier \"\""));
        }
        self.pos = i + 1;
        Ok(kind)
    }

    /// Lexes a `$$string$$` (no escapes; it ends at the first `$$`).
    fn dollar_string(&mut self) -> Result<TokenKind, ParseError> {
        match find(self.bytes, self.pos + 2, b"$$") {
            Some(end) => {
                self.pos = end + 2;
                Ok(TokenKind::DollarStr)
            }
            None => Err(self.error(self.pos, "unterminated $$ string literal")),
        }
    }

    /// Whether a uuid constant starts at the current position (8-4-4-4-12 hex digits not
    /// followed by an identifier character).
    fn uuid_ahead(&self) -> bool {
        const DASHES: [usize; 4] = [8, 13, 18, 23];
        let Some(candidate) = self.bytes.get(self.pos..self.pos + 36) else {
            return false;
        };
        let shape_ok = candidate.iter().enumerate().all(|(i, b)| {
            if DASHES.contains(&i) {
                *b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        });
        shape_ok && !self.peek(36).is_some_and(is_ident_byte)
    }

    /// Lexes a token starting with a digit: uuid, blob, integer, float or duration.
    fn number(&mut self) -> Result<TokenKind, ParseError> {
        let start = self.pos;
        if self.uuid_ahead() {
            self.pos += 36;
            return Ok(TokenKind::Uuid);
        }
        if self.peek(0) == Some(b'0') && matches!(self.peek(1), Some(b'x' | b'X')) {
            self.pos += 2;
            while self.peek(0).is_some_and(|b| b.is_ascii_hexdigit()) {
                self.pos += 1;
            }
            if self.peek(0).is_some_and(is_ident_byte) {
                return Err(self.error(start, "invalid blob constant: bad hex digit"));
            }
            return Ok(TokenKind::Hex);
        }
        self.skip_digits();
        let mut kind = TokenKind::Integer;
        if self.peek(0) == Some(b'.') {
            self.pos += 1;
            self.skip_digits();
            kind = TokenKind::Float;
        }
        if matches!(self.peek(0), Some(b'e' | b'E')) {
            let digit_at = if matches!(self.peek(1), Some(b'+' | b'-')) {
                2
            } else {
                1
            };
            if self.peek(digit_at).is_some_and(|b| b.is_ascii_digit()) {
                self.pos += digit_at;
                self.skip_digits();
                kind = TokenKind::Float;
            }
        }
        if kind == TokenKind::Integer && self.unit_len(self.pos).is_some() {
            // A duration such as `1h30m` or `2µs`: Cql.g's
            // `DIGIT+ DURATION_UNIT (DIGIT+ DURATION_UNIT)*`. The loop goes on only where
            // digits are followed by a unit; anything else after the last unit starts the
            // next token (so `1h30` is a duration and an integer, `1x` an integer and a
            // word: syntax errors in the parser, as in ScyllaDB).
            loop {
                self.pos += self.unit_len(self.pos).unwrap_or(0);
                let digits = self.bytes[self.pos..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits == 0 || self.unit_len(self.pos + digits).is_none() {
                    break;
                }
                self.pos += digits;
            }
            return Ok(TokenKind::Duration);
        }
        // A word right after a number is the next token (`1and` is `1` `and`, as ANTLR
        // lexes it); a second dot cannot continue anything.
        if self.peek(0) == Some(b'.') {
            return Err(self.error(start, "invalid numeric constant"));
        }
        Ok(kind)
    }

    /// The length in bytes of a duration unit (Cql.g `DURATION_UNIT`, any case) at `at`:
    /// `y`, `mo`, `w`, `d`, `h`, `m`, `s`, `ms`, `us`, `µs` or `ns`, longest first.
    fn unit_len(&self, at: usize) -> Option<usize> {
        let b = |i: usize| self.bytes.get(at + i).map(u8::to_ascii_lowercase);
        match (b(0), b(1)) {
            (Some(b'm'), Some(b'o' | b's')) | (Some(b'u' | b'n'), Some(b's')) => Some(2),
            (Some(c0), Some(c1)) if [c0, c1] == MICRO_SIGN && b(2) == Some(b's') => Some(3),
            (Some(b'y' | b'w' | b'd' | b'h' | b'm' | b's'), _) => Some(1),
            _ => None,
        }
    }

    /// Skips ASCII digits.
    fn skip_digits(&mut self) {
        while self.peek(0).is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    /// Lexes a token starting with a letter: uuid, alternative ISO duration, or word.
    fn word(&mut self) -> TokenKind {
        if self.uuid_ahead() {
            self.pos += 36;
            return TokenKind::Uuid;
        }
        if matches!(self.peek(0), Some(b'p' | b'P')) {
            let body = self.bytes.get(self.pos + 1..self.pos + 20).unwrap_or(&[]);
            if is_iso_alternative_body(body) && !self.peek(20).is_some_and(is_ident_byte) {
                self.pos += 20;
                return TokenKind::Duration;
            }
        }
        while self.peek(0).is_some_and(is_ident_byte) {
            self.pos += 1;
        }
        TokenKind::Ident
    }
}

/// The offset of the first occurrence of `needle` in `haystack` at or after `from`.
fn find(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use TokenKind as K;

    /// The (kind, text) pairs of `src`'s tokens, without the final Eof.
    fn lex(src: &str) -> Vec<(TokenKind, &str)> {
        let tokens = tokenize(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        assert_eq!(tokens.last().map(|t| t.kind), Some(K::Eof));
        tokens
            .iter()
            .filter(|t| t.kind != K::Eof)
            .map(|t| (t.kind, &src[t.start..t.end]))
            .collect()
    }

    /// The error message of lexing `src`.
    fn lex_err(src: &str) -> String {
        tokenize(src).expect_err(src).to_string()
    }

    #[test]
    fn words_symbols_and_markers() {
        assert_eq!(
            lex("SELECT a,b FROM ks.t WHERE x>=? AND y != :n;"),
            vec![
                (K::Ident, "SELECT"),
                (K::Ident, "a"),
                (K::Comma, ","),
                (K::Ident, "b"),
                (K::Ident, "FROM"),
                (K::Ident, "ks"),
                (K::Dot, "."),
                (K::Ident, "t"),
                (K::Ident, "WHERE"),
                (K::Ident, "x"),
                (K::Ge, ">="),
                (K::Question, "?"),
                (K::Ident, "AND"),
                (K::Ident, "y"),
                (K::Ne, "!="),
                (K::Colon, ":"),
                (K::Ident, "n"),
                (K::Semicolon, ";"),
            ]
        );
        assert_eq!(
            lex("c+=1 d-=2 e=e-1"),
            vec![
                (K::Ident, "c"),
                (K::PlusEq, "+="),
                (K::Integer, "1"),
                (K::Ident, "d"),
                (K::MinusEq, "-="),
                (K::Integer, "2"),
                (K::Ident, "e"),
                (K::Eq, "="),
                (K::Ident, "e"),
                (K::Minus, "-"),
                (K::Integer, "1"),
            ]
        );
        // `>>` of nested generic types stays two tokens.
        assert_eq!(
            lex("list<frozen<int>>"),
            vec![
                (K::Ident, "list"),
                (K::Lt, "<"),
                (K::Ident, "frozen"),
                (K::Lt, "<"),
                (K::Ident, "int"),
                (K::Gt, ">"),
                (K::Gt, ">"),
            ]
        );
    }

    #[test]
    fn comments_are_skipped() {
        assert_eq!(
            lex("a -- one\n b // two\n/* three\n */ c"),
            vec![(K::Ident, "a"), (K::Ident, "b"), (K::Ident, "c")]
        );
        assert_eq!(lex("-- only a comment\n"), vec![]);
        assert_eq!(lex("a // two\r"), vec![(K::Ident, "a")]);
        // ScyllaDB's COMMENT token ends with an end of line: not at the end of the text.
        for bad in ["-- only a comment", "a // trailing", "a --"] {
            assert!(
                lex_err(bad).contains("line comment without an end of line"),
                "{bad}"
            );
        }
        assert!(lex_err("a /* open").contains("unterminated comment"));
    }

    #[test]
    fn strings_and_quoted_identifiers() {
        assert_eq!(
            lex("'it''s' $$a'b$$ \"My\"\"Col\" ''"),
            vec![
                (K::Str, "'it''s'"),
                (K::DollarStr, "$$a'b$$"),
                (K::QuotedIdent, "\"My\"\"Col\""),
                (K::Str, "''"),
            ]
        );
        assert_eq!(lex("'héllo'"), vec![(K::Str, "'héllo'")]);
        assert_eq!(lex_err("x = 'abc"), "line 1:4 unterminated string literal");
        assert!(lex_err("\"abc").contains("unterminated quoted identifier"));
        assert!(lex_err("$$abc$").contains("unterminated $$"));
        assert!(lex_err("\"\"").contains("empty quoted identifier"));
    }

    #[test]
    fn numbers() {
        assert_eq!(
            lex("0 42 1.5 2. 1e10 1.5E-3 7e+2"),
            vec![
                (K::Integer, "0"),
                (K::Integer, "42"),
                (K::Float, "1.5"),
                (K::Float, "2."),
                (K::Float, "1e10"),
                (K::Float, "1.5E-3"),
                (K::Float, "7e+2"),
            ]
        );
        assert_eq!(lex("-1e10"), vec![(K::Minus, "-"), (K::Float, "1e10")]);
        assert_eq!(
            lex("123456789012345678901234567890"),
            vec![(K::Integer, "123456789012345678901234567890")]
        );
        // `_` cannot start a token; a word after a number is its own token.
        assert!(lex_err("1_000").contains("unexpected character '_'"));
        assert_eq!(lex("1.5x"), vec![(K::Float, "1.5"), (K::Ident, "x")]);
        assert!(lex_err("1.2.3").contains("invalid numeric"));
    }

    #[test]
    fn blobs() {
        assert_eq!(
            lex("0xCAFE 0xcafe 0x 0X1"),
            vec![
                (K::Hex, "0xCAFE"),
                (K::Hex, "0xcafe"),
                (K::Hex, "0x"),
                (K::Hex, "0X1"),
            ]
        );
        assert!(lex_err("0xZZ").contains("invalid blob"));
        // `-0x` is a minus followed by a blob; the parser rejects it.
        assert_eq!(lex("-0x"), vec![(K::Minus, "-"), (K::Hex, "0x")]);
    }

    #[test]
    fn uuids_win_over_arithmetic() {
        assert_eq!(
            lex("123e4567-e89b-12d3-a456-426614174000"),
            vec![(K::Uuid, "123e4567-e89b-12d3-a456-426614174000")]
        );
        assert_eq!(
            lex("DEADBEEF-dead-beef-dead-beefdeadbeef)"),
            vec![
                (K::Uuid, "DEADBEEF-dead-beef-dead-beefdeadbeef"),
                (K::RParen, ")"),
            ]
        );
        // Not the full uuid shape: a float, a minus and a word.
        assert_eq!(
            lex("123e4567-e89b"),
            vec![(K::Float, "123e4567"), (K::Minus, "-"), (K::Ident, "e89b")]
        );
        // A uuid glued to more identifier characters is not a uuid.
        assert_eq!(
            lex("123e4567-e89b-12d3-a456-426614174000x").first(),
            Some(&(K::Float, "123e4567"))
        );
    }

    #[test]
    fn durations() {
        assert_eq!(
            lex("1h30m 12mo3d 2us 2µs 5ns 30000ms P1DT2H P0001-02-03T04:05:06"),
            vec![
                (K::Duration, "1h30m"),
                (K::Duration, "12mo3d"),
                (K::Duration, "2us"),
                (K::Duration, "2µs"),
                (K::Duration, "5ns"),
                (K::Duration, "30000ms"),
                (K::Ident, "P1DT2H"),
                (K::Duration, "P0001-02-03T04:05:06"),
            ]
        );
    }

    #[test]
    fn durations_end_where_scylla_s_duration_token_ends() {
        // Upper case units, and the longest unit first.
        assert_eq!(
            lex("1H30M 2MS 3Mo"),
            vec![
                (K::Duration, "1H30M"),
                (K::Duration, "2MS"),
                (K::Duration, "3Mo")
            ]
        );
        // Digits not followed by a unit end the duration.
        assert_eq!(
            lex("1h30 2d 7"),
            vec![
                (K::Duration, "1h"),
                (K::Integer, "30"),
                (K::Duration, "2d"),
                (K::Integer, "7")
            ]
        );
        // Not a unit: a number, then a word (`VALUES (1x)` is then a syntax error in the
        // parser, as in ScyllaDB; `a = 1and b = 2` is valid).
        assert_eq!(lex("1x"), vec![(K::Integer, "1"), (K::Ident, "x")]);
        assert_eq!(lex("1E"), vec![(K::Integer, "1"), (K::Ident, "E")]);
        assert_eq!(lex("1.5e"), vec![(K::Float, "1.5"), (K::Ident, "e")]);
        assert_eq!(lex("2hx"), vec![(K::Duration, "2h"), (K::Ident, "x")]);
        assert_eq!(lex("1mox"), vec![(K::Duration, "1mo"), (K::Ident, "x")]);
        assert_eq!(
            lex("a=1and"),
            vec![
                (K::Ident, "a"),
                (K::Eq, "="),
                (K::Integer, "1"),
                (K::Ident, "and")
            ]
        );
    }

    #[test]
    fn unexpected_characters_are_reported_with_position() {
        assert_eq!(lex_err("a\n  b @"), "line 2:4 unexpected character '@'");
        assert_eq!(lex_err("é"), "line 1:0 unexpected character 'é'");
        assert!(lex_err("_a").contains("unexpected character '_'"));
        assert!(lex_err("cdc$time").contains("unexpected character '$'"));
        assert!(lex_err("a ! b").contains("unexpected character '!'"));
    }
}
