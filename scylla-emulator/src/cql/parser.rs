//! The recursive-descent parser: [`Token`]s to [`Statement`] / [`TypeExpr`].
//!
//! Keywords are recognised by context: a word is a keyword only where the grammar expects
//! that keyword, and any word that is not in [`RESERVED`] may be used as an identifier.
//! Recursion (terms, types, selectors) is bounded by [`MAX_DEPTH`].

use uuid::Uuid;

use super::ast::*;
use super::error::ParseError;
use super::lexer::{Token, TokenKind, tokenize};
use super::literal::{
    decode_hex, is_iso_duration_word, negate_duration, parse_duration, unescape_quoted,
};
use crate::types::CqlType;

/// How deeply terms, types and selectors may nest before the parser gives up.
pub(crate) const MAX_DEPTH: usize = 100;

/// Words that can never be unquoted identifiers: ScyllaDB's keywords outside
/// `unreserved_keyword` (Cql.g: every `K_*` token not in `basic_unreserved_keyword`,
/// `type_unreserved_keyword`, `K_TTL`, `K_COUNT`, `K_WRITETIME` or `K_KEY`), plus `TRUE` and
/// `FALSE` (the BOOLEAN token is lexed before IDENT). Upper-case; compared
/// case-insensitively.
pub(crate) const RESERVED: &[&str] = &[
    "ADD",
    "ALLOW",
    "ALTER",
    "AND",
    "ANN",
    "APPLY",
    "ASC",
    "AUTHORIZE",
    "BATCH",
    "BEGIN",
    "BY",
    "CAST",
    "COLUMNFAMILY",
    "CREATE",
    "DEFAULT",
    "DELETE",
    "DROP",
    "ENTRIES",
    "FALSE",
    "FROM",
    "FULL",
    "GRANT",
    "IF",
    "IN",
    "INDEX",
    "INFINITY",
    "INSERT",
    "INTO",
    "IS",
    "KEYSPACE",
    "LIMIT",
    "MATERIALIZED",
    "MODIFY",
    "NAN",
    "NORECURSIVE",
    "NOT",
    "NULL",
    "OF",
    "ON",
    "OR",
    "ORDER",
    "PRIMARY",
    "RENAME",
    "REPLACE",
    "REVOKE",
    "SCHEMA",
    "SCYLLA_CLUSTERING_BOUND",
    "SCYLLA_COUNTER_SHARD_LIST",
    "SCYLLA_TIMEUUID_LIST_INDEX",
    "SELECT",
    "SET",
    "TABLE",
    "TO",
    "TOKEN",
    "TRUE",
    "TRUNCATE",
    "UNLOGGED",
    "UNSET",
    "UPDATE",
    "USE",
    "USING",
    "VECTOR_SEARCH_INDEXING",
    "VIEW",
    "WHERE",
    "WITH",
];

/// Whether `word` is a reserved keyword (case-insensitive).
pub(crate) fn is_reserved(word: &str) -> bool {
    // Every reserved word is 2 to 26 ASCII characters: compare without allocating.
    (2..=26).contains(&word.len()) && RESERVED.iter().any(|r| r.eq_ignore_ascii_case(word))
}

/// Statements recognised by their leading keywords and answered as unsupported.
const UNSUPPORTED: &[&[&str]] = &[
    &["CREATE", "FUNCTION"],
    &["CREATE", "AGGREGATE"],
    &["CREATE", "OR", "REPLACE", "FUNCTION"],
    &["CREATE", "OR", "REPLACE", "AGGREGATE"],
    &["CREATE", "ROLE"],
    &["CREATE", "USER"],
    &["CREATE", "TRIGGER"],
    &["CREATE", "SERVICE_LEVEL"],
    &["ALTER", "ROLE"],
    &["ALTER", "USER"],
    &["ALTER", "SERVICE_LEVEL"],
    &["DROP", "FUNCTION"],
    &["DROP", "AGGREGATE"],
    &["DROP", "ROLE"],
    &["DROP", "USER"],
    &["DROP", "TRIGGER"],
    &["DROP", "SERVICE_LEVEL"],
    &["ATTACH", "SERVICE_LEVEL"],
    &["DETACH", "SERVICE_LEVEL"],
    &["GRANT"],
    &["REVOKE"],
    &["LIST"],
    &["PRUNE", "MATERIALIZED", "VIEW"],
];

/// Parses one CQL statement. A trailing `;` and surrounding whitespace and comments are
/// allowed; anything else after the statement is an error.
pub(crate) fn parse_statement(text: &str) -> Result<Statement, ParseError> {
    let mut p = Parser::new(text)?;
    let stmt = p.statement()?;
    // Cql.g `query: cqlStatement (';')* EOF`: any number of semicolons may end it.
    while p.eat(TokenKind::Semicolon) {}
    p.expect_eof()?;
    Ok(stmt)
}

/// Parses a CQL type (`int`, `frozen<map<text, list<int>>>`, `ks.ut`), the whole text (the
/// executor parses types inside statements; tests check types on their own with this).
#[cfg(test)]
pub(crate) fn parse_type(text: &str) -> Result<TypeExpr, ParseError> {
    let mut p = Parser::new(text)?;
    let ty = p.type_expr()?;
    p.expect_eof()?;
    Ok(ty)
}

/// Where the parser is, for backtracking.
#[derive(Clone, Copy)]
struct Mark {
    /// Token index.
    pos: usize,
    /// Markers allocated so far.
    markers: usize,
    /// Nesting depth.
    depth: usize,
}

/// The selectors with their own syntax among `word(...)` calls.
#[derive(Clone, Copy)]
enum SpecialSelector {
    /// `COUNT(*)` / `COUNT(1)` (another integer is a syntax error)
    CountAll,
    /// `CAST(s AS t)`
    Cast,
    /// `WRITETIME(c)`
    WriteTime,
    /// `TTL(c)`
    Ttl,
}

/// The parameterised type constructors.
#[derive(Clone, Copy)]
enum Generic {
    /// `list<T>`
    List,
    /// `set<T>`
    Set,
    /// `frozen<T>`
    Frozen,
    /// `map<K, V>`
    Map,
    /// `tuple<...>`
    Tuple,
    /// `vector<T, N>`
    Vector,
}

/// Which `USING` parameters a statement accepts.
#[derive(Clone, Copy)]
struct UsingAllowed {
    /// `TTL`
    ttl: bool,
    /// `TIMESTAMP`
    timestamp: bool,
    /// `TIMEOUT`
    timeout: bool,
}

/// The parser's state over the token vector of one text.
struct Parser<'a> {
    /// The source text.
    src: &'a str,
    /// Its tokens, ending with Eof.
    tokens: Vec<Token>,
    /// Index of the current token (never past the Eof token).
    pos: usize,
    /// Number of bind markers allocated so far.
    markers: usize,
    /// Current nesting depth of terms / types / selectors.
    depth: usize,
}

/// The parser's result type.
type PResult<T> = Result<T, ParseError>;

impl<'a> Parser<'a> {
    /// Lexes `src` and positions the parser on its first token.
    fn new(src: &'a str) -> PResult<Self> {
        Ok(Parser {
            src,
            tokens: tokenize(src)?,
            pos: 0,
            markers: 0,
            depth: 0,
        })
    }

    // ---------------------------------------------------------------------------------
    // Token access
    // ---------------------------------------------------------------------------------

    /// The token `ahead` positions after the current one (Eof past the end).
    fn peek_at(&self, ahead: usize) -> Token {
        let eof = Token {
            kind: TokenKind::Eof,
            start: self.src.len(),
            end: self.src.len(),
        };
        self.tokens
            .get(self.pos + ahead)
            .or(self.tokens.last())
            .copied()
            .unwrap_or(eof)
    }

    /// The current token.
    fn peek(&self) -> Token {
        self.peek_at(0)
    }

    /// Kind of the token `ahead` positions after the current one.
    fn kind_at(&self, ahead: usize) -> TokenKind {
        self.peek_at(ahead).kind
    }

    /// Whether the current token is of `kind`.
    fn at(&self, kind: TokenKind) -> bool {
        self.kind_at(0) == kind
    }

    /// Moves past the current token (never past Eof) and returns it.
    fn advance(&mut self) -> Token {
        let tok = self.peek();
        if tok.kind != TokenKind::Eof {
            self.pos += 1;
        }
        tok
    }

