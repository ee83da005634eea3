//! Table schemas as the replicator needs them, read from `system_schema`.
//!
//! A [`TableSchema`] lists a table's [`Column`]s in a fixed order — partition key, clustering
//! key (both by position), then static and regular columns by name — each with its
//! [`ColumnKind`], its parsed [`CqlType`], its clustering order and the [`ValueKind`] that
//! decides how a change to it is replayed. It also carries the [`Udt`]s the columns use, so
//! that the schema can be copied to the destination ([`create_statements`]) or compared with
//! the destination's ([`check_compatible`]).

use std::collections::HashMap;
use std::fmt::Write as _;

use scylla::client::session::Session;

/// Quotes a CQL identifier (always, so any stored name is safe).
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A CQL type as `system_schema` writes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CqlType {
    /// A native type, by its lower-case name (`int`, `text`, …; `varchar` is `text`).
    Native(String),
    /// `list<T>`
    List(Box<CqlType>),
    /// `set<T>`
    Set(Box<CqlType>),
    /// `map<K, V>`
    Map(Box<CqlType>, Box<CqlType>),
    /// `tuple<A, B, …>` (always frozen)
    Tuple(Vec<CqlType>),
    /// `vector<T, N>` (always frozen)
    Vector(Box<CqlType>, u32),
    /// A user-defined type of the table's keyspace, by name.
    Udt(String),
    /// `frozen<T>`
    Frozen(Box<CqlType>),
}

/// The native type names `system_schema` writes.
const NATIVE: &[&str] = &[
    "ascii",
    "bigint",
    "blob",
    "boolean",
    "counter",
    "date",
    "decimal",
    "double",
    "duration",
    "float",
    "inet",
    "int",
    "smallint",
    "text",
    "time",
    "timestamp",
    "timeuuid",
    "tinyint",
    "uuid",
    "varint",
];

/// A tokenizer over a type string.
struct TypeLexer<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> TypeLexer<'a> {
    /// Skips whitespace.
    fn skip_ws(&mut self) {
        while let Some(c) = self
            .text
            .get(self.pos..)
            .and_then(|r| r.chars().next())
            .filter(|c| c.is_whitespace())
        {
            self.pos += c.len_utf8();
        }
    }

    /// The next non-blank character.
    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.text.get(self.pos..).and_then(|r| r.chars().next())
    }

    /// Consumes `c` or fails.
    fn expect(&mut self, c: char) -> Result<(), String> {
        match self.peek() {
            Some(x) if x == c => {
                self.pos += c.len_utf8();
                Ok(())
            }
            other => Err(format!(
                "expected `{c}` at position {} of `{}`, found {other:?}",
                self.pos, self.text
            )),
        }
    }

    /// An identifier: a bare word (lower-cased, as CQL does) or a quoted name.
    fn ident(&mut self) -> Result<String, String> {
        self.skip_ws();
        let rest = self.text.get(self.pos..).unwrap_or("");
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut name = String::new();
            let mut chars = quoted.char_indices();
            while let Some((i, c)) = chars.next() {
                if c == '"' {
                    if quoted.get(i + 1..).is_some_and(|r| r.starts_with('"')) {
                        name.push('"');
                        chars.next();
                    } else {
                        self.pos += 1 + i + 1;
                        return Ok(name);
                    }
                } else {
                    name.push(c);
                }
            }
            return Err(format!("unterminated quoted name in `{}`", self.text));
        }
        let len = rest
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
            .map_or(rest.len(), |(i, _)| i);
        if len == 0 {
            return Err(format!(
                "expected a type name at position {} of `{}`",
                self.pos, self.text
            ));
        }
        self.pos += len;
        Ok(rest[..len].to_ascii_lowercase())
    }

    /// A decimal number (the dimension of a vector).
    fn number(&mut self) -> Result<u32, String> {
        self.skip_ws();
        let rest = self.text.get(self.pos..).unwrap_or("");
        let len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n = rest[..len]
            .parse()
            .map_err(|_| format!("expected a number in `{}`", self.text))?;
        self.pos += len;
        Ok(n)
    }

    /// A type, at nesting `depth` (bounded, so hostile input cannot exhaust the stack).
    fn ty(&mut self, depth: usize) -> Result<CqlType, String> {
        if depth > 64 {
            return Err(format!("`{}` is nested too deeply", self.text));
        }
        self.skip_ws();
        let quoted = self
            .text
            .get(self.pos..)
            .is_some_and(|r| r.starts_with('"'));
        let name = self.ident()?;
        if quoted {
            return Ok(CqlType::Udt(name));
        }
        let one = |lx: &mut Self| -> Result<Box<CqlType>, String> {
            lx.expect('<')?;
            let t = lx.ty(depth + 1)?;
            lx.expect('>')?;
            Ok(Box::new(t))
        };
        Ok(match name.as_str() {
            "frozen" => CqlType::Frozen(one(self)?),
            "list" => CqlType::List(one(self)?),
            "set" => CqlType::Set(one(self)?),
            "map" => {
                self.expect('<')?;
                let k = self.ty(depth + 1)?;
                self.expect(',')?;
                let v = self.ty(depth + 1)?;
                self.expect('>')?;
                CqlType::Map(Box::new(k), Box::new(v))
            }
            "tuple" => {
                self.expect('<')?;
                let mut elems = vec![self.ty(depth + 1)?];
                while self.peek() == Some(',') {
                    self.expect(',')?;
                    elems.push(self.ty(depth + 1)?);
                }
                self.expect('>')?;
                CqlType::Tuple(elems)
            }
            "vector" => {
                self.expect('<')?;
                let e = self.ty(depth + 1)?;
                self.expect(',')?;
                let n = self.number()?;
                self.expect('>')?;
                CqlType::Vector(Box::new(e), n)
            }
            "varchar" => CqlType::Native("text".into()),
            n if NATIVE.contains(&n) => CqlType::Native(name),
            _ => {
                // `ks.type` names the keyspace too; the type must be in the table's keyspace.
                if self.peek() == Some('.') {
                    self.expect('.')?;
                    return Ok(CqlType::Udt(self.ident()?));
                }
                CqlType::Udt(name)
            }
        })
    }
}

