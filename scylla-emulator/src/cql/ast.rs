//! The syntax tree of one CQL statement, as the parser produces it and the executor consumes it.
//!
//! Names are final: unquoted identifiers are already lower-cased, quoted ones keep their case
//! and have their `""` escapes resolved. Nothing the statement says is dropped; semantic checks
//! that need the schema (does the column exist, is this type allowed here, does the value fit
//! the column) are left to the executor.

use std::fmt;

use uuid::Uuid;

use crate::types::{CqlType, write_identifier};

/// A name optionally qualified by a keyspace: `t`, `ks.t`, `"Ks"."T"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct QualifiedName {
    /// The keyspace, when the statement names one.
    pub(crate) keyspace: Option<String>,
    /// The object's own name.
    pub(crate) name: String,
}

impl QualifiedName {
    /// A name without a keyspace.
    pub(crate) fn unqualified(name: impl Into<String>) -> Self {
        QualifiedName {
            keyspace: None,
            name: name.into(),
        }
    }

    /// A name qualified by `keyspace`.
    pub(crate) fn qualified(keyspace: impl Into<String>, name: impl Into<String>) -> Self {
        QualifiedName {
            keyspace: Some(keyspace.into()),
            name: name.into(),
        }
    }
}

/// Renders the name as CQL text, quoting each part only when needed.
impl fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(ks) = &self.keyspace {
            write_identifier(f, ks)?;
            f.write_str(".")?;
        }
        write_identifier(f, &self.name)
    }
}

/// One parsed statement.
///
/// Large variants are boxed so that the enum stays small.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Statement {
    /// `SELECT ...`
    Select(Box<Select>),
    /// `INSERT INTO ...`
    Insert(Box<Insert>),
    /// `UPDATE ...`
    Update(Box<Update>),
    /// `DELETE ... FROM ...`
    Delete(Box<Delete>),
    /// `BEGIN [UNLOGGED | COUNTER] BATCH ... APPLY BATCH`
    Batch(Box<Batch>),
    /// `USE ks`
    Use {
        /// The keyspace to switch to.
        keyspace: String,
    },
    /// `CREATE KEYSPACE ...`
    CreateKeyspace(CreateKeyspace),
    /// `ALTER KEYSPACE ...`
    AlterKeyspace(AlterKeyspace),
    /// `DROP KEYSPACE ...`
    DropKeyspace(DropKeyspace),
    /// `CREATE TABLE ...`
    CreateTable(Box<CreateTable>),
    /// `ALTER TABLE ...`
    AlterTable(Box<AlterTable>),
    /// `DROP TABLE ...`
    DropTable(DropTable),
    /// `TRUNCATE [TABLE] ...`
    Truncate(Truncate),
    /// `CREATE TYPE ...`
    CreateType(CreateType),
    /// `ALTER TYPE ...`
    AlterType(AlterType),
    /// `DROP TYPE ...`
    DropType(DropType),
    /// `CREATE [CUSTOM] INDEX ...`
    CreateIndex(Box<CreateIndex>),
    /// `DROP INDEX [IF EXISTS] [ks.]name`
    DropIndex(DropIndex),
    /// `DESCRIBE ...` / `DESC ...` (executed by the server, as Scylla does).
    Describe(Describe),
    /// `CREATE MATERIALIZED VIEW ...`
    CreateView(Box<CreateView>),
    /// `ALTER MATERIALIZED VIEW [ks.]v WITH ...`
    AlterView(AlterView),
    /// `DROP MATERIALIZED VIEW [IF EXISTS] [ks.]v`
    DropView(DropTable),
    /// A statement recognised by its first keywords that the embedded cluster does not
    /// implement (`CREATE MATERIALIZED VIEW`, `GRANT`, ...). The rest of its text is not parsed.
    Unsupported {
        /// The recognised leading keywords, upper-case (`"CREATE MATERIALIZED VIEW"`).
        what: String,
    },
}

impl Statement {
    /// Every bind marker of the statement, ordered by index (markers of a batch's inner
    /// statements included). The indexes are exactly `0..len()`.
    pub(crate) fn bind_markers(&self) -> Vec<&BindMarker> {
        let mut out = Vec::new();
        match self {
            Statement::Select(s) => s.collect_markers(&mut out),
            Statement::Insert(s) => s.collect_markers(&mut out),
            Statement::Update(s) => s.collect_markers(&mut out),
            Statement::Delete(s) => s.collect_markers(&mut out),
            Statement::Batch(b) => {
                collect_using(&b.using, &mut out);
                for s in &b.statements {
                    s.collect_markers(&mut out);
                }
            }
            _ => {}
        }
        out.sort_by_key(|m| m.index);
        out
    }

    /// The number of bind markers (the number of values an EXECUTE must bind).
    pub(crate) fn bind_count(&self) -> usize {
        self.bind_markers().len()
    }
}

// ---------------------------------------------------------------------------------------
// Literals, terms and types
// ---------------------------------------------------------------------------------------

/// A bind marker: `?` or `:name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BindMarker {
    /// Position among all markers of the statement, from 0, in order of appearance (across
    /// the whole text for a batch).
    pub(crate) index: usize,
    /// The marker's name for `:name` (lower-cased unless quoted), `None` for `?`.
    pub(crate) name: Option<String>,
}