    /// The source text of a token.
    fn text(&self, tok: Token) -> &'a str {
        self.src.get(tok.start..tok.end).unwrap_or("")
    }

    /// Whether the token `ahead` positions on is the word `kw` (case-insensitive).
    fn is_kw_at(&self, ahead: usize, kw: &str) -> bool {
        let tok = self.peek_at(ahead);
        tok.kind == TokenKind::Ident && self.text(tok).eq_ignore_ascii_case(kw)
    }

    /// Whether the current token is the word `kw`.
    fn at_kw(&self, kw: &str) -> bool {
        self.is_kw_at(0, kw)
    }

    /// Consumes the word `kw` if it is the current token.
    fn eat_kw(&mut self, kw: &str) -> bool {
        let found = self.at_kw(kw);
        if found {
            self.advance();
        }
        found
    }

    /// Consumes the word `kw` or fails.
    fn expect_kw(&mut self, kw: &str) -> PResult<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.mismatch(kw))
        }
    }

    /// Consumes a token of `kind` if it is the current one.
    fn eat(&mut self, kind: TokenKind) -> bool {
        let found = self.at(kind);
        if found {
            self.advance();
        }
        found
    }

    /// Consumes a token of `kind` or fails.
    fn expect(&mut self, kind: TokenKind) -> PResult<Token> {
        if self.at(kind) {
            Ok(self.advance())
        } else {
            Err(self.mismatch(describe_kind(kind)))
        }
    }

    /// Fails unless the text is finished.
    fn expect_eof(&mut self) -> PResult<()> {
        if self.at(TokenKind::Eof) {
            Ok(())
        } else {
            Err(self.mismatch("<EOF>"))
        }
    }

    /// Whether the token `ahead` positions on can be an identifier (a non-reserved word or a
    /// quoted identifier).
    fn ident_at(&self, ahead: usize) -> bool {
        let tok = self.peek_at(ahead);
        match tok.kind {
            TokenKind::QuotedIdent => true,
            TokenKind::Ident => !is_reserved(self.text(tok)),
            _ => false,
        }
    }

    // ---------------------------------------------------------------------------------
    // Errors
    // ---------------------------------------------------------------------------------

    /// A syntax error at the current token: `mismatched input 'x' expecting <expecting>`.
    fn mismatch(&self, expecting: &str) -> ParseError {
        let tok = self.peek();
        let mut message = format!(
            "mismatched input '{}' expecting {expecting}",
            self.token_display(tok)
        );
        if tok.kind == TokenKind::Ident && is_reserved(self.text(tok)) && expecting_name(expecting)
        {
            let word = self.text(tok);
            message.push_str(&format!(
                " ('{word}' is a reserved keyword: write \"{}\" to use it as a name)",
                word.to_ascii_lowercase()
            ));
        }
        ParseError::syntax(self.src, tok.start, message)
    }

    /// A syntax error with a free-form message at `tok`.
    fn error_at(&self, tok: Token, message: impl Into<String>) -> ParseError {
        ParseError::syntax(self.src, tok.start, message)
    }

    /// An invalid-request error at `tok`.
    fn invalid_at(&self, tok: Token, message: impl Into<String>) -> ParseError {
        ParseError::invalid(self.src, tok.start, message)
    }

    /// How a token is quoted in error messages.
    fn token_display(&self, tok: Token) -> &'a str {
        if tok.kind == TokenKind::Eof {
            "<EOF>"
        } else {
            self.text(tok)
        }
    }

    // ---------------------------------------------------------------------------------
    // Recursion guard and backtracking
    // ---------------------------------------------------------------------------------

    /// Enters one nesting level, failing beyond [`MAX_DEPTH`].
    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let tok = self.peek();
            return Err(self.error_at(
                tok,
                format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    /// Leaves one nesting level.
    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The current position, to return to with [`Parser::reset`].
    fn mark(&self) -> Mark {
        Mark {
            pos: self.pos,
            markers: self.markers,
            depth: self.depth,
        }
    }

    /// Returns to a position saved by [`Parser::mark`].
    fn reset(&mut self, mark: Mark) {
        self.pos = mark.pos;
        self.markers = mark.markers;
        self.depth = mark.depth;
    }

    // ---------------------------------------------------------------------------------
    // Names
    // ---------------------------------------------------------------------------------

    /// An identifier: a non-reserved word (lower-cased) or a quoted identifier (as written).
    fn ident(&mut self, what: &str) -> PResult<String> {
        let tok = self.peek();
        match tok.kind {
            TokenKind::Ident if !is_reserved(self.text(tok)) => {
                self.advance();
                Ok(self.text(tok).to_ascii_lowercase())
            }
            TokenKind::QuotedIdent => {
                self.advance();
                Ok(self.quoted_ident_text(tok))
            }
            _ => Err(self.mismatch(what)),
        }
    }

    /// The name of a quoted identifier token.
    fn quoted_ident_text(&self, tok: Token) -> String {
        unescape_quoted(self.inner_text(tok, 1), '"')
    }

    /// The text of a quoted token without its `quote_len`-byte delimiters on each side.
    fn inner_text(&self, tok: Token, quote_len: usize) -> &'a str {
        self.src
            .get(tok.start + quote_len..tok.end.saturating_sub(quote_len))
            .unwrap_or("")
    }

    /// `name` or `ks.name`.
    fn qualified_name(&mut self, what: &str) -> PResult<QualifiedName> {
        let first = self.ident(what)?;
        if self.eat(TokenKind::Dot) {
            let name = self.ident(what)?;
            Ok(QualifiedName::qualified(first, name))
        } else {
            Ok(QualifiedName::unqualified(first))
        }
    }

    /// `ident, ident, ...` (at least one).
    fn ident_list(&mut self, what: &str) -> PResult<Vec<String>> {
        let mut names = vec![self.ident(what)?];
        while self.eat(TokenKind::Comma) {
            names.push(self.ident(what)?);
        }
        Ok(names)
    }

    /// `(ident, ident, ...)`
    fn paren_ident_list(&mut self, what: &str) -> PResult<Vec<String>> {
        self.expect(TokenKind::LParen)?;
        let names = self.ident_list(what)?;
        self.expect(TokenKind::RParen)?;
        Ok(names)
    }

    /// `IF NOT EXISTS`, if present.
    fn if_not_exists(&mut self) -> PResult<bool> {
        if self.eat_kw("IF") {
            self.expect_kw("NOT")?;
            self.expect_kw("EXISTS")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// `IF EXISTS`, if present.
    fn if_exists(&mut self) -> PResult<bool> {
        if self.eat_kw("IF") {
            self.expect_kw("EXISTS")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    // ---------------------------------------------------------------------------------
    // Statements
    // ---------------------------------------------------------------------------------

    /// One statement (without the trailing `;`).
    fn statement(&mut self) -> PResult<Statement> {
        if let Some(what) = self.unsupported_prefix() {
            while !self.at(TokenKind::Eof) {
                self.advance();
            }
            return Ok(Statement::Unsupported { what });
        }
        let tok = self.peek();
        let word = if tok.kind == TokenKind::Ident {
            self.text(tok).to_ascii_uppercase()
        } else {
            String::new()
        };
        match word.as_str() {
            "SELECT" => Ok(Statement::Select(Box::new(self.select()?))),
            "INSERT" => Ok(Statement::Insert(Box::new(self.insert()?))),
            "UPDATE" => Ok(Statement::Update(Box::new(self.update()?))),
            "DELETE" => Ok(Statement::Delete(Box::new(self.delete()?))),
            "BEGIN" => Ok(Statement::Batch(Box::new(self.batch()?))),
            "USE" => {
                self.advance();
                let keyspace = self.ident("keyspace name")?;
                Ok(Statement::Use { keyspace })
            }
            "DESCRIBE" | "DESC" => Ok(Statement::Describe(self.describe()?)),
            "CREATE" => self.create(),
            "ALTER" => self.alter(),
            "DROP" => self.drop(),
            "TRUNCATE" => {
                self.advance();
                if !self.eat_kw("TABLE") {
                    self.eat_kw("COLUMNFAMILY");
                }
                let table = self.qualified_name("table name")?;
                Ok(Statement::Truncate(Truncate { table }))
            }
            _ => Err(self.mismatch(
                "a statement (SELECT, INSERT, UPDATE, DELETE, BEGIN BATCH, USE, CREATE, ALTER, DROP, TRUNCATE, DESCRIBE)",
            )),
        }
    }

    /// `DESCRIBE | DESC ...` (Scylla's `describeStatement`): the fixed forms first (a
    /// keyword such as `TABLES` always means the listing, as Scylla's syntactic predicates
    /// decide), then the generic `DESC [ks.]name`; then `WITH INTERNALS [AND PASSWORDS]`.
    fn describe(&mut self) -> PResult<Describe> {
        self.advance();
        let target = if self.eat_kw("CLUSTER") {
            DescribeTarget::Cluster
        } else if self.at_kw("SCHEMA") || (self.at_kw("FULL") && self.is_kw_at(1, "SCHEMA")) {
            let full = self.eat_kw("FULL");
            self.expect_kw("SCHEMA")?;
            DescribeTarget::Schema { full }
        } else if self.eat_kw("KEYSPACES") {
            DescribeTarget::Keyspaces
        } else if self.at_kw("KEYSPACE") || (self.at_kw("ONLY") && self.is_kw_at(1, "KEYSPACE")) {
            let only = self.eat_kw("ONLY");
            self.expect_kw("KEYSPACE")?;
            let name = if self.ident_at(0) {
                Some(self.ident("keyspace name")?)
            } else {
                None
            };
            DescribeTarget::Keyspace { name, only }
        } else if self.eat_kw("TABLES") || self.eat_kw("COLUMNFAMILIES") {
            DescribeTarget::Tables
        } else if self.eat_kw("TABLE") || self.eat_kw("COLUMNFAMILY") {
            DescribeTarget::Table(self.qualified_name("table name")?)
        } else if self.eat_kw("INDEX") {
            DescribeTarget::Index(self.qualified_name("index name")?)
        } else if self.at_kw("MATERIALIZED") && self.is_kw_at(1, "VIEW") {
            self.advance();
            self.advance();
            DescribeTarget::MaterializedView(self.qualified_name("view name")?)
        } else if self.eat_kw("TYPES") {
            DescribeTarget::Types
        } else if self.at_kw("TYPE") && self.ident_at(1) {
            self.advance();
            DescribeTarget::Type(self.qualified_name("type name")?)
        } else if self.eat_kw("FUNCTIONS") {
            DescribeTarget::Functions
        } else if self.at_kw("FUNCTION") && self.ident_at(1) {
            self.advance();
            DescribeTarget::Function(self.qualified_name("function name")?)
        } else if self.eat_kw("AGGREGATES") {
            DescribeTarget::Aggregates
        } else if self.at_kw("AGGREGATE") && self.ident_at(1) {
            self.advance();
            DescribeTarget::Aggregate(self.qualified_name("aggregate name")?)
        } else {
            let first = self.ident_as_written("a keyspace or element name")?;
            if self.eat(TokenKind::Dot) {
                let name = self.ident_as_written("an element name")?;
                DescribeTarget::Generic(QualifiedName::qualified(first, name))
            } else {
                DescribeTarget::Generic(QualifiedName::unqualified(first))
            }
        };
        let mut with_internals = false;
        let mut with_passwords = false;
        if self.eat_kw("WITH") {
            self.expect_kw("INTERNALS")?;
            with_internals = true;
            if self.eat_kw("AND") {
                self.expect_kw("PASSWORDS")?;
                with_passwords = true;
            }
        }
        if with_passwords && !matches!(target, DescribeTarget::Schema { .. }) {
            let tok = self.peek();
            return Err(self.invalid_at(
                tok,
                "Option WITH PASSWORDS is only allowed with DESC SCHEMA",
            ));
        }
        Ok(Describe {
            target,
            with_internals,
            with_passwords,
        })
    }

    /// An identifier as written: a non-reserved word keeps its case (Scylla's generic
    /// `DESC name` takes the token's text as is), a quoted identifier is unescaped.
    fn ident_as_written(&mut self, what: &str) -> PResult<String> {
        let tok = self.peek();
        match tok.kind {
            TokenKind::Ident if !is_reserved(self.text(tok)) => {
                self.advance();
                Ok(self.text(tok).to_string())
            }
            TokenKind::QuotedIdent => {
                self.advance();
                Ok(self.quoted_ident_text(tok))
            }
            _ => Err(self.mismatch(what)),
        }
    }

    /// The leading keywords of an unsupported statement, if the text starts with some.
    fn unsupported_prefix(&self) -> Option<String> {
        UNSUPPORTED
            .iter()
            .find(|words| words.iter().enumerate().all(|(i, w)| self.is_kw_at(i, w)))
            .map(|words| words.join(" "))
    }

    /// `SELECT ...`
    fn select(&mut self) -> PResult<Select> {
        self.expect_kw("SELECT")?;
        let json = self.at_kw("JSON") && self.select_modifier_is_keyword();
        if json {
            self.advance();
        }
        let distinct = self.at_kw("DISTINCT") && self.select_modifier_is_keyword();
        if distinct {
            self.advance();
        }
        let selection = if self.eat(TokenKind::Star) {
            Selection::Wildcard
        } else {
            let mut items = vec![self.select_item()?];
            while self.eat(TokenKind::Comma) {
                items.push(self.select_item()?);
            }
            Selection::Items(items)
        };
        self.expect_kw("FROM")?;
        let table = self.qualified_name("table name")?;
        let where_clause = if self.eat_kw("WHERE") {
            self.relations()?
        } else {
            Vec::new()
        };
        let mut group_by = Vec::new();
        if self.at_kw("GROUP") && self.is_kw_at(1, "BY") {
            self.advance();
            self.advance();
            group_by = self.ident_list("column name")?;
        }
        let mut order_by = Vec::new();
        if self.eat_kw("ORDER") {
            self.expect_kw("BY")?;
            loop {
                let column = self.ident("column name")?;
                order_by.push((column, self.order()));
                if !self.eat(TokenKind::Comma) {
                    break;
                }
            }
        }
        let mut per_partition_limit = None;
        if self.at_kw("PER") && self.is_kw_at(1, "PARTITION") {
            self.advance();
            self.advance();
            self.expect_kw("LIMIT")?;
            per_partition_limit = Some(self.integer_or_marker()?);
        }
        let limit = if self.eat_kw("LIMIT") {
            Some(self.integer_or_marker()?)
        } else {
            None
        };
        let mut select = Select {
            json,
            distinct,
            selection,
            table,
            where_clause,
            group_by,
            order_by,
            per_partition_limit,
            limit,
            allow_filtering: false,
            bypass_cache: false,
            timeout: None,
        };
        // ALLOW FILTERING, BYPASS CACHE and USING TIMEOUT, in any order, each at most once.
        loop {
            let tok = self.peek();
            if self.at_kw("ALLOW") {
                self.advance();
                self.expect_kw("FILTERING")?;
                if select.allow_filtering {
                    return Err(self.error_at(tok, "ALLOW FILTERING is given twice"));
                }
                select.allow_filtering = true;
            } else if self.at_kw("BYPASS") {
                self.advance();
                self.expect_kw("CACHE")?;
                if select.bypass_cache {
                    return Err(self.error_at(tok, "BYPASS CACHE is given twice"));
                }
                select.bypass_cache = true;
            } else if self.at_kw("USING") {
                self.advance();
                self.expect_kw("TIMEOUT")?;
                if select.timeout.is_some() {
                    return Err(self.error_at(tok, "USING TIMEOUT is given twice"));
                }
                select.timeout = Some(self.duration_or_marker()?);
            } else {
                break;
            }
        }
        Ok(select)
    }

    /// Whether the `JSON` / `DISTINCT` word at the current token is the modifier keyword
    /// rather than a column of that name (`SELECT json FROM t`, `SELECT distinct, a ...`).
    fn select_modifier_is_keyword(&self) -> bool {
        let next = self.peek_at(1);
        match next.kind {
            TokenKind::Comma
            | TokenKind::Dot
            | TokenKind::LBracket
            | TokenKind::LParen
            | TokenKind::Eof => false,
            TokenKind::Ident if self.text(next).eq_ignore_ascii_case("FROM") => false,
            // `SELECT json AS j` aliases the column; `SELECT JSON as FROM t` selects `as`.
            TokenKind::Ident if self.text(next).eq_ignore_ascii_case("AS") => !self.ident_at(2),
            _ => true,
        }
    }

    /// An optional `ASC` / `DESC` (ASC when absent).
    fn order(&mut self) -> Order {
        if self.eat_kw("DESC") {
            Order::Desc
        } else {
            self.eat_kw("ASC");
            Order::Asc
        }
    }

    /// `selector [AS alias]`
    fn select_item(&mut self) -> PResult<SelectItem> {
        let selector = self.selector()?;
        let alias = if self.eat_kw("AS") {
            Some(self.ident("alias")?)
        } else {
            None
        };
        Ok(SelectItem { selector, alias })
    }

    /// A selector with its `.field` / `[key]` suffixes.
    ///
    /// Recursive paths (selector, term, type) keep their frames small: each step is a
    /// function with few locals, because unoptimised builds give every local its own slot.
    fn selector(&mut self) -> PResult<Selector> {
        self.enter()?;
        let result = self.selector_inner();
        self.leave();
        result
    }

    /// A selector with its suffixes, inside the depth guard.
    fn selector_inner(&mut self) -> PResult<Selector> {
        let mut selector = self.selector_base()?;
        loop {
            selector = match self.kind_at(0) {
                TokenKind::Dot => self.field_selector(selector)?,
                TokenKind::LBracket => self.element_selector(selector)?,
                _ => return Ok(selector),
            };
        }
    }

    /// `.field` after `selector`.
    fn field_selector(&mut self, selector: Selector) -> PResult<Selector> {
        self.expect(TokenKind::Dot)?;
        let field = self.ident("field name")?;
        Ok(Selector::Field {
            selector: Box::new(selector),
            field,
        })
    }

    /// `[key]` after `selector`.
    fn element_selector(&mut self, selector: Selector) -> PResult<Selector> {
        self.expect(TokenKind::LBracket)?;
        let key = self.term()?;
        self.expect(TokenKind::RBracket)?;
        Ok(Selector::Element {
            selector: Box::new(selector),
            key,
        })
    }

    /// A selector without suffixes. ScyllaDB's grammar (`unaliasedSelector` in `Cql.g`, the
    /// same in every 2025.x release) has no constants, bind markers, arithmetic or type hints
    /// here: a column, `COUNT(*)` / `COUNT(1)`, `WRITETIME(c)`, `TTL(c)`, a function of
    /// selectors or `CAST(selector AS native_type)`; anything else is a syntax error.
    fn selector_base(&mut self) -> PResult<Selector> {
        // `CAST(` and `token(` start selectors although both words are reserved.
        let reserved_call =
            (self.at_kw("CAST") || self.at_kw("TOKEN")) && self.kind_at(1) == TokenKind::LParen;
        if !self.ident_at(0) && !reserved_call {
            return Err(self.mismatch("a selector"));
        }
        match self.kind_at(1) {
            TokenKind::LParen => match self.special_selector() {
                Some(SpecialSelector::CountAll) => {
                    self.advance();
                    self.advance();
                    let arg = self.peek();
                    if arg.kind == TokenKind::Integer && self.text(arg) != "1" {
                        return Err(self.error_at(
                            arg,
                            format!("Only COUNT(1) is supported, got COUNT({})", self.text(arg)),
                        ));
                    }
                    self.advance();
                    self.expect(TokenKind::RParen)?;
                    Ok(Selector::CountAll)
                }
                Some(SpecialSelector::Cast) => self.cast_selector(),
                Some(SpecialSelector::WriteTime) => self.column_function().map(Selector::WriteTime),
                Some(SpecialSelector::Ttl) => self.column_function().map(Selector::Ttl),
                None => self.function_selector(),
            },
            TokenKind::Dot if self.function_name_at(2) && self.kind_at(3) == TokenKind::LParen => {
                self.function_selector()
            }
            _ => self.ident("column name").map(Selector::Column),
        }
    }

    /// Which special form a `word(` at the current token starts, if any.
    fn special_selector(&self) -> Option<SpecialSelector> {
        let tok = self.peek();
        if tok.kind != TokenKind::Ident {
            return None;
        }
        let word = self.text(tok);
        if word.eq_ignore_ascii_case("COUNT")
            && matches!(self.kind_at(2), TokenKind::Star | TokenKind::Integer)
        {
            Some(SpecialSelector::CountAll)
        } else if word.eq_ignore_ascii_case("CAST") {
            Some(SpecialSelector::Cast)
        } else if word.eq_ignore_ascii_case("WRITETIME") {
            Some(SpecialSelector::WriteTime)
        } else if word.eq_ignore_ascii_case("TTL") {
            Some(SpecialSelector::Ttl)
        } else {
            None
        }
    }

    /// `word(column)`: the column of `WRITETIME(c)` / `TTL(c)`.
    fn column_function(&mut self) -> PResult<String> {
        self.advance();
        self.expect(TokenKind::LParen)?;
        let column = self.ident("column name")?;
        self.expect(TokenKind::RParen)?;
        Ok(column)
    }

    /// `name(args)` / `ks.name(args)` where the arguments are selectors.
    fn function_selector(&mut self) -> PResult<Selector> {
        let name = self.function_name()?;
        self.expect(TokenKind::LParen)?;
        let mut args = Vec::new();
        if !self.eat(TokenKind::RParen) {
            loop {
                args.push(self.selector()?);
                if !self.eat(TokenKind::Comma) {
                    break;
                }
            }
            self.expect(TokenKind::RParen)?;
        }
        Ok(Selector::Function { name, args })
    }

    /// `CAST(selector AS type)`: only a native type may follow `AS` (`native_type` in
    /// ScyllaDB's grammar).
    fn cast_selector(&mut self) -> PResult<Selector> {
        self.advance();
        self.expect(TokenKind::LParen)?;
        let selector = Box::new(self.selector()?);
        self.expect_kw("AS")?;
        let tok = self.peek();
        let native = (tok.kind == TokenKind::Ident)
            .then(|| CqlType::from_native_name(self.text(tok)))
            .flatten()
            .ok_or_else(|| self.mismatch("a native type"))?;
        self.advance();
        self.expect(TokenKind::RParen)?;
        Ok(Selector::Cast {
            selector,
            ty: TypeExpr::Native(native),
        })
    }

    /// `INSERT INTO ...`
    fn insert(&mut self) -> PResult<Insert> {
        self.expect_kw("INSERT")?;
        self.expect_kw("INTO")?;
        let table = self.qualified_name("table name")?;
        let values = if self.at_kw("JSON") {
            self.advance();
            let json = match self.kind_at(0) {
                TokenKind::Question | TokenKind::Colon => Term::Marker(self.bind_marker()?),
                TokenKind::Str | TokenKind::DollarStr => Term::Literal(self.constant()?),
                _ => return Err(self.mismatch("a JSON string or a bind marker")),
            };
            let mut default = JsonDefault::Null;
            if self.eat_kw("DEFAULT") {
                if self.eat_kw("UNSET") {
                    default = JsonDefault::Unset;
                } else if !self.eat_kw("NULL") {
                    return Err(self.mismatch("NULL or UNSET"));
                }
            }
            InsertValues::Json { json, default }
        } else {
            let columns_tok = self.peek();
            let columns = self.paren_ident_list("column name")?;
            self.expect_kw("VALUES")?;
            self.expect(TokenKind::LParen)?;
            let mut values = vec![self.term()?];
            while self.eat(TokenKind::Comma) {
                values.push(self.term()?);
            }
            self.expect(TokenKind::RParen)?;
            if columns.len() != values.len() {
                return Err(self.invalid_at(columns_tok, "Unmatched column names/values"));
            }
            InsertValues::Columns(columns.into_iter().zip(values).collect())
        };
        let if_not_exists = self.if_not_exists()?;
        let using = self.using(UsingAllowed {
            ttl: true,
            timestamp: true,
            timeout: true,
        })?;
        Ok(Insert {
            table,
            values,
            if_not_exists,
            using,
        })
    }

    /// `UPDATE ...`
    fn update(&mut self) -> PResult<Update> {
        self.expect_kw("UPDATE")?;
        let table = self.qualified_name("table name")?;
        let using = self.using(UsingAllowed {
            ttl: true,
            timestamp: true,
            timeout: true,
        })?;
        self.expect_kw("SET")?;
        let mut assignments = vec![self.assignment()?];
        while self.eat(TokenKind::Comma) {
            assignments.push(self.assignment()?);
        }
        self.expect_kw("WHERE")?;
        let where_clause = self.relations()?;
        let condition = self.conditional()?;
        Ok(Update {
            table,
            using,
            assignments,
            where_clause,
            condition,
        })
    }

    /// One assignment of `UPDATE ... SET`.
    fn assignment(&mut self) -> PResult<Assignment> {
        let column = self.ident("column name")?;
        if self.eat(TokenKind::LBracket) {
            // Cql.g: `'[' K_SCYLLA_TIMEUUID_LIST_INDEX '(' term ')' ']'` (a reserved word
            // only allowed here), else `'[' term ']'`.
            let key = if self.at_kw("SCYLLA_TIMEUUID_LIST_INDEX")
                && self.kind_at(1) == TokenKind::LParen
            {
                self.advance();
                self.advance();
                let arg = self.term()?;
                self.expect(TokenKind::RParen)?;
                Term::FunctionCall {
                    name: QualifiedName::unqualified("scylla_timeuuid_list_index".to_string()),
                    args: vec![arg],
                }
            } else {
                self.term()?
            };
            self.expect(TokenKind::RBracket)?;
            self.expect(TokenKind::Eq)?;
            let value = self.term()?;
            return Ok(Assignment::SetElement { column, key, value });
        }
        if self.eat(TokenKind::Dot) {
            let field = self.ident("field name")?;
            self.expect(TokenKind::Eq)?;
            let value = self.term()?;
            return Ok(Assignment::SetField {
                column,
                field,
                value,
            });
        }
        if self.eat(TokenKind::PlusEq) {
            let value = self.term()?;
            return Ok(Assignment::Add { column, value });
        }
        if self.eat(TokenKind::MinusEq) {
            let value = self.term()?;
            return Ok(Assignment::Remove { column, value });
        }
        if !self.at(TokenKind::Eq) {
            return Err(self.mismatch("one of '=', '+=', '-=', '[', '.'"));
        }
        self.advance();
        // `c = c + t` / `c = c - t`: a column reference (a name that is not a constant
        // word and not a function call) on the right.
        let tok = self.peek();
        if self.ident_at(0)
            && !self.term_word_at(0)
            && !matches!(self.kind_at(1), TokenKind::LParen | TokenKind::Dot)
        {
            let other = self.ident("column name")?;
            let op = self.peek();
            let add = match op.kind {
                TokenKind::Plus => true,
                TokenKind::Minus => false,
                _ => return Err(self.mismatch("'+' or '-'")),
            };
            if other != column {
                return Err(self.error_at(
                    tok,
                    format!(
                        "Only expressions of the form X = X + <value> or X = X - <value> are supported (found {column} = {other} ...)"
                    ),
                ));
            }
            self.advance();
            let value = self.term()?;
            return Ok(if add {
                Assignment::Add { column, value }
            } else {
                Assignment::Remove { column, value }
            });
        }
        let value = self.term()?;
        if self.at(TokenKind::Plus) {
            self.advance();
            let other_tok = self.peek();
            let other = self.ident("column name")?;
            if other != column {
                return Err(self.error_at(
                    other_tok,
                    format!(
                        "Only expressions of the form X = <value> + X are supported (found {column} = ... + {other})"
                    ),
                ));
            }
            return Ok(Assignment::Prepend { column, value });
        }
        Ok(Assignment::Set { column, value })
    }

    /// `DELETE ... FROM ...`
    fn delete(&mut self) -> PResult<Delete> {
        self.expect_kw("DELETE")?;
        let mut columns = Vec::new();
        if !self.at_kw("FROM") {
            loop {
                columns.push(self.column_target()?);
                if !self.eat(TokenKind::Comma) {
                    break;
                }
            }
        }
        self.expect_kw("FROM")?;
        let table = self.qualified_name("table name")?;
        let using = self.using(UsingAllowed {
            ttl: false,
            timestamp: true,
            timeout: true,
        })?;
        self.expect_kw("WHERE")?;
        let where_clause = self.relations()?;
        let condition = self.conditional()?;
        Ok(Delete {
            columns,
            table,
            using,
            where_clause,
            condition,
        })
    }

    /// `col`, `col[term]` or `col.field`.
    fn column_target(&mut self) -> PResult<ColumnTarget> {
        let column = self.ident("column name")?;
        if self.eat(TokenKind::LBracket) {
            let key = self.term()?;
            self.expect(TokenKind::RBracket)?;
            Ok(ColumnTarget::Element { column, key })
        } else if self.eat(TokenKind::Dot) {
            let field = self.ident("field name")?;
            Ok(ColumnTarget::Field { column, field })
        } else {
            Ok(ColumnTarget::Column(column))
        }
    }

    /// `BEGIN [UNLOGGED | COUNTER] BATCH ... APPLY BATCH`
    fn batch(&mut self) -> PResult<Batch> {
        self.expect_kw("BEGIN")?;
        let kind = if self.eat_kw("UNLOGGED") {
            BatchKind::Unlogged
        } else if self.eat_kw("COUNTER") {
            BatchKind::Counter
        } else {
            BatchKind::Logged
        };
        self.expect_kw("BATCH")?;
        let using = self.using(UsingAllowed {
            ttl: true,
            timestamp: true,
            timeout: true,
        })?;
        let mut statements = Vec::new();
        loop {
            if self.at_kw("INSERT") {
                statements.push(BatchStatement::Insert(self.insert()?));
            } else if self.at_kw("UPDATE") {
                statements.push(BatchStatement::Update(self.update()?));
            } else if self.at_kw("DELETE") {
                statements.push(BatchStatement::Delete(self.delete()?));
            } else if self.eat_kw("APPLY") {
                self.expect_kw("BATCH")?;
                break;
            } else {
                return Err(self.mismatch("INSERT, UPDATE, DELETE or APPLY BATCH"));
            }
            self.eat(TokenKind::Semicolon);
        }
        Ok(Batch {
            kind,
            using,
            statements,
        })
    }

    /// An optional `USING x AND y ...` clause accepting the `allowed` parameters.
    fn using(&mut self, allowed: UsingAllowed) -> PResult<Using> {
        let mut using = Using::default();
        if !self.eat_kw("USING") {
            return Ok(using);
        }
        let mut expected: Vec<&str> = Vec::with_capacity(3);
        if allowed.ttl {
            expected.push("TTL");
        }
        if allowed.timestamp {
            expected.push("TIMESTAMP");
        }
        if allowed.timeout {
            expected.push("TIMEOUT");
        }
        loop {
            let tok = self.peek();
            let (slot, value) = if allowed.ttl && self.eat_kw("TTL") {
                (&mut using.ttl, self.integer_or_marker()?)
            } else if allowed.timestamp && self.eat_kw("TIMESTAMP") {
                (&mut using.timestamp, self.integer_or_marker()?)
            } else if allowed.timeout && self.eat_kw("TIMEOUT") {
                (&mut using.timeout, self.duration_or_marker()?)
            } else {
                return Err(self.mismatch(&expected.join(" or ")));
            };
            if slot.is_some() {
                return Err(self.error_at(
                    tok,
                    format!(
                        "{} is given twice in the USING clause",
                        self.text(tok).to_ascii_uppercase()
                    ),
                ));
            }
            *slot = Some(value);
            if !self.eat_kw("AND") {
                return Ok(using);
            }
        }
    }

    /// An integer constant (optionally negative) or a bind marker.
    fn integer_or_marker(&mut self) -> PResult<Term> {
        match self.kind_at(0) {
            TokenKind::Question | TokenKind::Colon => Ok(Term::Marker(self.bind_marker()?)),
            TokenKind::Integer => Ok(Term::Literal(self.constant()?)),
            TokenKind::Minus if self.kind_at(1) == TokenKind::Integer => {
                Ok(Term::Literal(self.constant()?))
            }
            _ => Err(self.mismatch("an integer or a bind marker")),
        }
    }

    /// A duration constant or a bind marker.
    fn duration_or_marker(&mut self) -> PResult<Term> {
        match self.kind_at(0) {
            TokenKind::Question | TokenKind::Colon => Ok(Term::Marker(self.bind_marker()?)),
            TokenKind::Duration => Ok(Term::Literal(self.constant()?)),
            TokenKind::Ident if is_iso_duration_word(self.text(self.peek())) => {
                Ok(Term::Literal(self.constant()?))
            }
            _ => Err(self.mismatch("a duration (such as 30000ms) or a bind marker")),
        }
    }

    // ---------------------------------------------------------------------------------
    // WHERE and IF
    // ---------------------------------------------------------------------------------

    /// `relation AND relation ...` (at least one).
    fn relations(&mut self) -> PResult<Vec<Relation>> {
        let mut relations = vec![self.relation()?];
        while self.eat_kw("AND") {
            relations.push(self.relation()?);
        }
        Ok(relations)
    }

    /// One relation of a `WHERE` clause.
    fn relation(&mut self) -> PResult<Relation> {
        if self.at(TokenKind::LParen) {
            let columns = self.paren_ident_list("column name")?;
            if self.eat_kw("IN") {
                let values = self.in_values()?;
                return Ok(Relation::MultiIn { columns, values });
            }
            let op = self.compare_op("IN")?;
            let value = self.term()?;
            return Ok(Relation::MultiCompare { columns, op, value });
        }
        if self.at_kw("TOKEN") && self.kind_at(1) == TokenKind::LParen {
            self.advance();
            let columns = self.paren_ident_list("column name")?;
            let op = self.compare_op("")?;
            let value = self.term()?;
            return Ok(Relation::Token { columns, op, value });
        }
        let column = self.ident("column name")?;
        if self.eat(TokenKind::LBracket) {
            let key = self.term()?;
            self.expect(TokenKind::RBracket)?;
            let op = self.compare_op("")?;
            let value = self.term()?;
            return Ok(Relation::Element {
                column,
                key,
                op,
                value,
            });
        }
        if self.eat_kw("IN") {
            let values = self.in_values()?;
            return Ok(Relation::In { column, values });
        }
        if self.eat_kw("CONTAINS") {
            let key = self.eat_kw("KEY");
            let value = self.term()?;
            return Ok(Relation::Contains { column, key, value });
        }
        if self.eat_kw("LIKE") {
            let pattern = self.term()?;
            return Ok(Relation::Like { column, pattern });
        }
        if self.eat_kw("IS") {
            self.expect_kw("NOT")?;
            self.expect_kw("NULL")?;
            return Ok(Relation::IsNotNull { column });
        }
        let op = self.compare_op("IN, CONTAINS, LIKE, IS NOT NULL")?;
        let value = self.term()?;
        Ok(Relation::Compare { column, op, value })
    }

    /// A comparison operator; `others` names the other accepted continuations for the
    /// error message.
    fn compare_op(&mut self, others: &str) -> PResult<CompareOp> {
        let op = match self.kind_at(0) {
            TokenKind::Eq => CompareOp::Eq,
            TokenKind::Ne => CompareOp::Ne,
            TokenKind::Lt => CompareOp::Lt,
            TokenKind::Le => CompareOp::Le,
            TokenKind::Gt => CompareOp::Gt,
            TokenKind::Ge => CompareOp::Ge,
            _ => {
                let ops = "'=', '!=', '<', '<=', '>', '>='";
                let expecting = if others.is_empty() {
                    format!("one of {ops}")
                } else {
                    format!("one of {ops}, {others}")
                };
                return Err(self.mismatch(&expecting));
            }
        };
        self.advance();
        Ok(op)
    }

    /// The right side of `IN`: a marker or a parenthesised (possibly empty) list of terms.
    fn in_values(&mut self) -> PResult<InValues> {
        if matches!(self.kind_at(0), TokenKind::Question | TokenKind::Colon) {
            return Ok(InValues::Marker(self.bind_marker()?));
        }
        if !self.at(TokenKind::LParen) {
            return Err(self.mismatch("'(' or a bind marker"));
        }
        self.advance();
        let mut values = Vec::new();
        if !self.eat(TokenKind::RParen) {
            loop {
                values.push(self.term()?);
                if !self.eat(TokenKind::Comma) {
                    break;
                }
            }
            self.expect(TokenKind::RParen)?;
        }
        Ok(InValues::List(values))
    }

    /// An optional `IF EXISTS` / `IF condition AND ...` clause.
    fn conditional(&mut self) -> PResult<Option<Conditional>> {
        if !self.eat_kw("IF") {
            return Ok(None);
        }
        // `IF exists = 1` is a condition on a column named `exists`.
        if self.at_kw("EXISTS") && !self.condition_continues_at(1) {
            self.advance();
            return Ok(Some(Conditional::Exists));
        }
        let mut conditions = vec![self.condition()?];
        while self.eat_kw("AND") {
            conditions.push(self.condition()?);
        }
        Ok(Some(Conditional::Conditions(conditions)))
    }

    /// Whether the token `ahead` positions on continues a condition after its column.
    fn condition_continues_at(&self, ahead: usize) -> bool {
        matches!(
            self.kind_at(ahead),
            TokenKind::Eq
                | TokenKind::Ne
                | TokenKind::Lt
                | TokenKind::Le
                | TokenKind::Gt
                | TokenKind::Ge
                | TokenKind::LBracket
                | TokenKind::Dot
        ) || ["IN", "CONTAINS", "LIKE"]
            .iter()
            .any(|kw| self.is_kw_at(ahead, kw))
    }

    /// One condition of an `IF` clause.
    fn condition(&mut self) -> PResult<Condition> {
        let target = self.column_target()?;
        if self.eat_kw("IN") {
            let values = self.in_values()?;
            return Ok(Condition::In { target, values });
        }
        if self.eat_kw("CONTAINS") {
            let key = self.eat_kw("KEY");
            let value = self.term()?;
            return Ok(Condition::Contains { target, key, value });
        }
        if self.eat_kw("LIKE") {
            let pattern = self.term()?;
            return Ok(Condition::Like { target, pattern });
        }
        let op = self.compare_op("IN, CONTAINS, LIKE")?;
        let value = self.term()?;
        Ok(Condition::Compare { target, op, value })
    }

    // ---------------------------------------------------------------------------------
    // Terms
    // ---------------------------------------------------------------------------------

    /// Whether the token `ahead` positions on is a word that denotes a constant where a
    /// value is expected (`true`, `false`, `null`, `NaN`, `Infinity`, an ISO duration).
    fn term_word_at(&self, ahead: usize) -> bool {
        let tok = self.peek_at(ahead);
        if tok.kind != TokenKind::Ident {
            return false;
        }
        let word = self.text(tok);
        ["TRUE", "FALSE", "NULL", "NAN", "INFINITY"]
            .iter()
            .any(|k| k.eq_ignore_ascii_case(word))
            || (self.kind_at(ahead + 1) != TokenKind::LParen && is_iso_duration_word(word))
    }

    /// Whether a type (and not a term) starts `ahead` tokens on, as after the `(` of a cast:
    /// a type name that is not a constant word nor a function name, or a generic type.
    fn type_start_at(&self, ahead: usize) -> bool {
        let tok = self.peek_at(ahead);
        let generic = tok.kind == TokenKind::Ident
            && self.kind_at(ahead + 1) == TokenKind::Lt
            && ["LIST", "SET", "MAP", "FROZEN", "TUPLE", "VECTOR"]
                .iter()
                .any(|g| g.eq_ignore_ascii_case(self.text(tok)));
        generic
            || (self.ident_at(ahead)
                && !self.term_word_at(ahead)
                && self.kind_at(ahead + 1) != TokenKind::LParen)
    }

    /// Whether the current token can start a term.
    fn at_term_start(&self) -> bool {
        match self.kind_at(0) {
            TokenKind::Str
            | TokenKind::DollarStr
            | TokenKind::Integer
            | TokenKind::Float
            | TokenKind::Uuid
            | TokenKind::Hex
            | TokenKind::Duration
            | TokenKind::Minus
            | TokenKind::Question
            | TokenKind::Colon
            | TokenKind::LBracket
            | TokenKind::LBrace
            | TokenKind::LParen
            | TokenKind::QuotedIdent => true,
            TokenKind::Ident => self.term_word_at(0) || self.ident_at(0) || self.call_at(),
            _ => false,
        }
    }

    /// A term.
    fn term(&mut self) -> PResult<Term> {
        self.enter()?;
        let result = self.term_inner();
        self.leave();
        result
    }

    /// A term, inside the depth guard.
    fn term_inner(&mut self) -> PResult<Term> {
        match self.kind_at(0) {
            TokenKind::Question | TokenKind::Colon => self.bind_marker().map(Term::Marker),
            TokenKind::LBracket => {
                self.advance();
                self.terms_until(TokenKind::RBracket, true).map(Term::List)
            }
            TokenKind::LBrace => self.brace_term(),
            TokenKind::LParen => self.paren_term(),
            TokenKind::Ident | TokenKind::QuotedIdent if !self.term_word_at(0) => self.call_term(),
            _ => self.constant().map(Term::Literal),
        }
    }

    /// Comma-separated terms up to and including `close` (none at all if `allow_empty`).
    fn terms_until(&mut self, close: TokenKind, allow_empty: bool) -> PResult<Vec<Term>> {
        let mut items = Vec::new();
        if allow_empty && self.eat(close) {
            return Ok(items);
        }
        loop {
            items.push(self.term()?);
            if !self.eat(TokenKind::Comma) {
                break;
            }
        }
        self.expect(close)?;
        Ok(items)
    }

    /// Whether the token `ahead` positions on can name a function (Cql.g
    /// `allowedFunctionName`): an identifier, or the reserved word `token`.
    fn function_name_at(&self, ahead: usize) -> bool {
        self.ident_at(ahead) || self.is_kw_at(ahead, "TOKEN")
    }

    /// Whether `name(` or `ks.name(` starts at the current token.
    fn call_at(&self) -> bool {
        (self.function_name_at(0) && self.kind_at(1) == TokenKind::LParen)
            || (self.ident_at(0)
                && self.kind_at(1) == TokenKind::Dot
                && self.function_name_at(2)
                && self.kind_at(3) == TokenKind::LParen)
    }

    /// A function name, `[ks.]name` (`token` is the one reserved word allowed).
    fn function_name(&mut self) -> PResult<QualifiedName> {
        let word = |p: &mut Self| -> PResult<String> {
            if p.at_kw("TOKEN") {
                p.advance();
                Ok("token".to_string())
            } else {
                p.ident("function name")
            }
        };
        if self.kind_at(1) == TokenKind::Dot {
            let ks = self.ident("function name")?;
            self.expect(TokenKind::Dot)?;
            Ok(QualifiedName::qualified(ks, word(self)?))
        } else {
            Ok(QualifiedName::unqualified(word(self)?))
        }
    }

    /// A function call term: `name(args)` or `ks.name(args)`.
    fn call_term(&mut self) -> PResult<Term> {
        if !self.call_at() {
            return Err(self
                .mismatch("a value (a constant, a bind marker, a collection or a function call)"));
        }
        let name = self.function_name()?;
        self.expect(TokenKind::LParen)?;
        let args = self.terms_until(TokenKind::RParen, true)?;
        Ok(Term::FunctionCall { name, args })
    }

    /// `?` or `:name`, numbered in order of appearance.
    fn bind_marker(&mut self) -> PResult<BindMarker> {
        let name = if self.eat(TokenKind::Question) {
            None
        } else if self.eat(TokenKind::Colon) {
            Some(self.ident("bind marker name")?)
        } else {
            return Err(self.mismatch("a bind marker"));
        };
        let index = self.markers;
        self.markers += 1;
        Ok(BindMarker { index, name })
    }

    /// Whether a UDT field name followed by `:` starts `ahead` tokens on (as opposed to a
    /// map key).
    fn udt_field_at(&self, ahead: usize) -> bool {
        self.ident_at(ahead) && self.kind_at(ahead + 1) == TokenKind::Colon
    }

    /// A term starting with `{`: empty collection, set, map or UDT value.
    fn brace_term(&mut self) -> PResult<Term> {
        self.expect(TokenKind::LBrace)?;
        if self.eat(TokenKind::RBrace) {
            return Ok(Term::EmptyCollection);
        }
        // `{name: ...}` with an identifier key is a UDT value; any other key is a term.
        if self.udt_field_at(0) {
            return self.udt_fields().map(Term::Udt);
        }
        let first = self.term()?;
        if self.eat(TokenKind::Colon) {
            self.map_entries(first).map(Term::Map)
        } else {
            self.set_items(first).map(Term::Set)
        }
    }

    /// The `field: term, ...}` of a UDT value.
    fn udt_fields(&mut self) -> PResult<Vec<(String, Term)>> {
        let mut fields = Vec::new();
        loop {
            let field = self.ident("field name")?;
            self.expect(TokenKind::Colon)?;
            fields.push((field, self.term()?));
            if !self.eat(TokenKind::Comma) {
                break;
            }
        }
        self.expect(TokenKind::RBrace)?;
        Ok(fields)
    }

    /// The rest of a map literal after `{first_key:`.
    fn map_entries(&mut self, first_key: Term) -> PResult<Vec<(Term, Term)>> {
        let first_value = self.term()?;
        let mut entries = vec![(first_key, first_value)];
        while self.eat(TokenKind::Comma) {
            let key = self.term()?;
            self.expect(TokenKind::Colon)?;
            entries.push((key, self.term()?));
        }
        self.expect(TokenKind::RBrace)?;
        Ok(entries)
    }

    /// The rest of a set literal after `{first`.
    fn set_items(&mut self, first: Term) -> PResult<Vec<Term>> {
        let mut items = vec![first];
        if self.eat(TokenKind::Comma) {
            items.append(&mut self.terms_until(TokenKind::RBrace, false)?);
        } else {
            self.expect(TokenKind::RBrace)?;
        }
        Ok(items)
    }

    /// A term starting with `(`: a cast `(type) term` or a tuple `(t1, t2, ...)`.
    fn paren_term(&mut self) -> PResult<Term> {
        // A cast needs a type right after `(`; a name followed by `(` is a function call
        // inside a tuple instead.
        if self.type_start_at(1) {
            let mark = self.mark();
            self.advance();
            if let Some(ty) = self.cast_prefix() {
                let term = Box::new(self.term()?);
                return Ok(Term::Cast { ty, term });
            }
            self.reset(mark);
        }
        self.expect(TokenKind::LParen)?;
        self.terms_until(TokenKind::RParen, false).map(Term::Tuple)
    }

    /// The `type)` of a cast, if that is what follows and a term comes after it.
    fn cast_prefix(&mut self) -> Option<TypeExpr> {
        let ty = self.type_expr().ok()?;
        (self.eat(TokenKind::RParen) && self.at_term_start()).then_some(ty)
    }

    /// A constant, optionally negative.
    fn constant(&mut self) -> PResult<Literal> {
        let tok = self.peek();
        if tok.kind == TokenKind::Minus {
            self.advance();
            let next = self.peek();
            return match next.kind {
                TokenKind::Integer | TokenKind::Float => {
                    self.advance();
                    let digits = self.text(next);
                    let mut text = String::with_capacity(digits.len() + 1);
                    text.push('-');
                    text.push_str(digits);
                    Ok(if next.kind == TokenKind::Integer {
                        Literal::Integer(text)
                    } else {
                        Literal::Float(text)
                    })
                }
                TokenKind::Duration => {
                    self.advance();
                    Ok(Literal::Duration(negate_duration(self.duration(next)?)))
                }
                TokenKind::Ident if self.text(next).eq_ignore_ascii_case("INFINITY") => {
                    self.advance();
                    Ok(Literal::Float("-Infinity".to_owned()))
                }
                TokenKind::Ident if self.text(next).eq_ignore_ascii_case("NAN") => {
                    self.advance();
                    Ok(Literal::Float("NaN".to_owned()))
                }
                TokenKind::Ident if is_iso_duration_word(self.text(next)) => {
                    self.advance();
                    Ok(Literal::Duration(negate_duration(self.duration(next)?)))
                }
                TokenKind::Hex => Err(self.error_at(
                    tok,
                    format!(
                        "invalid constant '-{}': a blob cannot be negative",
                        self.text(next)
                    ),
                )),
                _ => Err(self.mismatch("a number or a duration after '-'")),
            };
        }
        let text = self.text(tok);
        let literal = match tok.kind {
            TokenKind::Str => Literal::String(unescape_quoted(self.inner_text(tok, 1), '\'')),
            TokenKind::DollarStr => Literal::String(self.inner_text(tok, 2).to_owned()),
            TokenKind::Integer => Literal::Integer(text.to_owned()),
            TokenKind::Float => Literal::Float(text.to_owned()),
            TokenKind::Uuid => match Uuid::parse_str(text) {
                Ok(u) => Literal::Uuid(u),
                Err(e) => {
                    return Err(self.error_at(tok, format!("invalid uuid constant {text}: {e}")));
                }
            },
            TokenKind::Hex => {
                let digits = text.get(2..).unwrap_or("");
                match decode_hex(digits) {
                    Ok(bytes) => Literal::Blob(bytes),
                    Err(e) => return Err(self.invalid_at(tok, e)),
                }
            }
            TokenKind::Duration => Literal::Duration(self.duration(tok)?),
            TokenKind::Ident => {
                let upper = text.to_ascii_uppercase();
                match upper.as_str() {
                    "TRUE" => Literal::Boolean(true),
                    "FALSE" => Literal::Boolean(false),
                    "NULL" => Literal::Null,
                    "NAN" => Literal::Float("NaN".to_owned()),
                    "INFINITY" => Literal::Float("Infinity".to_owned()),
                    _ if is_iso_duration_word(text) => Literal::Duration(self.duration(tok)?),
                    _ => return Err(self.mismatch("a constant")),
                }
            }
            _ => {
                return Err(self.mismatch(
                    "a value (a constant, a bind marker, a collection or a function call)",
                ));
            }
        };
        self.advance();
        Ok(literal)
    }

    /// The value of a duration token (compact or ISO form).
    fn duration(&self, tok: Token) -> PResult<DurationLiteral> {
        parse_duration(self.text(tok)).map_err(|e| self.invalid_at(tok, e))
    }

    // ---------------------------------------------------------------------------------
    // Types
    // ---------------------------------------------------------------------------------

    /// A type expression.
    fn type_expr(&mut self) -> PResult<TypeExpr> {
        self.enter()?;
        let result = self.type_inner();
        self.leave();
        result
    }

    /// A type expression, inside the depth guard.
    fn type_inner(&mut self) -> PResult<TypeExpr> {
        let tok = self.peek();
        match tok.kind {
            TokenKind::Str => {
                self.advance();
                Ok(TypeExpr::Custom(unescape_quoted(
                    self.inner_text(tok, 1),
                    '\'',
                )))
            }
            TokenKind::QuotedIdent => self.qualified_name("type").map(TypeExpr::UserDefined),
            TokenKind::Ident if self.kind_at(1) == TokenKind::Lt => self.generic_type(),
            TokenKind::Ident => match CqlType::from_native_name(self.text(tok)) {
                Some(native) => {
                    self.advance();
                    Ok(TypeExpr::Native(native))
                }
                None => self.qualified_name("type").map(TypeExpr::UserDefined),
            },
            _ => Err(self.mismatch("a type")),
        }
    }

    /// `generic<...>`: list, set, map, frozen, tuple or vector.
    fn generic_type(&mut self) -> PResult<TypeExpr> {
        let tok = self.peek();
        let word = self.text(tok);
        let is = |name: &str| word.eq_ignore_ascii_case(name);
        let generic = if is("list") {
            Generic::List
        } else if is("set") {
            Generic::Set
        } else if is("frozen") {
            Generic::Frozen
        } else if is("map") {
            Generic::Map
        } else if is("tuple") {
            Generic::Tuple
        } else if is("vector") {
            Generic::Vector
        } else {
            return Err(self.mismatch("a type"));
        };
        self.advance();
        self.advance();
        let ty = match generic {
            Generic::List => TypeExpr::List(Box::new(self.type_expr()?)),
            Generic::Set => TypeExpr::Set(Box::new(self.type_expr()?)),
            Generic::Frozen => TypeExpr::Frozen(Box::new(self.type_expr()?)),
            Generic::Map => self.map_type()?,
            Generic::Tuple => self.tuple_type()?,
            Generic::Vector => self.vector_type()?,
        };
        self.expect(TokenKind::Gt)?;
        Ok(ty)
    }

    /// The `K, V` of `map<K, V>`.
    fn map_type(&mut self) -> PResult<TypeExpr> {
        let key = Box::new(self.type_expr()?);
        self.expect(TokenKind::Comma)?;
        let value = Box::new(self.type_expr()?);
        Ok(TypeExpr::Map(key, value))
    }

    /// The `A, B, ...` of `tuple<A, B, ...>`.
    fn tuple_type(&mut self) -> PResult<TypeExpr> {
        let mut elems = vec![self.type_expr()?];
        while self.eat(TokenKind::Comma) {
            elems.push(self.type_expr()?);
        }
        Ok(TypeExpr::Tuple(elems))
    }

    /// The `T, N` of `vector<T, N>`.
    fn vector_type(&mut self) -> PResult<TypeExpr> {
        let elem = Box::new(self.type_expr()?);
        self.expect(TokenKind::Comma)?;
        let tok = self.peek();
        if tok.kind != TokenKind::Integer {
            return Err(self.mismatch("the vector dimension (an integer)"));
        }
        let dimension = self.text(tok).parse::<u32>().map_err(|_| {
            self.invalid_at(
                tok,
                format!("vector dimension {} is too large", self.text(tok)),
            )
        })?;
        self.advance();
        Ok(TypeExpr::Vector { elem, dimension })
    }

    // ---------------------------------------------------------------------------------
    // DDL
    // ---------------------------------------------------------------------------------

    /// `CREATE KEYSPACE | TABLE | COLUMNFAMILY | TYPE ...`
    fn create(&mut self) -> PResult<Statement> {
        self.expect_kw("CREATE")?;
        if self.eat_kw("KEYSPACE") || self.eat_kw("SCHEMA") {
            let if_not_exists = self.if_not_exists()?;
            let name = self.ident("keyspace name")?;
            self.expect_kw("WITH")?;
            let properties = self.properties()?;
            return Ok(Statement::CreateKeyspace(CreateKeyspace {
                name,
                if_not_exists,
                properties,
            }));
        }
        if self.eat_kw("TABLE") || self.eat_kw("COLUMNFAMILY") {
            return Ok(Statement::CreateTable(Box::new(self.create_table()?)));
        }
        if self.at_kw("INDEX") || (self.at_kw("CUSTOM") && self.is_kw_at(1, "INDEX")) {
            return Ok(Statement::CreateIndex(Box::new(self.create_index()?)));
        }
        if self.at_kw("MATERIALIZED") && self.is_kw_at(1, "VIEW") {
            self.advance();
            self.advance();
            return Ok(Statement::CreateView(Box::new(self.create_view()?)));
        }
        if self.eat_kw("TYPE") {
            let if_not_exists = self.if_not_exists()?;
            let name = self.qualified_name("type name")?;
            self.expect(TokenKind::LParen)?;
            let mut fields = Vec::new();
            loop {
                let field = self.ident("field name")?;
                let ty = self.type_expr()?;
                fields.push((field, ty));
                if !self.comma_before_more(TokenKind::RParen) {
                    break;
                }
            }
            self.expect(TokenKind::RParen)?;
            return Ok(Statement::CreateType(CreateType {
                name,
                if_not_exists,
                fields,
            }));
        }
        Err(self.mismatch("KEYSPACE, TABLE, INDEX or TYPE"))
    }

    /// The rest of `CREATE [CUSTOM] INDEX [IF NOT EXISTS] [name] ON [ks.]t (targets)
    /// [USING 'class'] [WITH properties]` (Scylla's `createIndexStatement`).
    fn create_index(&mut self) -> PResult<CreateIndex> {
        let custom = self.eat_kw("CUSTOM");
        self.expect_kw("INDEX")?;
        let if_not_exists = self.if_not_exists()?;
        let name = if self.at_kw("ON") {
            None
        } else {
            Some(self.ident("index name")?)
        };
        self.expect_kw("ON")?;
        let table = self.qualified_name("table name")?;
        self.expect(TokenKind::LParen)?;
        let mut targets = Vec::new();
        if !self.at(TokenKind::RParen) {
            loop {
                targets.push(self.index_target()?);
                if !self.eat(TokenKind::Comma) {
                    break;
                }
            }
        }
        self.expect(TokenKind::RParen)?;
        let using = if self.eat_kw("USING") {
            let tok = self.peek();
            if tok.kind != TokenKind::Str {
                return Err(self.mismatch("a string"));
            }
            self.advance();
            Some(unescape_quoted(self.inner_text(tok, 1), '\''))
        } else {
            None
        };
        let properties = if self.eat_kw("WITH") {
            self.properties()?
        } else {
            Vec::new()
        };
        Ok(CreateIndex {
            name,
            table,
            if_not_exists,
            custom,
            targets,
            using,
            properties,
        })
    }

    /// One `indexIdent`: `c`, `keys(c)`, `values(c)`, `entries(c)`, `full(c)` or `(a, b)`.
    fn index_target(&mut self) -> PResult<IndexTargetExpr> {
        if self.at(TokenKind::LParen) {
            return Ok(IndexTargetExpr::Columns(
                self.paren_ident_list("column name")?,
            ));
        }
        for function in ["keys", "values", "entries", "full"] {
            if self.at_kw(function) && self.peek_at(1).kind == TokenKind::LParen {
                self.advance();
                self.advance();
                let column = self.ident("column name")?;
                self.expect(TokenKind::RParen)?;
                return Ok(IndexTargetExpr::Column {
                    function: Some(function.to_string()),
                    column,
                });
            }
        }
        Ok(IndexTargetExpr::Column {
            function: None,
            column: self.ident("column name")?,
        })
    }

    /// Consumes the commas between definitions (a trailing comma before `close` is allowed,
    /// as in Cassandra) and says whether another definition follows.
    fn comma_before_more(&mut self, close: TokenKind) -> bool {
        let mut any = false;
        while self.eat(TokenKind::Comma) {
            any = true;
        }
        any && !self.at(close)
    }

    /// The rest of `CREATE TABLE` after the keyword.
    fn create_table(&mut self) -> PResult<CreateTable> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.qualified_name("table name")?;
        self.expect(TokenKind::LParen)?;
        let mut columns = Vec::new();
        let mut primary_key: Option<PrimaryKey> = None;
        loop {
            let tok = self.peek();
            if self.at_kw("PRIMARY") {
                self.advance();
                self.expect_kw("KEY")?;
                let key = self.primary_key_clause()?;
                if primary_key.is_some() {
                    return Err(self.invalid_at(
                        tok,
                        "Multiple PRIMARY KEYs specified (exactly one required)",
                    ));
                }
                primary_key = Some(key);
            } else {
                let (column, inline_key) = self.column_def()?;
                if inline_key {
                    if primary_key.is_some() {
                        return Err(self.invalid_at(
                            tok,
                            "Multiple PRIMARY KEYs specified (exactly one required)",
                        ));
                    }
                    primary_key = Some(PrimaryKey {
                        partition_key: vec![column.name.clone()],
                        clustering: Vec::new(),
                    });
                }
                columns.push(column);
            }
            if !self.comma_before_more(TokenKind::RParen) {
                break;
            }
        }
        let close = self.expect(TokenKind::RParen)?;
        let Some(primary_key) = primary_key else {
            return Err(self.invalid_at(close, "No PRIMARY KEY specified (exactly one required)"));
        };
        let options = if self.eat_kw("WITH") {
            self.table_options()?
        } else {
            TableOptions::default()
        };
        Ok(CreateTable {
            name,
            if_not_exists,
            columns,
            primary_key,
            options,
        })
    }

    /// The rest of `CREATE MATERIALIZED VIEW` after the keywords (Cql.g
    /// `createMaterializedViewStatement`).
    fn create_view(&mut self) -> PResult<CreateView> {
        let if_not_exists = self.if_not_exists()?;
        let name = self.qualified_name("view name")?;
        self.expect_kw("AS")?;
        self.expect_kw("SELECT")?;
        let columns = if self.eat(TokenKind::Star) {
            None
        } else {
            let mut items = vec![self.select_item()?];
            while self.eat(TokenKind::Comma) {
                items.push(self.select_item()?);
            }
            Some(items)
        };
        self.expect_kw("FROM")?;
        let base = self.qualified_name("table name")?;
        let mut where_clause = Vec::new();
        let mut where_text = Vec::new();
        if self.eat_kw("WHERE") {
            loop {
                let start = self.peek().start;
                let relation = self.relation()?;
                let end = self.tokens[self.pos.saturating_sub(1)].end;
                where_text.push(relation_text(
                    &relation,
                    self.src.get(start..end).unwrap_or(""),
                ));
                where_clause.push(relation);
                if !self.eat_kw("AND") {
                    break;
                }
            }
        }
        self.expect_kw("PRIMARY")?;
        self.expect_kw("KEY")?;
        let primary_key = self.primary_key_clause()?;
        let options = if self.eat_kw("WITH") {
            self.table_options()?
        } else {
            TableOptions::default()
        };
        Ok(CreateView {
            name,
            if_not_exists,
            columns,
            base,
            where_clause,
            where_text,
            primary_key,
            options,
        })
    }

    /// `(pk, ck, ...)` / `((pk1, pk2), ck, ...)` after `PRIMARY KEY`.
    fn primary_key_clause(&mut self) -> PResult<PrimaryKey> {
        self.expect(TokenKind::LParen)?;
        let partition_key = if self.at(TokenKind::LParen) {
            self.paren_ident_list("column name")?
        } else {
            vec![self.ident("column name")?]
        };
        let mut clustering = Vec::new();
        while self.eat(TokenKind::Comma) {
            clustering.push(self.ident("column name")?);
        }
        self.expect(TokenKind::RParen)?;
        Ok(PrimaryKey {
            partition_key,
            clustering,
        })
    }

    /// `name type [STATIC] [PRIMARY KEY] [TTL]`; also says whether `PRIMARY KEY` was given.
    fn column_def(&mut self) -> PResult<(ColumnDef, bool)> {
        let name = self.ident("column name")?;
        let ty = self.type_expr()?;
        let mut column = ColumnDef {
            name,
            ty,
            is_static: false,
            is_ttl: false,
        };
        let mut primary_key = false;
        loop {
            let tok = self.peek();
            let repeated = if self.eat_kw("STATIC") {
                std::mem::replace(&mut column.is_static, true)
            } else if self.eat_kw("TTL") {
                std::mem::replace(&mut column.is_ttl, true)
            } else if self.eat_kw("PRIMARY") {
                self.expect_kw("KEY")?;
                std::mem::replace(&mut primary_key, true)
            } else {
                return Ok((column, primary_key));
            };
            if repeated {
                return Err(self.error_at(
                    tok,
                    format!("{} is given twice", self.text(tok).to_ascii_uppercase()),
                ));
            }
        }
    }

    /// The `WITH` clause of `CREATE TABLE`: properties, `CLUSTERING ORDER BY`, `COMPACT
    /// STORAGE`, joined by `AND`.
    fn table_options(&mut self) -> PResult<TableOptions> {
        let mut options = TableOptions::default();
        loop {
            let tok = self.peek();
            if self.at_kw("CLUSTERING") && self.is_kw_at(1, "ORDER") {
                self.advance();
                self.advance();
                self.expect_kw("BY")?;
                if !options.clustering_order.is_empty() {
                    return Err(self.error_at(tok, "CLUSTERING ORDER BY is given twice"));
                }
                self.expect(TokenKind::LParen)?;
                loop {
                    let column = self.ident("column name")?;
                    let order = if self.eat_kw("DESC") {
                        Order::Desc
                    } else if self.eat_kw("ASC") {
                        Order::Asc
                    } else {
                        return Err(self.mismatch("ASC or DESC"));
                    };
                    options.clustering_order.push((column, order));
                    if !self.eat(TokenKind::Comma) {
                        break;
                    }
                }
                self.expect(TokenKind::RParen)?;
            } else if self.at_kw("COMPACT") && self.is_kw_at(1, "STORAGE") {
                self.advance();
                self.advance();
                if options.compact_storage {
                    return Err(self.error_at(tok, "COMPACT STORAGE is given twice"));
                }
                options.compact_storage = true;
            } else {
                let property = self.property()?;
                Self::push_property(&mut options.properties, property)
                    .map_err(|m| self.error_at(tok, m))?;
            }
            if !self.eat_kw("AND") {
                return Ok(options);
            }
        }
    }

    /// `name = value AND ...` (at least one).
    fn properties(&mut self) -> PResult<Vec<Property>> {
        let mut properties = Vec::new();
        loop {
            let tok = self.peek();
            let property = self.property()?;
            Self::push_property(&mut properties, property).map_err(|m| self.error_at(tok, m))?;
            if !self.eat_kw("AND") {
                return Ok(properties);
            }
        }
    }

    /// Appends `property`, refusing a second definition of the same name.
    fn push_property(properties: &mut Vec<Property>, property: Property) -> Result<(), String> {
        if properties.iter().any(|p| p.name == property.name) {
            return Err(format!(
                "Multiple definition for property {}",
                property.name
            ));
        }
        properties.push(property);
        Ok(())
    }

    /// `name = constant` or `name = {key: value, ...}`.
    fn property(&mut self) -> PResult<Property> {
        let name = self.ident("property name")?;
        self.expect(TokenKind::Eq)?;
        let value = if self.eat(TokenKind::LBrace) {
            let mut entries = Vec::new();
            if !self.eat(TokenKind::RBrace) {
                loop {
                    let key = self.option_constant()?;
                    self.expect(TokenKind::Colon)?;
                    let value = self.option_constant()?;
                    entries.push((key, value));
                    if !self.eat(TokenKind::Comma) {
                        break;
                    }
                }
                self.expect(TokenKind::RBrace)?;
            }
            OptionValue::Map(entries)
        } else {
            OptionValue::Constant(self.option_constant()?)
        };
        Ok(Property { name, value })
    }

    /// A constant inside a property value.
    fn option_constant(&mut self) -> PResult<Literal> {
        let tok = self.peek();
        let ok = match tok.kind {
            TokenKind::Str
            | TokenKind::DollarStr
            | TokenKind::Integer
            | TokenKind::Float
            | TokenKind::Uuid
            | TokenKind::Hex
            | TokenKind::Duration
            | TokenKind::Minus => true,
            TokenKind::Ident => self.term_word_at(0),
            _ => false,
        };
        if !ok {
            return Err(self.mismatch("a constant"));
        }
        self.constant()
    }

    /// `ALTER KEYSPACE | TABLE | COLUMNFAMILY | TYPE ...`
    fn alter(&mut self) -> PResult<Statement> {
        self.expect_kw("ALTER")?;
        if self.eat_kw("KEYSPACE") || self.eat_kw("SCHEMA") {
            let name = self.ident("keyspace name")?;
            self.expect_kw("WITH")?;
            let properties = self.properties()?;
            return Ok(Statement::AlterKeyspace(AlterKeyspace { name, properties }));
        }
        if self.at_kw("MATERIALIZED") && self.is_kw_at(1, "VIEW") {
            self.advance();
            self.advance();
            let name = self.qualified_name("view name")?;
            self.expect_kw("WITH")?;
            let properties = self.properties()?;
            return Ok(Statement::AlterView(AlterView { name, properties }));
        }
        if self.eat_kw("TABLE") || self.eat_kw("COLUMNFAMILY") {
            let table = self.qualified_name("table name")?;
            let action = self.alter_table_action()?;
            return Ok(Statement::AlterTable(Box::new(AlterTable {
                table,
                action,
            })));
        }
        if self.eat_kw("TYPE") {
            let name = self.qualified_name("type name")?;
            let action = if self.eat_kw("ADD") {
                let field = self.ident("field name")?;
                let ty = self.type_expr()?;
                AlterTypeAction::Add { field, ty }
            } else if self.eat_kw("RENAME") {
                AlterTypeAction::Rename(self.renames()?)
            } else if self.eat_kw("ALTER") {
                let field = self.ident("field name")?;
                self.expect_kw("TYPE")?;
                let ty = self.type_expr()?;
                AlterTypeAction::AlterFieldType { field, ty }
            } else {
                return Err(self.mismatch("ADD, RENAME or ALTER"));
            };
            return Ok(Statement::AlterType(AlterType { name, action }));
        }
        Err(self.mismatch("KEYSPACE, TABLE or TYPE"))
    }

    /// What follows `ALTER TABLE name`.
    fn alter_table_action(&mut self) -> PResult<AlterTableAction> {
        if self.eat_kw("ADD") {
            let parenthesised = self.eat(TokenKind::LParen);
            let mut columns = Vec::new();
            loop {
                let name = self.ident("column name")?;
                let ty = self.type_expr()?;
                let is_static = self.eat_kw("STATIC");
                columns.push(NewColumn {
                    name,
                    ty,
                    is_static,
                });
                if !parenthesised || !self.eat(TokenKind::Comma) {
                    break;
                }
            }
            if parenthesised {
                self.expect(TokenKind::RParen)?;
            }
            return Ok(AlterTableAction::Add(columns));
        }
        if self.eat_kw("DROP") {
            let columns = if self.at(TokenKind::LParen) {
                self.paren_ident_list("column name")?
            } else {
                vec![self.ident("column name")?]
            };
            let mut timestamp = None;
            if self.eat_kw("USING") {
                self.expect_kw("TIMESTAMP")?;
                let tok = self.peek();
                let negative = self.eat(TokenKind::Minus);
                let digits = self.expect(TokenKind::Integer)?;
                let mut text = String::new();
                if negative {
                    text.push('-');
                }
                text.push_str(self.text(digits));
                let value = text.parse::<i64>().map_err(|_| {
                    self.invalid_at(tok, format!("timestamp {text} is out of range"))
                })?;
                timestamp = Some(value);
            }
            return Ok(AlterTableAction::Drop { columns, timestamp });
        }
        if self.eat_kw("RENAME") {
            return Ok(AlterTableAction::Rename(self.renames()?));
        }
        if self.eat_kw("ALTER") {
            let column = self.ident("column name")?;
            self.expect_kw("TYPE")?;
            let ty = self.type_expr()?;
            return Ok(AlterTableAction::AlterColumnType { column, ty });
        }
        if self.eat_kw("WITH") {
            return Ok(AlterTableAction::With(self.properties()?));
        }
        Err(self.mismatch("ADD, DROP, RENAME, ALTER or WITH"))
    }

    /// `a TO b [AND c TO d ...]`
    fn renames(&mut self) -> PResult<Vec<(String, String)>> {
        let mut renames = Vec::new();
        loop {
            let from = self.ident("column name")?;
            self.expect_kw("TO")?;
            let to = self.ident("column name")?;
            renames.push((from, to));
            if !self.eat_kw("AND") {
                return Ok(renames);
            }
        }
    }

    /// `DROP KEYSPACE | TABLE | COLUMNFAMILY | TYPE ...`
    fn drop(&mut self) -> PResult<Statement> {
        self.expect_kw("DROP")?;
        if self.eat_kw("KEYSPACE") || self.eat_kw("SCHEMA") {
            let if_exists = self.if_exists()?;
            let name = self.ident("keyspace name")?;
            return Ok(Statement::DropKeyspace(DropKeyspace { name, if_exists }));
        }
        if self.eat_kw("TABLE") || self.eat_kw("COLUMNFAMILY") {
            let if_exists = self.if_exists()?;
            let table = self.qualified_name("table name")?;
            return Ok(Statement::DropTable(DropTable { table, if_exists }));
        }
        if self.at_kw("MATERIALIZED") && self.is_kw_at(1, "VIEW") {
            self.advance();
            self.advance();
            let if_exists = self.if_exists()?;
            let table = self.qualified_name("view name")?;
            return Ok(Statement::DropView(DropTable { table, if_exists }));
        }
        if self.eat_kw("TYPE") {
            let if_exists = self.if_exists()?;
            let name = self.qualified_name("type name")?;
            return Ok(Statement::DropType(DropType { name, if_exists }));
        }
        if self.eat_kw("INDEX") {
            let if_exists = self.if_exists()?;
            let name = self.qualified_name("index name")?;
            return Ok(Statement::DropIndex(DropIndex { name, if_exists }));
        }
        Err(self.mismatch("KEYSPACE, TABLE, INDEX or TYPE"))
    }
}

/// A relation of a view's `WHERE` clause as Scylla stores it in
/// `system_schema.views.where_clause` (`relations_to_where_clause`): `IS NOT NULL` in its
/// canonical spelling, any other relation as written with its whitespace collapsed.
fn relation_text(relation: &Relation, written: &str) -> String {
    match relation {
        Relation::IsNotNull { column } => {
            format!("{} IS NOT NULL", crate::types::quote_identifier(column))
        }
        _ => written.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

/// How a token kind is named in "expecting ..." messages.
fn describe_kind(kind: TokenKind) -> &'static str {
    use TokenKind as K;
    match kind {
        K::Ident | K::QuotedIdent => "an identifier",
        K::Str | K::DollarStr => "a string",
        K::Integer => "an integer",
        K::Float => "a number",
        K::Uuid => "a uuid",
        K::Hex => "a blob",
        K::Duration => "a duration",
        K::LParen => "'('",
        K::RParen => "')'",
        K::LBracket => "'['",
        K::RBracket => "']'",
        K::LBrace => "'{'",
        K::RBrace => "'}'",
        K::Comma => "','",
        K::Semicolon => "';'",
        K::Dot => "'.'",
        K::Colon => "':'",
        K::Question => "'?'",
        K::Eq => "'='",
        K::Ne => "'!='",
        K::Lt => "'<'",
        K::Le => "'<='",
        K::Gt => "'>'",
        K::Ge => "'>='",
        K::Plus => "'+'",
        K::Minus => "'-'",
        K::PlusEq => "'+='",
        K::MinusEq => "'-='",
        K::Star => "'*'",
        K::Slash => "'/'",
        K::Percent => "'%'",
        K::Eof => "<EOF>",
    }
}

/// Whether an "expecting ..." description asks for a name (so that a reserved word found
/// there deserves a hint about quoting).
fn expecting_name(expecting: &str) -> bool {
    expecting.ends_with("name") || expecting == "alias"
}