impl CqlType {
    /// Parses a type as `system_schema.columns.type` writes it, e.g.
    /// `frozen<map<int, frozen<list<text>>>>`, `tuple<int, text>`, `my_udt`, `"MyType"`.
    pub fn parse(text: &str) -> Result<CqlType, String> {
        let mut lx = TypeLexer { text, pos: 0 };
        let t = lx.ty(0)?;
        if lx.peek().is_some() {
            return Err(format!("unexpected text after the type in `{text}`"));
        }
        Ok(t)
    }

    /// The type as CQL text (UDT names quoted, no keyspace).
    pub fn cql(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    /// Writes the type as CQL text.
    fn write(&self, out: &mut String) {
        match self {
            CqlType::Native(n) => out.push_str(n),
            CqlType::List(e) => {
                out.push_str("list<");
                e.write(out);
                out.push('>');
            }
            CqlType::Set(e) => {
                out.push_str("set<");
                e.write(out);
                out.push('>');
            }
            CqlType::Map(k, v) => {
                out.push_str("map<");
                k.write(out);
                out.push_str(", ");
                v.write(out);
                out.push('>');
            }
            CqlType::Tuple(es) => {
                out.push_str("tuple<");
                for (i, e) in es.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    e.write(out);
                }
                out.push('>');
            }
            CqlType::Vector(e, n) => {
                out.push_str("vector<");
                e.write(out);
                let _ = write!(out, ", {n}>");
            }
            CqlType::Udt(name) => out.push_str(&quote(name)),
            CqlType::Frozen(t) => {
                out.push_str("frozen<");
                t.write(out);
                out.push('>');
            }
        }
    }

    /// The type with redundant `frozen<>` around tuples and vectors (always frozen)
    /// removed, so that equal types compare equal however they were written.
    pub fn normalized(&self) -> CqlType {
        match self {
            CqlType::Frozen(inner) => match inner.as_ref() {
                CqlType::Tuple(_) | CqlType::Vector(..) | CqlType::Frozen(_) => inner.normalized(),
                other => CqlType::Frozen(Box::new(other.normalized())),
            },
            CqlType::List(e) => CqlType::List(Box::new(e.normalized())),
            CqlType::Set(e) => CqlType::Set(Box::new(e.normalized())),
            CqlType::Map(k, v) => CqlType::Map(Box::new(k.normalized()), Box::new(v.normalized())),
            CqlType::Tuple(es) => CqlType::Tuple(es.iter().map(CqlType::normalized).collect()),
            CqlType::Vector(e, n) => CqlType::Vector(Box::new(e.normalized()), *n),
            other => other.clone(),
        }
    }

    /// Names of the UDTs this type mentions, in order of appearance.
    pub fn udts(&self, out: &mut Vec<String>) {
        match self {
            CqlType::Native(_) => {}
            CqlType::List(e) | CqlType::Set(e) | CqlType::Frozen(e) | CqlType::Vector(e, _) => {
                e.udts(out)
            }
            CqlType::Map(k, v) => {
                k.udts(out);
                v.udts(out);
            }
            CqlType::Tuple(es) => es.iter().for_each(|e| e.udts(out)),
            CqlType::Udt(n) => {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
        }
    }
}

/// The role of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnKind {
    /// Part of the partition key.
    PartitionKey,
    /// Part of the clustering key.
    Clustering,
    /// A static column.
    Static,
    /// A regular column.
    Regular,
}