/// A CQL duration value: months, days and nanoseconds, all with the same sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct DurationLiteral {
    /// Months (years count 12).
    pub(crate) months: i32,
    /// Days (weeks count 7).
    pub(crate) days: i32,
    /// Nanoseconds (hours, minutes, seconds and their fractions).
    pub(crate) nanoseconds: i64,
}

/// Renders the duration in CQL's compact unit form (`1y2mo3d4h5m6s7ms8us9ns`, `-1h`, `0s`).
impl fmt::Display for DurationLiteral {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let negative = self.months < 0 || self.days < 0 || self.nanoseconds < 0;
        if negative {
            f.write_str("-")?;
        }
        let months = self.months.unsigned_abs();
        let days = self.days.unsigned_abs();
        let mut nanos = self.nanoseconds.unsigned_abs();
        if months == 0 && days == 0 && nanos == 0 {
            return f.write_str("0s");
        }
        let mut part = |value: u64, unit: &str| -> fmt::Result {
            if value > 0 {
                write!(f, "{value}{unit}")?;
            }
            Ok(())
        };
        part(u64::from(months / 12), "y")?;
        part(u64::from(months % 12), "mo")?;
        part(u64::from(days), "d")?;
        for (unit, size) in [
            ("h", 3_600_000_000_000u64),
            ("m", 60_000_000_000),
            ("s", 1_000_000_000),
            ("ms", 1_000_000),
            ("us", 1_000),
            ("ns", 1),
        ] {
            part(nanos / size, unit)?;
            nanos %= size;
        }
        Ok(())
    }
}

/// A constant written in the statement.
///
/// Numbers keep their text so that huge varints and exact decimals survive; the executor
/// converts them according to the type of the column they are assigned to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Literal {
    /// `'text'` (with `''` resolved) or `$$text$$`.
    String(String),
    /// An integer as written, with its optional leading `-` (`42`, `-7`,
    /// `123456789012345678901234567890`).
    Integer(String),
    /// A floating-point number as written (`1.5`, `-1e10`, `2.`), or one of `NaN`,
    /// `Infinity`, `-Infinity` in that canonical spelling.
    Float(String),
    /// `true` / `false`.
    Boolean(bool),
    /// An unquoted uuid constant (`123e4567-e89b-12d3-a456-426614174000`).
    Uuid(Uuid),
    /// A blob constant `0xCAFE` (`0x` alone is the empty blob).
    Blob(Vec<u8>),
    /// A duration constant (`1h30m`, `P1DT2H`, `-2us`, `30000ms`).
    Duration(DurationLiteral),
    /// `null`.
    Null,
}

impl Literal {
    /// The literal as the text a `map<text, text>` option stores it (`'full'` -> `full`,
    /// `true` -> `true`, `3600` -> `3600`, `0xCAFE` -> `0xcafe`, `null` -> `null`).
    pub(crate) fn to_option_text(&self) -> String {
        match self {
            Literal::String(s) | Literal::Integer(s) | Literal::Float(s) => s.clone(),
            Literal::Boolean(b) => b.to_string(),
            Literal::Uuid(u) => u.hyphenated().to_string(),
            Literal::Blob(bytes) => {
                let mut s = String::with_capacity(2 + 2 * bytes.len());
                s.push_str("0x");
                for b in bytes {
                    s.push_str(&format!("{b:02x}"));
                }
                s
            }
            Literal::Duration(d) => d.to_string(),
            Literal::Null => "null".to_owned(),
        }
    }
}

/// A value expression: what may stand on the right of `=`, inside `VALUES (...)`, as a
/// function argument, and so on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Term {
    /// A constant.
    Literal(Literal),
    /// A bind marker.
    Marker(BindMarker),
    /// `[t1, t2, ...]`
    List(Vec<Term>),
    /// `{t1, t2, ...}` (at least one element).
    Set(Vec<Term>),
    /// `{k1: v1, ...}` (at least one entry; keys are terms).
    Map(Vec<(Term, Term)>),
    /// `{}`: an empty set or map; the receiving column's type decides which.
    EmptyCollection,
    /// `{field: t, ...}`: a user-type value (keys are identifiers).
    Udt(Vec<(String, Term)>),
    /// `(t1, t2, ...)`: a tuple value (one element or more).
    Tuple(Vec<Term>),
    /// `name(args)`: a function call (`now()`, `minTimeuuid(?)`, `token(?, ?)`). The name is
    /// lower-cased unless it was quoted.
    FunctionCall {
        /// The function's name, keyspace-qualified if written so (`system.now`).
        name: QualifiedName,
        /// The arguments, in order.
        args: Vec<Term>,
    },
    /// `(type) term`: a type hint / cast of a term.
    Cast {
        /// The type written in parentheses.
        ty: TypeExpr,
        /// The term being cast.
        term: Box<Term>,
    },
}

/// A type as written in the statement.
///
/// `frozen<...>` is kept explicit: the executor applies Scylla's rules (elements of
/// collections are implicitly frozen, UDTs in primary keys must be frozen, ...).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum TypeExpr {
    /// A native type; always one of [`CqlType`]'s non-collection variants (`varchar` is
    /// already [`CqlType::Text`]).
    Native(CqlType),
    /// `list<T>`
    List(Box<TypeExpr>),
    /// `set<T>`
    Set(Box<TypeExpr>),
    /// `map<K, V>`
    Map(Box<TypeExpr>, Box<TypeExpr>),
    /// `tuple<A, B, ...>`
    Tuple(Vec<TypeExpr>),
    /// `frozen<T>`
    Frozen(Box<TypeExpr>),
    /// `vector<T, N>`
    Vector {
        /// Element type.
        elem: Box<TypeExpr>,
        /// Number of elements, as written (not checked to be positive).
        dimension: u32,
    },
    /// A user-defined type, optionally keyspace-qualified (`ut`, `ks.ut`, `"MyType"`).
    UserDefined(QualifiedName),
    /// A custom type given by its Java class name as a string (`'org.example.MyType'`).
    Custom(String),
}