/// How changes to a column are replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueKind {
    /// One cell: scalars, frozen collections and UDTs, tuples, vectors, key columns.
    Atomic,
    /// A non-frozen list (elements keyed by timeuuids).
    List,
    /// A non-frozen set.
    Set,
    /// A non-frozen map.
    Map,
    /// A non-frozen UDT with these field names (in field-index order).
    Udt(Vec<String>),
}

/// A column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The name, as stored.
    pub name: String,
    /// The role.
    pub kind: ColumnKind,
    /// The type.
    pub typ: CqlType,
    /// Clustering columns: stored in descending order.
    pub desc: bool,
    /// How changes to it are replayed.
    pub value_kind: ValueKind,
}

/// A user-defined type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Udt {
    /// The type's name.
    pub name: String,
    /// Fields in order: name and type.
    pub fields: Vec<(String, CqlType)>,
}

/// A table's schema (see the module docs for the column order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    /// The keyspace.
    pub keyspace: String,
    /// The table.
    pub table: String,
    /// Every column: partition key, clustering key, then the others by name.
    pub columns: Vec<Column>,
    /// Number of partition-key columns (the first ones).
    pub partition_key_len: usize,
    /// Number of clustering columns (after the partition key).
    pub clustering_len: usize,
    /// The UDTs the columns use, each after the UDTs it uses.
    pub udts: Vec<Udt>,
}

/// One row of `system_schema.columns`: name, kind, position, clustering order, type.
pub type ColumnRow = (String, String, i32, String, String);

/// One row of `system_schema.types`: name, field names, field types.
pub type TypeRow = (String, Vec<String>, Vec<String>);

impl TableSchema {
    /// Builds a schema from the rows of `system_schema.columns` and `system_schema.types`.
    pub fn from_rows(
        keyspace: &str,
        table: &str,
        columns: Vec<ColumnRow>,
        types: Vec<TypeRow>,
    ) -> Result<TableSchema, String> {
        let mut all_udts: HashMap<String, Udt> = HashMap::new();
        for (name, names, types) in types {
            if names.len() != types.len() {
                return Err(format!(
                    "type {name} has {} field names and {} field types",
                    names.len(),
                    types.len()
                ));
            }
            let fields = names
                .into_iter()
                .zip(types.iter().map(|t| CqlType::parse(t)))
                .map(|(n, t)| t.map(|t| (n, t)))
                .collect::<Result<Vec<_>, _>>()?;
            all_udts.insert(name.clone(), Udt { name, fields });
        }
        let mut pk = Vec::new();
        let mut ck = Vec::new();
        let mut rest = Vec::new();
        for (name, kind, position, order, typ) in columns {
            let typ = CqlType::parse(&typ).map_err(|e| format!("column {name}: {e}"))?;
            let kind = match kind.as_str() {
                "partition_key" => ColumnKind::PartitionKey,
                "clustering" => ColumnKind::Clustering,
                "static" => ColumnKind::Static,
                "regular" => ColumnKind::Regular,
                other => return Err(format!("column {name} has an unknown kind `{other}`")),
            };
            let value_kind = match (&kind, &typ) {
                (ColumnKind::PartitionKey | ColumnKind::Clustering, _) => ValueKind::Atomic,
                (_, CqlType::List(_)) => ValueKind::List,
                (_, CqlType::Set(_)) => ValueKind::Set,
                (_, CqlType::Map(..)) => ValueKind::Map,
                (_, CqlType::Udt(u)) => ValueKind::Udt(
                    all_udts
                        .get(u)
                        .ok_or_else(|| format!("column {name} uses the unknown type {u}"))?
                        .fields
                        .iter()
                        .map(|(f, _)| f.clone())
                        .collect(),
                ),
                _ => ValueKind::Atomic,
            };
            let column = Column {
                name,
                kind,
                typ,
                desc: order.eq_ignore_ascii_case("desc"),
                value_kind,
            };
            match kind {
                ColumnKind::PartitionKey => pk.push((position, column)),
                ColumnKind::Clustering => ck.push((position, column)),
                _ => rest.push(column),
            }
        }
        if pk.is_empty() {
            return Err(format!("{keyspace}.{table} has no partition key"));
        }
        pk.sort_by_key(|(p, _)| *p);
        ck.sort_by_key(|(p, _)| *p);
        rest.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        let partition_key_len = pk.len();
        let clustering_len = ck.len();
        let columns: Vec<Column> = pk
            .into_iter()
            .chain(ck)
            .map(|(_, c)| c)
            .chain(rest)
            .collect();
        let mut udts = Vec::new();
        let mut names = Vec::new();
        for c in &columns {
            c.typ.udts(&mut names);
        }
        for n in names {
            add_udt(&n, &all_udts, &mut udts, 0)?;
        }
        Ok(TableSchema {
            keyspace: keyspace.to_owned(),
            table: table.to_owned(),
            columns,
            partition_key_len,
            clustering_len,
            udts,
        })
    }

    /// The partition-key and clustering columns.
    pub fn key_columns(&self) -> &[Column] {
        self.columns
            .get(..self.partition_key_len + self.clustering_len)
            .unwrap_or(&[])
    }

    /// A column by name.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The UDT of this name.
    pub fn udt(&self, name: &str) -> Option<&Udt> {
        self.udts.iter().find(|u| u.name == name)
    }
}

/// Adds UDT `name` to `out` after the UDTs its fields use.
fn add_udt(
    name: &str,
    all: &HashMap<String, Udt>,
    out: &mut Vec<Udt>,
    depth: usize,
) -> Result<(), String> {
    if out.iter().any(|u| u.name == name) {
        return Ok(());
    }
    if depth > 32 {
        return Err(format!("type {name} is nested too deeply"));
    }
    let udt = all
        .get(name)
        .ok_or_else(|| format!("unknown type {name}"))?;
    let mut inner = Vec::new();
    for (_, t) in &udt.fields {
        t.udts(&mut inner);
    }
    for n in inner {
        add_udt(&n, all, out, depth + 1)?;
    }
    out.push(udt.clone());
    Ok(())
}

/// Why a table cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaError {
    /// The keyspace does not exist.
    NoKeyspace(String),
    /// The table does not exist.
    NoTable(String, String),
    /// A query failed or returned something unusable.
    Other(String),
    /// A query failed transiently (a timeout, `Overloaded`, a broken connection: see
    /// [`scylla_cdc::is_transient`]); start-up retries it.
    Transient(String),
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaError::NoKeyspace(k) => write!(f, "keyspace `{k}` does not exist"),
            SchemaError::NoTable(k, t) => write!(f, "table `{k}.{t}` does not exist"),
            SchemaError::Other(e) | SchemaError::Transient(e) => f.write_str(e),
        }
    }
}

/// Runs a metadata query and decodes every row as `R`.
async fn query_rows<R>(
    session: &Session,
    what: &str,
    text: &str,
    values: impl scylla::serialize::row::SerializeRow,
) -> Result<Vec<R>, SchemaError>
where
    R: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm>,
{
    let fail = |e: &dyn std::fmt::Display| SchemaError::Other(format!("reading {what}: {e}"));
    let result = session
        .query_unpaged(text, values)
        .await
        .map_err(|e| {
            if scylla_cdc::is_transient(&e) {
                SchemaError::Transient(format!("reading {what}: {e}"))
            } else {
                fail(&e)
            }
        })?
        .into_rows_result()
        .map_err(|e| fail(&e))?;
    result
        .rows::<R>()
        .map_err(|e| fail(&e))?
        .collect::<Result<Vec<R>, _>>()
        .map_err(|e| fail(&e))
}

/// Whether a keyspace exists.
pub async fn keyspace_exists(session: &Session, keyspace: &str) -> Result<bool, SchemaError> {
    let rows: Vec<(String,)> = query_rows(
        session,
        "system_schema.keyspaces",
        "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?",
        (keyspace,),
    )
    .await?;
    Ok(!rows.is_empty())
}

/// Whether a table exists.
pub async fn table_exists(
    session: &Session,
    keyspace: &str,
    table: &str,
) -> Result<bool, SchemaError> {
    let rows: Vec<(String,)> = query_rows(
        session,
        "system_schema.tables",
        "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
        (keyspace, table),
    )
    .await?;
    Ok(!rows.is_empty())
}