/// Renders the type as CQL text (`frozen<map<int, ks.ut>>`).
impl fmt::Display for TypeExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeExpr::Native(t) => write!(f, "{t}"),
            TypeExpr::List(e) => write!(f, "list<{e}>"),
            TypeExpr::Set(e) => write!(f, "set<{e}>"),
            TypeExpr::Map(k, v) => write!(f, "map<{k}, {v}>"),
            TypeExpr::Tuple(elems) => {
                f.write_str("tuple<")?;
                for (i, e) in elems.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str(">")
            }
            TypeExpr::Frozen(e) => write!(f, "frozen<{e}>"),
            TypeExpr::Vector { elem, dimension } => write!(f, "vector<{elem}, {dimension}>"),
            TypeExpr::UserDefined(name) => write!(f, "{name}"),
            TypeExpr::Custom(class) => write!(f, "'{}'", class.replace('\'', "''")),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Shared pieces of DML
// ---------------------------------------------------------------------------------------

/// A comparison operator of a relation or a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CompareOp {
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
}

impl fmt::Display for CompareOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CompareOp::Eq => "=",
            CompareOp::Ne => "!=",
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
        })
    }
}

/// The right side of `IN`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InValues {
    /// `IN (t1, t2, ...)` (possibly empty). For a multi-column `IN` each element is a tuple
    /// literal or a marker binding one tuple.
    List(Vec<Term>),
    /// `IN ?` / `IN :name`: one marker binding the whole list.
    Marker(BindMarker),
}

/// One `AND`-joined restriction of a `WHERE` clause.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Relation {
    /// `col op term`
    Compare {
        /// The restricted column.
        column: String,
        /// The operator.
        op: CompareOp,
        /// The right side.
        value: Term,
    },
    /// `col IN (...)` / `col IN ?`
    In {
        /// The restricted column.
        column: String,
        /// The accepted values.
        values: InValues,
    },
    /// `col CONTAINS term` / `col CONTAINS KEY term`
    Contains {
        /// The collection column.
        column: String,
        /// Whether this is `CONTAINS KEY` (map keys) rather than `CONTAINS` (values).
        key: bool,
        /// The searched element.
        value: Term,
    },
    /// `col LIKE pattern`
    Like {
        /// The restricted column.
        column: String,
        /// The pattern.
        pattern: Term,
    },
    /// `col[key] op term` (a map element)
    Element {
        /// The map column.
        column: String,
        /// The element's key.
        key: Term,
        /// The operator.
        op: CompareOp,
        /// The right side.
        value: Term,
    },
    /// `col IS NOT NULL` (materialized views)
    IsNotNull {
        /// The restricted column.
        column: String,
    },
    /// `(c1, c2, ...) op term` where the term is a tuple literal or a marker.
    MultiCompare {
        /// The columns, in the written order.
        columns: Vec<String>,
        /// The operator.
        op: CompareOp,
        /// The right side.
        value: Term,
    },
    /// `(c1, c2, ...) IN ((..), (..))` / `(c1, c2) IN ?`
    MultiIn {
        /// The columns, in the written order.
        columns: Vec<String>,
        /// The accepted tuples.
        values: InValues,
    },
    /// `token(c1, c2, ...) op term`; the term may be `token(?, ?)`, a constant or a marker.
    Token {
        /// The columns passed to `token`.
        columns: Vec<String>,
        /// The operator.
        op: CompareOp,
        /// The right side.
        value: Term,
    },
}

/// A column, a collection element or a UDT field named by `DELETE` or by an `IF` condition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ColumnTarget {
    /// `col`
    Column(String),
    /// `col[key]`: a map key or a list index.
    Element {
        /// The collection column.
        column: String,
        /// The key or index.
        key: Term,
    },
    /// `col.field`
    Field {
        /// The UDT column.
        column: String,
        /// The field.
        field: String,
    },
}

/// One `AND`-joined condition of an `IF` clause (lightweight transaction).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Condition {
    /// `target op term`
    Compare {
        /// What is compared.
        target: ColumnTarget,
        /// The operator.
        op: CompareOp,
        /// The right side.
        value: Term,
    },
    /// `target IN (...)` / `target IN ?`
    In {
        /// What is compared.
        target: ColumnTarget,
        /// The accepted values.
        values: InValues,
    },
    /// `target CONTAINS term` / `target CONTAINS KEY term`
    Contains {
        /// The collection.
        target: ColumnTarget,
        /// Whether this is `CONTAINS KEY`.
        key: bool,
        /// The searched element.
        value: Term,
    },
    /// `target LIKE pattern`
    Like {
        /// What is matched.
        target: ColumnTarget,
        /// The pattern.
        pattern: Term,
    },
}

/// The `IF` clause of an `UPDATE` or a `DELETE`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Conditional {
    /// `IF EXISTS`
    Exists,
    /// `IF cond AND cond ...`
    Conditions(Vec<Condition>),
}