/// Reads a table's schema.
pub async fn read_table_schema(
    session: &Session,
    keyspace: &str,
    table: &str,
) -> Result<TableSchema, SchemaError> {
    if !keyspace_exists(session, keyspace).await? {
        return Err(SchemaError::NoKeyspace(keyspace.to_owned()));
    }
    if !table_exists(session, keyspace, table).await? {
        return Err(SchemaError::NoTable(keyspace.to_owned(), table.to_owned()));
    }
    let columns: Vec<ColumnRow> = query_rows(
        session,
        "system_schema.columns",
        "SELECT column_name, kind, position, clustering_order, type FROM system_schema.columns \
         WHERE keyspace_name = ? AND table_name = ?",
        (keyspace, table),
    )
    .await?;
    let types: Vec<TypeRow> = query_rows(
        session,
        "system_schema.types",
        "SELECT type_name, field_names, field_types FROM system_schema.types WHERE keyspace_name = ?",
        (keyspace,),
    )
    .await?;
    TableSchema::from_rows(keyspace, table, columns, types)
        .map_err(|e| SchemaError::Other(format!("{keyspace}.{table}: {e}")))
}

/// Whether `session` is connected to ScyllaDB: whether `system_schema.scylla_tables`
/// exists. ScyllaDB defines that table next to Cassandra's schema tables (scylladb
/// `db/schema_tables.cc`, `scylla_tables()`), in every version with CDC; Apache Cassandra
/// and Cassandra-compatible services do not have it. Only ScyllaDB has the
/// `SCYLLA_TIMEUUID_LIST_INDEX` function the replicator writes list elements with.
pub async fn is_scylla(session: &Session) -> Result<bool, SchemaError> {
    table_exists(session, "system_schema", "scylla_tables").await
}

/// The non-frozen list columns of a table (their elements are keyed by timeuuids).
pub fn list_columns(schema: &TableSchema) -> Vec<&str> {
    schema
        .columns
        .iter()
        .filter(|c| c.value_kind == ValueKind::List)
        .map(|c| c.name.as_str())
        .collect()
}

/// Whether a table's `postimage` CDC option is on, from `system_schema.tables.extensions`
/// (false when the table has no `cdc` extension).
pub async fn postimage_enabled(
    session: &Session,
    keyspace: &str,
    table: &str,
) -> Result<bool, SchemaError> {
    /// `system_schema.tables.extensions`: name → serialized extension.
    type Extensions = Option<HashMap<String, Vec<u8>>>;
    let rows: Vec<(Extensions,)> = query_rows(
        session,
        "system_schema.tables",
        "SELECT extensions FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
        (keyspace, table),
    )
    .await?;
    let Some(blob) = rows
        .into_iter()
        .next()
        .and_then(|(e,)| e)
        .and_then(|mut e| e.remove("cdc"))
    else {
        return Ok(false);
    };
    let options = scylla_cdc::decode_cdc_extension(&blob)
        .map_err(|e| SchemaError::Other(format!("{keyspace}.{table}: {e}")))?;
    Ok(options
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("postimage") && v.eq_ignore_ascii_case("true")))
}

/// The statements that create `schema`'s UDTs and table in `keyspace` under `table`
/// (`IF NOT EXISTS`; clustering order kept; other table options are not copied).
pub fn create_statements(schema: &TableSchema, keyspace: &str, table: &str) -> Vec<String> {
    let ks = quote(keyspace);
    let mut out = Vec::new();
    for u in &schema.udts {
        let fields: Vec<String> = u
            .fields
            .iter()
            .map(|(n, t)| format!("{} {}", quote(n), t.cql()))
            .collect();
        out.push(format!(
            "CREATE TYPE IF NOT EXISTS {ks}.{} ({})",
            quote(&u.name),
            fields.join(", ")
        ));
    }
    let mut defs: Vec<String> = schema
        .columns
        .iter()
        .map(|c| {
            let mut d = format!("{} {}", quote(&c.name), c.typ.cql());
            if c.kind == ColumnKind::Static {
                d.push_str(" STATIC");
            }
            d
        })
        .collect();
    let keys = schema.key_columns();
    let (pk, ck) = keys.split_at(schema.partition_key_len.min(keys.len()));
    let pk: Vec<String> = pk.iter().map(|c| quote(&c.name)).collect();
    let mut primary = format!("PRIMARY KEY (({})", pk.join(", "));
    for c in ck {
        primary.push_str(", ");
        primary.push_str(&quote(&c.name));
    }
    primary.push(')');
    defs.push(primary);
    let mut text = format!(
        "CREATE TABLE IF NOT EXISTS {ks}.{} ({})",
        quote(table),
        defs.join(", ")
    );
    if ck.iter().any(|c| c.desc) {
        let order: Vec<String> = ck
            .iter()
            .map(|c| format!("{} {}", quote(&c.name), if c.desc { "DESC" } else { "ASC" }))
            .collect();
        let _ = write!(text, " WITH CLUSTERING ORDER BY ({})", order.join(", "));
    }
    out.push(text);
    out
}

/// Checks that `dest` has the shape of `source`: the same key columns (names, types,
/// positions, clustering order), every other source column with the same role and type, no
/// column the source lacks (unless `allow_extra_columns`, and then only regular ones, which
/// replication leaves null), and every field of the UDTs used with the same type (a UDT may
/// have more fields on the destination: they stay null).
pub fn check_compatible(
    source: &TableSchema,
    dest: &TableSchema,
    allow_extra_columns: bool,
) -> Result<(), String> {
    let name = format!("{}.{}", dest.keyspace, dest.table);
    let same_type = |a: &CqlType, b: &CqlType| a.normalized() == b.normalized();
    let order = |desc: bool| if desc { "DESC" } else { "ASC" };
    if source.partition_key_len != dest.partition_key_len
        || source.clustering_len != dest.clustering_len
    {
        return Err(format!(
            "{name} has a different primary key than {}.{}",
            source.keyspace, source.table
        ));
    }
    for (s, d) in source.key_columns().iter().zip(dest.key_columns()) {
        if s.name != d.name || !same_type(&s.typ, &d.typ) {
            return Err(format!(
                "{name}: key column {} {} does not match {} {}",
                d.name,
                d.typ.cql(),
                s.name,
                s.typ.cql()
            ));
        }
    }
    for (s, d) in source
        .key_columns()
        .iter()
        .zip(dest.key_columns())
        .skip(source.partition_key_len)
    {
        if s.desc != d.desc {
            return Err(format!(
                "{name}: clustering column {} is {} on the destination but {} on the source \
                 (rows would be stored and returned in another order)",
                d.name,
                order(d.desc),
                order(s.desc)
            ));
        }
    }
    for d in &dest.columns {
        if source.column(&d.name).is_some() {
            continue;
        }
        if d.kind != ColumnKind::Regular {
            return Err(format!(
                "{name} has a {} column {} that {}.{} lacks",
                if d.kind == ColumnKind::Static {
                    "static"
                } else {
                    "key"
                },
                d.name,
                source.keyspace,
                source.table
            ));
        }
        if !allow_extra_columns {
            return Err(format!(
                "{name} has a column {} that {}.{} lacks (pass --allow-extra-columns to \
                 accept extra regular columns, which replication leaves null)",
                d.name, source.keyspace, source.table
            ));
        }
    }
    for s in &source.columns {
        let d = dest
            .column(&s.name)
            .ok_or_else(|| format!("{name} has no column {}", s.name))?;
        if d.kind != s.kind || !same_type(&d.typ, &s.typ) {
            return Err(format!(
                "{name}: column {} is {:?} {} on the destination but {:?} {} on the source",
                s.name,
                d.kind,
                d.typ.cql(),
                s.kind,
                s.typ.cql()
            ));
        }
    }
    for u in &source.udts {
        let d = dest
            .udt(&u.name)
            .ok_or_else(|| format!("{}: type {} is missing", dest.keyspace, u.name))?;
        for (f, t) in &u.fields {
            match d.fields.iter().find(|(df, _)| df == f) {
                Some((_, dt)) if same_type(dt, t) => {}
                _ => {
                    return Err(format!(
                        "{}: type {} has no field {f} {}",
                        dest.keyspace,
                        u.name,
                        t.cql()
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A schema problem of `side` ("source" / "destination") as a program error: missing
/// keyspaces and tables are [`exit_code::SCHEMA`](scylla_cdc::cli::exit_code::SCHEMA), failed queries
/// [`exit_code::RUNTIME`](scylla_cdc::cli::exit_code::RUNTIME).
pub(crate) fn schema_error(side: &str, e: SchemaError) -> scylla_cdc::cli::CliError {
    use scylla_cdc::cli::CliError;
    match e {
        SchemaError::Other(m) => CliError::runtime(format!("{side}: {m}")),
        SchemaError::Transient(m) => CliError::transient(format!("{side}: {m}")),
        other => CliError::schema(format!("{side}: {other}")),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn n(name: &str) -> Box<CqlType> {
        Box::new(CqlType::Native(name.into()))
    }

    #[test]
    fn parses_types() {
        assert_eq!(
            CqlType::parse("int").unwrap(),
            CqlType::Native("int".into())
        );
        assert_eq!(
            CqlType::parse(" VARCHAR ").unwrap(),
            CqlType::Native("text".into())
        );
        assert_eq!(
            CqlType::parse("frozen<map<int, frozen<list<text>>>>").unwrap(),
            CqlType::Frozen(Box::new(CqlType::Map(
                n("int"),
                Box::new(CqlType::Frozen(Box::new(CqlType::List(n("text")))))
            )))
        );
        assert_eq!(
            CqlType::parse("tuple<int, text,blob>").unwrap(),
            CqlType::Tuple(vec![*n("int"), *n("text"), *n("blob")])
        );
        assert_eq!(
            CqlType::parse("vector<float, 3>").unwrap(),
            CqlType::Vector(n("float"), 3)
        );
        assert_eq!(CqlType::parse("addr").unwrap(), CqlType::Udt("addr".into()));
        assert_eq!(
            CqlType::parse("frozen<\"My\"\"Type\">").unwrap(),
            CqlType::Frozen(Box::new(CqlType::Udt("My\"Type".into())))
        );
        assert_eq!(
            CqlType::parse("ks.addr").unwrap(),
            CqlType::Udt("addr".into())
        );
        for bad in [
            "",
            "list<int",
            "map<int>",
            "tuple<>",
            "int>",
            "frozen<\"x>",
            "vector<int, x>",
            "list<int> x",
        ] {
            assert!(CqlType::parse(bad).is_err(), "{bad:?}");
        }
        let deep = format!("{}int{}", "list<".repeat(100), ">".repeat(100));
        assert!(CqlType::parse(&deep).is_err());
    }

    #[test]
    fn renders_and_normalizes_types() {
        for text in [
            "int",
            "frozen<map<int, frozen<list<text>>>>",
            "set<frozen<tuple<int, \"A\">>>",
            "vector<float, 3>",
            "list<frozen<\"My\"\"Type\">>",
        ] {
            let t = CqlType::parse(text).unwrap();
            assert_eq!(CqlType::parse(&t.cql()).unwrap(), t, "{text}");
        }
        assert_eq!(
            CqlType::parse("frozen<tuple<int, int>>")
                .unwrap()
                .normalized(),
            CqlType::parse("tuple<int, int>").unwrap()
        );
    }

    /// The rows of `ks.t (pk int, pk2 text, c1 int, c2 timestamp DESC, s int static,
    /// v text, l list<int>, st set<int>, m map<text, int>, u addr, fu frozen<addr>,
    /// tu tuple<int, text>)` with `addr (street text, zip int, geo point)` and
    /// `point (x double, y double)`.
    pub(crate) fn sample_rows() -> (Vec<ColumnRow>, Vec<TypeRow>) {
        let c = |n: &str, k: &str, p: i32, o: &str, t: &str| {
            (n.to_owned(), k.to_owned(), p, o.to_owned(), t.to_owned())
        };
        let columns = vec![
            c("v", "regular", -1, "none", "text"),
            c("pk2", "partition_key", 1, "none", "text"),
            c("c2", "clustering", 1, "desc", "timestamp"),
            c("pk", "partition_key", 0, "none", "int"),
            c("c1", "clustering", 0, "asc", "int"),
            c("s", "static", -1, "none", "int"),
            c("l", "regular", -1, "none", "list<int>"),
            c("st", "regular", -1, "none", "set<int>"),
            c("m", "regular", -1, "none", "map<text, int>"),
            c("u", "regular", -1, "none", "addr"),
            c("fu", "regular", -1, "none", "frozen<addr>"),
            c("tu", "regular", -1, "none", "frozen<tuple<int, text>>"),
        ];
        let types = vec![
            (
                "addr".to_owned(),
                vec!["street".to_owned(), "zip".to_owned(), "geo".to_owned()],
                vec![
                    "text".to_owned(),
                    "int".to_owned(),
                    "frozen<point>".to_owned(),
                ],
            ),
            (
                "point".to_owned(),
                vec!["x".to_owned(), "y".to_owned()],
                vec!["double".to_owned(), "double".to_owned()],
            ),
            (
                "unused".to_owned(),
                vec!["a".to_owned()],
                vec!["int".to_owned()],
            ),
        ];
        (columns, types)
    }

    pub(crate) fn sample() -> TableSchema {
        let (c, t) = sample_rows();
        TableSchema::from_rows("ks", "t", c, t).unwrap()
    }

    #[test]
    fn builds_a_schema_from_system_rows() {
        let s = sample();
        let names: Vec<&str> = s.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "pk", "pk2", "c1", "c2", "fu", "l", "m", "s", "st", "tu", "u", "v"
            ]
        );
        assert_eq!((s.partition_key_len, s.clustering_len), (2, 2));
        assert!(s.column("c2").unwrap().desc && !s.column("c1").unwrap().desc);
        assert_eq!(s.column("s").unwrap().kind, ColumnKind::Static);
        assert_eq!(s.column("l").unwrap().value_kind, ValueKind::List);
        assert_eq!(s.column("st").unwrap().value_kind, ValueKind::Set);
        assert_eq!(s.column("m").unwrap().value_kind, ValueKind::Map);
        assert_eq!(
            s.column("u").unwrap().value_kind,
            ValueKind::Udt(vec!["street".into(), "zip".into(), "geo".into()])
        );
        assert_eq!(s.column("fu").unwrap().value_kind, ValueKind::Atomic);
        assert_eq!(s.column("tu").unwrap().value_kind, ValueKind::Atomic);
        // Dependencies first; unused types left out.
        let udts: Vec<&str> = s.udts.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(udts, vec!["point", "addr"]);
    }

    #[test]
    fn rejects_bad_system_rows() {
        let (mut c, t) = sample_rows();
        c[0].4 = "list<".into();
        assert!(TableSchema::from_rows("ks", "t", c, t).is_err());
        let (c, mut t) = sample_rows();
        t.remove(1);
        assert!(
            TableSchema::from_rows("ks", "t", c, t)
                .unwrap_err()
                .contains("point")
        );
        let (mut c, t) = sample_rows();
        c[0].1 = "weird".into();
        assert!(TableSchema::from_rows("ks", "t", c, t).is_err());
        let (c, t) = sample_rows();
        let no_pk: Vec<ColumnRow> = c.into_iter().filter(|r| r.1 != "partition_key").collect();
        assert!(TableSchema::from_rows("ks", "t", no_pk, t).is_err());
    }

    #[test]
    fn create_statements_copy_the_schema() {
        let stmts = create_statements(&sample(), "dks", "dt");
        assert_eq!(
            stmts,
            vec![
                "CREATE TYPE IF NOT EXISTS \"dks\".\"point\" (\"x\" double, \"y\" double)",
                "CREATE TYPE IF NOT EXISTS \"dks\".\"addr\" (\"street\" text, \"zip\" int, \"geo\" frozen<\"point\">)",
                "CREATE TABLE IF NOT EXISTS \"dks\".\"dt\" (\"pk\" int, \"pk2\" text, \"c1\" int, \
                 \"c2\" timestamp, \"fu\" frozen<\"addr\">, \"l\" list<int>, \"m\" map<text, int>, \
                 \"s\" int STATIC, \"st\" set<int>, \"tu\" frozen<tuple<int, text>>, \"u\" \"addr\", \"v\" text, \
                 PRIMARY KEY ((\"pk\", \"pk2\"), \"c1\", \"c2\")) \
                 WITH CLUSTERING ORDER BY (\"c1\" ASC, \"c2\" DESC)",
            ]
        );
    }

    #[test]
    fn compatibility() {
        let s = sample();
        let mut d = s.clone();
        d.keyspace = "dks".into();
        let check = |dest: &TableSchema| check_compatible(&s, dest, false);
        assert_eq!(check(&d), Ok(()));
        // An extra regular column only with --allow-extra-columns; extra UDT fields are fine.
        let mut extra = d.clone();
        let zz = |kind| Column {
            name: "zz".into(),
            kind,
            typ: CqlType::Native("int".into()),
            desc: false,
            value_kind: ValueKind::Atomic,
        };
        extra.columns.push(zz(ColumnKind::Regular));
        extra.udts[0]
            .fields
            .push(("z".into(), CqlType::Native("int".into())));
        let err = check(&extra).unwrap_err();
        assert!(
            err.contains("column zz") && err.contains("--allow-extra-columns"),
            "{err}"
        );
        assert_eq!(check_compatible(&s, &extra, true), Ok(()));
        let mut extra_static = d.clone();
        extra_static.columns.push(zz(ColumnKind::Static));
        let err = check_compatible(&s, &extra_static, true).unwrap_err();
        assert!(err.contains("static column zz"), "{err}");
        let mut reordered = d.clone();
        let c2 = reordered
            .columns
            .iter_mut()
            .find(|c| c.name == "c2")
            .expect("c2");
        c2.desc = !c2.desc;
        let err = check(&reordered).unwrap_err();
        assert!(err.contains("clustering column c2 is ASC"), "{err}");

        let mut missing = d.clone();
        missing.columns.retain(|c| c.name != "v");
        assert!(check(&missing).unwrap_err().contains("no column v"));
        let mut retyped = d.clone();
        retyped.columns.last_mut().unwrap().typ = CqlType::Native("int".into());
        assert!(check(&retyped).is_err());
        let mut kind = d.clone();
        kind.columns.last_mut().unwrap().kind = ColumnKind::Static;
        assert!(check(&kind).is_err());
        let mut key = d.clone();
        key.clustering_len = 1;
        assert!(check(&key).is_err());
        let mut udt = d.clone();
        udt.udts[1].fields.remove(0);
        assert!(check(&udt).unwrap_err().contains("street"));
    }
}