/// The `USING` parameters of a statement. Each value is a constant or a bind marker: an
/// integer for `ttl` and `timestamp`, a duration for `timeout`.
///
/// The grammar lets `TTL` appear in INSERT, UPDATE and BATCH (the executor rejects a batch
/// TTL), `TIMESTAMP` everywhere but SELECT, `TIMEOUT` everywhere.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Using {
    /// `USING TTL x`
    pub(crate) ttl: Option<Term>,
    /// `USING TIMESTAMP x`
    pub(crate) timestamp: Option<Term>,
    /// `USING TIMEOUT x`
    pub(crate) timeout: Option<Term>,
}

// ---------------------------------------------------------------------------------------
// SELECT
// ---------------------------------------------------------------------------------------

/// `SELECT ...`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Select {
    /// `SELECT JSON`
    pub(crate) json: bool,
    /// `SELECT DISTINCT`
    pub(crate) distinct: bool,
    /// What is selected.
    pub(crate) selection: Selection,
    /// The table read.
    pub(crate) table: QualifiedName,
    /// The `WHERE` relations (empty without `WHERE`).
    pub(crate) where_clause: Vec<Relation>,
    /// `GROUP BY` columns (empty without `GROUP BY`).
    pub(crate) group_by: Vec<String>,
    /// `ORDER BY` columns and directions (empty without `ORDER BY`).
    pub(crate) order_by: Vec<(String, Order)>,
    /// `PER PARTITION LIMIT n|?`
    pub(crate) per_partition_limit: Option<Term>,
    /// `LIMIT n|?`
    pub(crate) limit: Option<Term>,
    /// `ALLOW FILTERING`
    pub(crate) allow_filtering: bool,
    /// `BYPASS CACHE`
    pub(crate) bypass_cache: bool,
    /// `USING TIMEOUT d|?`
    pub(crate) timeout: Option<Term>,
}

/// The selection of a `SELECT`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Selection {
    /// `*`
    Wildcard,
    /// A list of selectors.
    Items(Vec<SelectItem>),
}

/// One selector with its optional `AS` alias.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SelectItem {
    /// What is computed.
    pub(crate) selector: Selector,
    /// `AS alias`
    pub(crate) alias: Option<String>,
}

/// A selector: what one result column computes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Selector {
    /// A column.
    Column(String),
    /// `COUNT(*)`, or its spelling `COUNT(1)`.
    CountAll,
    /// `WRITETIME(col)`
    WriteTime(String),
    /// `TTL(col)`
    Ttl(String),
    /// `name(args)`: aggregates and scalar functions (`min`, `token`, `totimestamp`, ...).
    /// The name is lower-cased unless it was quoted.
    Function {
        /// The function's name, keyspace-qualified if written so.
        name: QualifiedName,
        /// The arguments, in order.
        args: Vec<Selector>,
    },
    /// `CAST(selector AS type)`
    Cast {
        /// The converted selector.
        selector: Box<Selector>,
        /// The target type.
        ty: TypeExpr,
    },
    /// `selector.field`: a UDT field.
    Field {
        /// The UDT-valued selector.
        selector: Box<Selector>,
        /// The field.
        field: String,
    },
    /// `selector[key]`: a collection element (the key is the only place of a selection
    /// where a constant or a bind marker may appear).
    Element {
        /// The collection-valued selector.
        selector: Box<Selector>,
        /// The key or index.
        key: Term,
    },
}

/// A sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Order {
    /// `ASC` (also the default when no direction is written).
    Asc,
    /// `DESC`
    Desc,
}

// ---------------------------------------------------------------------------------------
// INSERT / UPDATE / DELETE / BATCH
// ---------------------------------------------------------------------------------------

/// `INSERT INTO ...`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Insert {
    /// The table written.
    pub(crate) table: QualifiedName,
    /// The written values.
    pub(crate) values: InsertValues,
    /// `IF NOT EXISTS`
    pub(crate) if_not_exists: bool,
    /// `USING TTL / TIMESTAMP / TIMEOUT`
    pub(crate) using: Using,
}

/// What an `INSERT` writes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InsertValues {
    /// `(c1, c2) VALUES (t1, t2)`, as (column, value) pairs in the written order (the
    /// parser has checked that the counts match).
    Columns(Vec<(String, Term)>),
    /// `JSON 'json' [DEFAULT NULL | DEFAULT UNSET]`
    Json {
        /// The JSON document: a string constant or a marker.
        json: Term,
        /// What happens to columns the document omits (`Null` unless written otherwise).
        default: JsonDefault,
    },
}

/// `DEFAULT NULL` / `DEFAULT UNSET` of `INSERT JSON`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) enum JsonDefault {
    /// Omitted columns are set to null (the default).
    #[default]
    Null,
    /// Omitted columns are left untouched.
    Unset,
}

/// `UPDATE ...`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Update {
    /// The table written.
    pub(crate) table: QualifiedName,
    /// `USING TTL / TIMESTAMP / TIMEOUT`
    pub(crate) using: Using,
    /// The `SET` assignments, in the written order.
    pub(crate) assignments: Vec<Assignment>,
    /// The `WHERE` relations.
    pub(crate) where_clause: Vec<Relation>,
    /// The `IF` clause.
    pub(crate) condition: Option<Conditional>,
}

/// One assignment of an `UPDATE ... SET`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Assignment {
    /// `c = term`
    Set {
        /// The column.
        column: String,
        /// The new value.
        value: Term,
    },
    /// `c = c + term` or `c += term`: list append, set / map addition, counter increment.
    Add {
        /// The column.
        column: String,
        /// What is added.
        value: Term,
    },
    /// `c = term + c`: list prepend.
    Prepend {
        /// The column.
        column: String,
        /// What is prepended.
        value: Term,
    },
    /// `c = c - term` or `c -= term`: list / set / map removal, counter decrement.
    Remove {
        /// The column.
        column: String,
        /// What is removed.
        value: Term,
    },
    /// `c[key] = term`: a map entry or a list element by index.
    SetElement {
        /// The collection column.
        column: String,
        /// The map key or list index.
        key: Term,
        /// The new value.
        value: Term,
    },
    /// `c.field = term`: a field of a non-frozen UDT.
    SetField {
        /// The UDT column.
        column: String,
        /// The field.
        field: String,
        /// The new value.
        value: Term,
    },
}

impl Assignment {
    /// The assigned column.
    pub(crate) fn column(&self) -> &str {
        match self {
            Assignment::Set { column, .. }
            | Assignment::Add { column, .. }
            | Assignment::Prepend { column, .. }
            | Assignment::Remove { column, .. }
            | Assignment::SetElement { column, .. }
            | Assignment::SetField { column, .. } => column,
        }
    }
}

/// `DELETE ... FROM ...`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Delete {
    /// The deleted columns / elements / fields; empty to delete whole rows.
    pub(crate) columns: Vec<ColumnTarget>,
    /// The table written.
    pub(crate) table: QualifiedName,
    /// `USING TIMESTAMP / TIMEOUT` (never TTL).
    pub(crate) using: Using,
    /// The `WHERE` relations.
    pub(crate) where_clause: Vec<Relation>,
    /// The `IF` clause.
    pub(crate) condition: Option<Conditional>,
}

/// The kind of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BatchKind {
    /// `BEGIN BATCH`
    Logged,
    /// `BEGIN UNLOGGED BATCH`
    Unlogged,
    /// `BEGIN COUNTER BATCH`
    Counter,
}

/// `BEGIN [UNLOGGED | COUNTER] BATCH [USING ...] stmt; ... APPLY BATCH`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Batch {
    /// The kind.
    pub(crate) kind: BatchKind,
    /// The batch-wide `USING` parameters.
    pub(crate) using: Using,
    /// The inner statements, in order (possibly none).
    pub(crate) statements: Vec<BatchStatement>,
}

/// A statement inside a batch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BatchStatement {
    /// An `INSERT`.
    Insert(Insert),
    /// An `UPDATE`.
    Update(Update),
    /// A `DELETE`.
    Delete(Delete),
}

impl BatchStatement {
    /// The table the statement writes.
    pub(crate) fn table(&self) -> &QualifiedName {
        match self {
            BatchStatement::Insert(s) => &s.table,
            BatchStatement::Update(s) => &s.table,
            BatchStatement::Delete(s) => &s.table,
        }
    }

    /// The statement's own markers, ordered by index (their indexes count across the whole
    /// batch).
    #[cfg(test)]
    pub(crate) fn bind_markers(&self) -> Vec<&BindMarker> {
        let mut out = Vec::new();
        self.collect_markers(&mut out);
        out.sort_by_key(|m| m.index);
        out
    }

    /// Appends the statement's markers to `out`.
    fn collect_markers<'a>(&'a self, out: &mut Vec<&'a BindMarker>) {
        match self {
            BatchStatement::Insert(s) => s.collect_markers(out),
            BatchStatement::Update(s) => s.collect_markers(out),
            BatchStatement::Delete(s) => s.collect_markers(out),
        }
    }
}

// ---------------------------------------------------------------------------------------
// DDL
// ---------------------------------------------------------------------------------------

/// One `name = value` property of a `WITH` clause.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Property {
    /// The property name (lower-cased unless quoted).
    pub(crate) name: String,
    /// The value.
    pub(crate) value: OptionValue,
}

/// The value of a `WITH` property.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OptionValue {
    /// A constant: `'x'`, `10`, `true`, `null`, ...
    Constant(Literal),
    /// `{key: value, ...}` with constant keys and values, in the written order
    /// (`{'enabled': true, 'ttl': 100}`).
    Map(Vec<(Literal, Literal)>),
}

impl OptionValue {
    /// The map entries as text pairs (`{'enabled': true}` -> `[("enabled", "true")]`), or
    /// `None` for a constant.
    pub(crate) fn as_text_map(&self) -> Option<Vec<(String, String)>> {
        match self {
            OptionValue::Map(entries) => Some(
                entries
                    .iter()
                    .map(|(k, v)| (k.to_option_text(), v.to_option_text()))
                    .collect(),
            ),
            OptionValue::Constant(_) => None,
        }
    }

    /// The constant as text, or `None` for a map.
    pub(crate) fn as_text(&self) -> Option<String> {
        match self {
            OptionValue::Constant(l) => Some(l.to_option_text()),
            OptionValue::Map(_) => None,
        }
    }
}

/// `CREATE KEYSPACE [IF NOT EXISTS] ks WITH ...`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CreateKeyspace {
    /// The keyspace name.
    pub(crate) name: String,
    /// `IF NOT EXISTS`
    pub(crate) if_not_exists: bool,
    /// `replication`, `durable_writes`, `tablets`, ... in the written order.
    pub(crate) properties: Vec<Property>,
}

/// `ALTER KEYSPACE ks WITH ...`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AlterKeyspace {
    /// The keyspace name.
    pub(crate) name: String,
    /// The changed properties, in the written order.
    pub(crate) properties: Vec<Property>,
}

/// `DROP KEYSPACE [IF EXISTS] ks`
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DropKeyspace {
    /// The keyspace name.
    pub(crate) name: String,
    /// `IF EXISTS`
    pub(crate) if_exists: bool,
}

/// One column definition of `CREATE TABLE`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnDef {
    /// The column name.
    pub(crate) name: String,
    /// The column type.
    pub(crate) ty: TypeExpr,
    /// `STATIC`
    pub(crate) is_static: bool,
    /// `TTL`: the column is the table's per-row expiration column (Scylla 2026.2).
    pub(crate) is_ttl: bool,
}

/// The primary key of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrimaryKey {
    /// Partition-key columns, in order (at least one).
    pub(crate) partition_key: Vec<String>,
    /// Clustering columns, in order.
    pub(crate) clustering: Vec<String>,
}

/// The `WITH` clause of `CREATE TABLE`.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct TableOptions {
    /// `name = value` properties (`cdc`, `comment`, `default_time_to_live`, ...), in the
    /// written order; names are unique.
    pub(crate) properties: Vec<Property>,
    /// `CLUSTERING ORDER BY (c DESC, ...)` (empty when absent).
    pub(crate) clustering_order: Vec<(String, Order)>,
    /// `COMPACT STORAGE`
    pub(crate) compact_storage: bool,
}

/// `CREATE TABLE [IF NOT EXISTS] [ks.]t (...) [WITH ...]` (or `COLUMNFAMILY`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CreateTable {
    /// The table name.
    pub(crate) name: QualifiedName,
    /// `IF NOT EXISTS`
    pub(crate) if_not_exists: bool,
    /// The columns, in the written order.
    pub(crate) columns: Vec<ColumnDef>,
    /// The primary key, from the `PRIMARY KEY (...)` clause or from the one column marked
    /// `PRIMARY KEY` (the parser has checked there is exactly one of these).
    pub(crate) primary_key: PrimaryKey,
    /// The `WITH` clause.
    pub(crate) options: TableOptions,
}

/// A column added by `ALTER TABLE ... ADD`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewColumn {
    /// The column name.
    pub(crate) name: String,
    /// The column type.
    pub(crate) ty: TypeExpr,
    /// `STATIC`
    pub(crate) is_static: bool,
}

/// `ALTER TABLE [ks.]t ...`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AlterTable {
    /// The table name.
    pub(crate) table: QualifiedName,
    /// What is changed.
    pub(crate) action: AlterTableAction,
}

/// What an `ALTER TABLE` changes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AlterTableAction {
    /// `ADD col type [static]` / `ADD (c1 t1, c2 t2 static)`
    Add(Vec<NewColumn>),
    /// `DROP col` / `DROP (c1, c2)` `[USING TIMESTAMP n]`
    Drop {
        /// The dropped columns.
        columns: Vec<String>,
        /// `USING TIMESTAMP n`
        timestamp: Option<i64>,
    },
    /// `RENAME a TO b [AND c TO d ...]` as (old, new) pairs.
    Rename(Vec<(String, String)>),
    /// `ALTER col TYPE type`
    AlterColumnType {
        /// The column.
        column: String,
        /// The new type.
        ty: TypeExpr,
    },
    /// `WITH name = value AND ...`
    With(Vec<Property>),
}

/// `DROP TABLE [IF EXISTS] [ks.]t`
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DropTable {
    /// The table name.
    pub(crate) table: QualifiedName,
    /// `IF EXISTS`
    pub(crate) if_exists: bool,
}

/// `CREATE MATERIALIZED VIEW [IF NOT EXISTS] [ks.]v AS SELECT cols FROM [ks.]base
/// [WHERE ...] PRIMARY KEY (...) [WITH ...]` (Scylla's `createMaterializedViewStatement`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CreateView {
    /// The view name.
    pub(crate) name: QualifiedName,
    /// `IF NOT EXISTS`
    pub(crate) if_not_exists: bool,
    /// The selected columns; `None` for `*`. Aliases and expressions are kept so that the
    /// executor can refuse them with Scylla's errors.
    pub(crate) columns: Option<Vec<SelectItem>>,
    /// The base table.
    pub(crate) base: QualifiedName,
    /// The `WHERE` relations.
    pub(crate) where_clause: Vec<Relation>,
    /// Each relation of `where_clause` as CQL text (`v IS NOT NULL`, `ck = 1`), for
    /// `system_schema.views.where_clause`.
    pub(crate) where_text: Vec<String>,
    /// The view's primary key.
    pub(crate) primary_key: PrimaryKey,
    /// The `WITH` clause.
    pub(crate) options: TableOptions,
}

/// `ALTER MATERIALIZED VIEW [ks.]v WITH ...`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AlterView {
    /// The view name.
    pub(crate) name: QualifiedName,
    /// The new properties.
    pub(crate) properties: Vec<Property>,
}

/// `TRUNCATE [TABLE] [ks.]t`
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Truncate {
    /// The table name.
    pub(crate) table: QualifiedName,
}

/// `CREATE TYPE [IF NOT EXISTS] [ks.]name (field type, ...)`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CreateType {
    /// The type name.
    pub(crate) name: QualifiedName,
    /// `IF NOT EXISTS`
    pub(crate) if_not_exists: bool,
    /// The fields, in the written order.
    pub(crate) fields: Vec<(String, TypeExpr)>,
}

/// `ALTER TYPE [ks.]name ...`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AlterType {
    /// The type name.
    pub(crate) name: QualifiedName,
    /// What is changed.
    pub(crate) action: AlterTypeAction,
}

/// What an `ALTER TYPE` changes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AlterTypeAction {
    /// `ADD field type`
    Add {
        /// The new field.
        field: String,
        /// Its type.
        ty: TypeExpr,
    },
    /// `RENAME f1 TO f2 [AND ...]` as (old, new) pairs.
    Rename(Vec<(String, String)>),
    /// `ALTER field TYPE type`
    AlterFieldType {
        /// The field.
        field: String,
        /// The new type.
        ty: TypeExpr,
    },
}

/// `DROP TYPE [IF EXISTS] [ks.]name`
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DropType {
    /// The type name.
    pub(crate) name: QualifiedName,
    /// `IF EXISTS`
    pub(crate) if_exists: bool,
}

/// One target of `CREATE INDEX ... ON t (<target>, ...)` (Scylla's `indexIdent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IndexTargetExpr {
    /// `c`, or `keys(c)` / `values(c)` / `entries(c)` / `full(c)` (the function lower-case).
    Column {
        /// `keys`, `values`, `entries` or `full`; `None` for a bare column.
        function: Option<String>,
        /// The column.
        column: String,
    },
    /// `(a, b)`: the partition key of a local index.
    Columns(Vec<String>),
}

/// `CREATE [CUSTOM] INDEX [IF NOT EXISTS] [name] ON [ks.]t (targets) [USING 'class']
/// [WITH properties]`
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CreateIndex {
    /// The index name, if given.
    pub(crate) name: Option<String>,
    /// The indexed table.
    pub(crate) table: QualifiedName,
    /// `IF NOT EXISTS`
    pub(crate) if_not_exists: bool,
    /// `CUSTOM`
    pub(crate) custom: bool,
    /// The targets, in order.
    pub(crate) targets: Vec<IndexTargetExpr>,
    /// `USING 'class'`
    pub(crate) using: Option<String>,
    /// `WITH ...`
    pub(crate) properties: Vec<Property>,
}

/// `DROP INDEX [IF EXISTS] [ks.]name`
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DropIndex {
    /// The index name.
    pub(crate) name: QualifiedName,
    /// `IF EXISTS`
    pub(crate) if_exists: bool,
}

// ---------------------------------------------------------------------------------------
// DESCRIBE
// ---------------------------------------------------------------------------------------

/// `(DESCRIBE | DESC) <what> [WITH INTERNALS [AND PASSWORDS]]`
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Describe {
    /// What is described.
    pub(crate) target: DescribeTarget,
    /// `WITH INTERNALS`
    pub(crate) with_internals: bool,
    /// `WITH INTERNALS AND PASSWORDS` (allowed with `DESC SCHEMA` only).
    pub(crate) with_passwords: bool,
}

/// What a `DESCRIBE` statement names, in the forms of Scylla's grammar (`describeStatement`
/// in `cql3/Cql.g`). Names follow the usual rules (unquoted ones lower-cased) except in
/// [`DescribeTarget::Generic`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DescribeTarget {
    /// `DESC CLUSTER`
    Cluster,
    /// `DESC [FULL] SCHEMA`
    Schema {
        /// `FULL`: system keyspaces too.
        full: bool,
    },
    /// `DESC KEYSPACES`
    Keyspaces,
    /// `DESC [ONLY] KEYSPACE [ks]` (the current keyspace when none is named).
    Keyspace {
        /// The keyspace named, if any.
        name: Option<String>,
        /// `ONLY`: the keyspace's own statement, without its elements.
        only: bool,
    },
    /// `DESC TABLES`
    Tables,
    /// `DESC TABLE | COLUMNFAMILY [ks.]t`
    Table(QualifiedName),
    /// `DESC INDEX [ks.]i`
    Index(QualifiedName),
    /// `DESC MATERIALIZED VIEW [ks.]v`
    MaterializedView(QualifiedName),
    /// `DESC TYPES`
    Types,
    /// `DESC TYPE [ks.]t`
    Type(QualifiedName),
    /// `DESC FUNCTIONS`
    Functions,
    /// `DESC FUNCTION [ks.]f`
    Function(QualifiedName),
    /// `DESC AGGREGATES`
    Aggregates,
    /// `DESC AGGREGATE [ks.]a`
    Aggregate(QualifiedName),
    /// `DESC [ks.]name`: a keyspace, table, view, index, type, function or aggregate.
    /// Scylla's grammar takes an unquoted word here exactly as written (not lower-cased), and
    /// so does this variant.
    Generic(QualifiedName),
}

// ---------------------------------------------------------------------------------------
// Bind-marker collection
// ---------------------------------------------------------------------------------------

impl Select {
    /// Appends the statement's markers to `out`.
    fn collect_markers<'a>(&'a self, out: &mut Vec<&'a BindMarker>) {
        if let Selection::Items(items) = &self.selection {
            for item in items {
                collect_selector(&item.selector, out);
            }
        }
        collect_relations(&self.where_clause, out);
        for t in [&self.per_partition_limit, &self.limit, &self.timeout]
            .into_iter()
            .flatten()
        {
            collect_term(t, out);
        }
    }
}

impl Insert {
    /// Appends the statement's markers to `out`.
    fn collect_markers<'a>(&'a self, out: &mut Vec<&'a BindMarker>) {
        match &self.values {
            InsertValues::Columns(pairs) => {
                for (_, t) in pairs {
                    collect_term(t, out);
                }
            }
            InsertValues::Json { json, .. } => collect_term(json, out),
        }
        collect_using(&self.using, out);
    }
}

impl Update {
    /// Appends the statement's markers to `out`.
    fn collect_markers<'a>(&'a self, out: &mut Vec<&'a BindMarker>) {
        collect_using(&self.using, out);
        for a in &self.assignments {
            match a {
                Assignment::Set { value, .. }
                | Assignment::Add { value, .. }
                | Assignment::Prepend { value, .. }
                | Assignment::Remove { value, .. }
                | Assignment::SetField { value, .. } => collect_term(value, out),
                Assignment::SetElement { key, value, .. } => {
                    collect_term(key, out);
                    collect_term(value, out);
                }
            }
        }
        collect_relations(&self.where_clause, out);
        collect_conditional(self.condition.as_ref(), out);
    }
}

impl Delete {
    /// Appends the statement's markers to `out`.
    fn collect_markers<'a>(&'a self, out: &mut Vec<&'a BindMarker>) {
        for target in &self.columns {
            collect_target(target, out);
        }
        collect_using(&self.using, out);
        collect_relations(&self.where_clause, out);
        collect_conditional(self.condition.as_ref(), out);
    }
}

/// Appends the markers of a `USING` clause to `out`.
fn collect_using<'a>(using: &'a Using, out: &mut Vec<&'a BindMarker>) {
    for t in [&using.ttl, &using.timestamp, &using.timeout]
        .into_iter()
        .flatten()
    {
        collect_term(t, out);
    }
}

/// Appends the markers of a term to `out`.
fn collect_term<'a>(term: &'a Term, out: &mut Vec<&'a BindMarker>) {
    match term {
        Term::Literal(_) | Term::EmptyCollection => {}
        Term::Marker(m) => out.push(m),
        Term::List(items) | Term::Set(items) | Term::Tuple(items) => {
            for t in items {
                collect_term(t, out);
            }
        }
        Term::Map(entries) => {
            for (k, v) in entries {
                collect_term(k, out);
                collect_term(v, out);
            }
        }
        Term::Udt(fields) => {
            for (_, t) in fields {
                collect_term(t, out);
            }
        }
        Term::FunctionCall { args, .. } => {
            for t in args {
                collect_term(t, out);
            }
        }
        Term::Cast { term, .. } => collect_term(term, out),
    }
}

/// Appends the markers of a selector to `out`.
fn collect_selector<'a>(selector: &'a Selector, out: &mut Vec<&'a BindMarker>) {
    match selector {
        Selector::Column(_) | Selector::CountAll | Selector::WriteTime(_) | Selector::Ttl(_) => {}
        Selector::Function { args, .. } => {
            for a in args {
                collect_selector(a, out);
            }
        }
        Selector::Cast { selector, .. } | Selector::Field { selector, .. } => {
            collect_selector(selector, out)
        }
        Selector::Element { selector, key } => {
            collect_selector(selector, out);
            collect_term(key, out);
        }
    }
}

/// Appends the markers of `IN` values to `out`.
fn collect_in<'a>(values: &'a InValues, out: &mut Vec<&'a BindMarker>) {
    match values {
        InValues::List(items) => {
            for t in items {
                collect_term(t, out);
            }
        }
        InValues::Marker(m) => out.push(m),
    }
}

/// Appends the markers of `WHERE` relations to `out`.
fn collect_relations<'a>(relations: &'a [Relation], out: &mut Vec<&'a BindMarker>) {
    for r in relations {
        match r {
            Relation::Compare { value, .. }
            | Relation::Contains { value, .. }
            | Relation::MultiCompare { value, .. }
            | Relation::Token { value, .. } => collect_term(value, out),
            Relation::Like { pattern, .. } => collect_term(pattern, out),
            Relation::In { values, .. } | Relation::MultiIn { values, .. } => {
                collect_in(values, out)
            }
            Relation::Element { key, value, .. } => {
                collect_term(key, out);
                collect_term(value, out);
            }
            Relation::IsNotNull { .. } => {}
        }
    }
}

/// Appends the markers of a column target to `out`.
fn collect_target<'a>(target: &'a ColumnTarget, out: &mut Vec<&'a BindMarker>) {
    if let ColumnTarget::Element { key, .. } = target {
        collect_term(key, out);
    }
}

/// Appends the markers of an `IF` clause to `out`.
fn collect_conditional<'a>(cond: Option<&'a Conditional>, out: &mut Vec<&'a BindMarker>) {
    let Some(Conditional::Conditions(conditions)) = cond else {
        return;
    };
    for c in conditions {
        match c {
            Condition::Compare { target, value, .. }
            | Condition::Contains { target, value, .. } => {
                collect_target(target, out);
                collect_term(value, out);
            }
            Condition::In { target, values } => {
                collect_target(target, out);
                collect_in(values, out);
            }
            Condition::Like { target, pattern } => {
                collect_target(target, out);
                collect_term(pattern, out);
            }
        }
    }
}
