//! Terms become values: CQL literals converted for the type that receives them, bound values
//! decoded strictly, and the scalar functions of terms and selectors.
//!
//! Planning turns an AST [`Term`] into an [`Expr`] for a known receiver type (and records
//! the receiver of every bind marker); executing evaluates the [`Expr`] against the request's
//! bound values into a [`Bound`] (a value, null or unset).

use std::sync::Arc;

use num_bigint::BigInt;
use uuid::Uuid;

use crate::cql::{BindMarker, Literal, QualifiedName, Term};
use crate::frame::{BoundValue, CqlError};
use crate::types::value::{self, Value};
use crate::types::{CqlType, timeuuid};

use super::binder::Binder;
use super::literal::{date_to_days, days_to_date, literal_value, parse_decimal};

/// A value as a statement sees it: present, null, or unset (a bound value the client left
/// out on purpose).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bound {
    /// A value.
    Value(Value),
    /// `null`.
    Null,
    /// Unset: the operation that uses it does nothing.
    Unset,
}

impl Bound {
    /// The value, with null and unset as `None`.
    pub(crate) fn into_option(self) -> Option<Value> {
        match self {
            Bound::Value(v) => Some(v),
            Bound::Null | Bound::Unset => None,
        }
    }
}

/// What a request supplies to evaluation: its bound values (in marker order) and the
/// request's point in time for time functions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EvalCtx<'a> {
    /// Bound values in marker order.
    pub(crate) values: &'a [BoundValue],
}

/// A scalar function of terms and selectors.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Func {
    /// `now()`, `currentTimeUUID()`
    Now,
    /// `uuid()`
    Uuid,
    /// `currentTimestamp()`
    CurrentTimestamp,
    /// `currentDate()`
    CurrentDate,
    /// `currentTime()`
    CurrentTime,
    /// `minTimeuuid(timestamp)`
    MinTimeuuid,
    /// `maxTimeuuid(timestamp)`
    MaxTimeuuid,
    /// `toTimestamp(timeuuid | date)`, `dateOf(timeuuid)`
    ToTimestamp,
    /// `toDate(timeuuid | timestamp)`
    ToDate,
    /// `toUnixTimestamp(timeuuid | timestamp | date)`, `unixTimestampOf(timeuuid)`
    ToUnixTimestamp,
    /// `token(pk...)`: the Murmur3 token of the partition-key values.
    Token,
    /// `blobAsX(blob)`
    BlobAs(CqlType),
    /// `xAsBlob(x)`
    AsBlob(CqlType),
    /// `CAST(x AS type)`
    Cast(CqlType),
    /// `toJson(x)` for an argument of this type.
    ToJson(CqlType),
    /// `fromJson(s)` for a receiver of this type, in the statement's keyspace.
    FromJson(CqlType, Arc<str>),
}

impl Func {
    /// The function called `name` (lower case, as the parser gives unquoted names), with its
    /// argument count checked; `None` when no such function exists.
    pub(crate) fn by_name(name: &str) -> Option<Func> {
        let name = name.strip_prefix("system.").unwrap_or(name);
        Some(match name {
            "now" | "currenttimeuuid" => Func::Now,
            "uuid" => Func::Uuid,
            "currenttimestamp" => Func::CurrentTimestamp,
            "currentdate" => Func::CurrentDate,
            "currenttime" => Func::CurrentTime,
            "mintimeuuid" => Func::MinTimeuuid,
            "maxtimeuuid" => Func::MaxTimeuuid,
            "totimestamp" | "dateof" => Func::ToTimestamp,
            "todate" => Func::ToDate,
            "tounixtimestamp" | "unixtimestampof" => Func::ToUnixTimestamp,
            "token" => Func::Token,
            _ => {
                if let Some(t) = name.strip_prefix("blobas") {
                    Func::BlobAs(CqlType::from_native_name(t)?)
                } else if let Some(t) = name.strip_suffix("asblob") {
                    Func::AsBlob(CqlType::from_native_name(t)?)
                } else {
                    return None;
                }
            }
        })
    }

    /// Number of arguments (`None`: any, for `token`).
    fn arity(&self) -> Option<usize> {
        match self {
            Func::Now
            | Func::Uuid
            | Func::CurrentTimestamp
            | Func::CurrentDate
            | Func::CurrentTime => Some(0),
            Func::Token => None,
            _ => Some(1),
        }
    }

    /// The argument type a bind marker gets, for argument `i` (markers cannot resolve
    /// overloads: the first signature is used).
    fn marker_arg_type(&self) -> CqlType {
        match self {
            Func::FromJson(..) => CqlType::Text,
            Func::MinTimeuuid | Func::MaxTimeuuid => CqlType::Timestamp,
            Func::ToTimestamp | Func::ToDate | Func::ToUnixTimestamp => CqlType::Timeuuid,
            Func::BlobAs(_) => CqlType::Blob,
            Func::AsBlob(t) | Func::Cast(t) => t.clone(),
            _ => CqlType::Blob,
        }
    }

    /// The result type given the argument types.
    pub(crate) fn return_type(&self, _args: &[CqlType]) -> CqlType {
        match self {
            Func::Now => CqlType::Timeuuid,
            Func::Uuid => CqlType::Uuid,
            Func::CurrentTimestamp | Func::ToTimestamp => CqlType::Timestamp,
            Func::CurrentDate | Func::ToDate => CqlType::Date,
            Func::CurrentTime => CqlType::Time,
            Func::MinTimeuuid | Func::MaxTimeuuid => CqlType::Timeuuid,
            Func::ToUnixTimestamp | Func::Token => CqlType::Bigint,
            Func::BlobAs(t) | Func::Cast(t) | Func::FromJson(t, _) => t.clone(),
            Func::AsBlob(_) => CqlType::Blob,
            Func::ToJson(_) => CqlType::Text,
        }
    }

    /// Checks the argument types of a call (`args` are the argument types).
    pub(crate) fn check_args(&self, name: &str, args: &[CqlType]) -> Result<(), CqlError> {
        if let Some(n) = self.arity()
            && n != args.len()
        {
            return Err(CqlError::invalid(format!(
                "Invalid number of arguments in call to function {name}: {n} required but {} provided",
                args.len()
            )));
        }
        let ok = match (self, args) {
            (Func::MinTimeuuid | Func::MaxTimeuuid, [a]) => {
                matches!(a, CqlType::Timestamp | CqlType::Bigint)
            }
            // dateOf and unixTimestampOf have only the timeuuid signature.
            (Func::ToTimestamp | Func::ToUnixTimestamp, [a])
                if matches!(
                    name.strip_prefix("system.").unwrap_or(name),
                    "dateof" | "unixtimestampof"
                ) =>
            {
                *a == CqlType::Timeuuid
            }
            (Func::ToTimestamp, [a]) => matches!(a, CqlType::Timeuuid | CqlType::Date),
            // A bigint is value-compatible with a timestamp parameter.
            (Func::ToDate, [a]) => {
                matches!(a, CqlType::Timeuuid | CqlType::Timestamp | CqlType::Bigint)
            }
            (Func::ToUnixTimestamp, [a]) => matches!(
                a,
                CqlType::Timeuuid | CqlType::Timestamp | CqlType::Date | CqlType::Bigint
            ),
            (Func::BlobAs(_), [a]) => *a == CqlType::Blob,
            (Func::AsBlob(t), [a]) => a == t || (*t == CqlType::Text && *a == CqlType::Ascii),
            _ => true,
        };
        if ok {
            Ok(())
        } else {
            Err(CqlError::invalid(format!(
                "Type error: cannot pass a value of type {} to function {name}",
                args.first().map(|t| t.to_string()).unwrap_or_default()
            )))
        }
    }

    /// Whether the function gives a different result at every call.
    fn is_pure(&self) -> bool {
        !matches!(
            self,
            Func::Now | Func::Uuid | Func::CurrentTimestamp | Func::CurrentDate | Func::CurrentTime
        )
    }

    /// Applies the function to argument values (`None` = null).
    pub(crate) fn apply(&self, args: &[Option<Value>]) -> Result<Option<Value>, CqlError> {
        let first = args.first().cloned().flatten();
        Ok(match self {
            Func::Now => Some(Value::Timeuuid(timeuuid::now())),
            Func::Uuid => Some(Value::Uuid(Uuid::new_v4())),
            Func::CurrentTimestamp => Some(Value::Timestamp(timeuuid::now_micros() / 1000)),
            Func::CurrentDate => Some(Value::Date(days_to_date(
                timeuuid::now_micros().div_euclid(86_400_000_000),
            ))),
            Func::CurrentTime => Some(Value::Time(
                timeuuid::now_micros().rem_euclid(86_400_000_000) * 1000,
            )),
            Func::MinTimeuuid | Func::MaxTimeuuid => {
                let ms = match first {
                    Some(Value::Timestamp(ms)) | Some(Value::Bigint(ms)) => ms,
                    _ => return Ok(None),
                };
                Some(Value::Timeuuid(if *self == Func::MinTimeuuid {
                    timeuuid::min_timeuuid(ms)
                } else {
                    timeuuid::max_timeuuid(ms)
                }))
            }
            Func::ToTimestamp => match first {
                Some(Value::Timeuuid(u)) => Some(Value::Timestamp(timeuuid::to_millis(&u))),
                Some(Value::Date(d)) => Some(Value::Timestamp(date_to_days(d) * 86_400_000)),
                Some(v @ Value::Timestamp(_)) => Some(v),
                _ => None,
            },
            Func::ToDate => match first {
                Some(Value::Timeuuid(u)) => Some(Value::Date(days_to_date(
                    timeuuid::to_millis(&u).div_euclid(86_400_000),
                ))),
                Some(Value::Timestamp(ms) | Value::Bigint(ms)) => {
                    Some(Value::Date(days_to_date(ms.div_euclid(86_400_000))))
                }
                Some(v @ Value::Date(_)) => Some(v),
                _ => None,
            },
            Func::ToUnixTimestamp => match first {
                Some(Value::Timeuuid(u)) => Some(Value::Bigint(timeuuid::to_millis(&u))),
                Some(Value::Timestamp(ms) | Value::Bigint(ms)) => Some(Value::Bigint(ms)),
                Some(Value::Date(d)) => Some(Value::Bigint(date_to_days(d) * 86_400_000)),
                _ => None,
            },
            Func::Token => {
                let mut parts = Vec::with_capacity(args.len());
                for a in args {
                    match a {
                        Some(v) => parts.push(v.to_bytes()),
                        None => return Ok(None),
                    }
                }
                let key = crate::cluster::partitioner::serialize_partition_key(
                    parts.iter().map(|b| &b[..]),
                )
                .ok_or_else(|| CqlError::invalid("Partition key component too long"))?;
                Some(Value::Bigint(crate::cluster::partitioner::murmur3_token(
                    &key,
                )))
            }
            Func::BlobAs(t) => match first {
                Some(Value::Blob(b)) => Some(value::decode(t, &b).map_err(|e| {
                    CqlError::invalid(format!("In call to function blobas{t}: {}", e.message()))
                })?),
                _ => None,
            },
            Func::AsBlob(_) => first.map(|v| Value::blob(v.to_bytes())),
            Func::Cast(t) => match first {
                Some(v) => Some(cast_value(v, t)?),
                None => None,
            },
            Func::ToJson(t) => Some(super::json::to_json_call(t, first.as_ref())?),
            Func::FromJson(t, keyspace) => {
                super::json::from_json_call(keyspace, t, first.as_ref())?
            }
        })
    }
}

/// The numeric types CAST converts between (`castas_fcts.cc`; a counter reads as a bigint).
fn is_cast_number(t: &CqlType) -> bool {
    matches!(
        t,
        CqlType::Tinyint
            | CqlType::Smallint
            | CqlType::Int
            | CqlType::Bigint
            | CqlType::Float
            | CqlType::Double
            | CqlType::Varint
            | CqlType::Decimal
            | CqlType::Counter
    )
}

/// Whether ScyllaDB has a `CAST(from AS to)` (`get_castas_fctn` in `castas_fcts.cc`): between
/// the numeric types (a counter only as the source), any number and the time, uuid, boolean
/// and inet types to `text` / `ascii`, `ascii` to `text`, `timestamp` / `timeuuid` to `date`,
/// `date` / `timeuuid` to `timestamp`, and any type to itself. Anything else is refused with
/// `<from> cannot be cast to <to>` (e.g. `blob` to `text`).
pub(crate) fn check_cast(from: &CqlType, to: &CqlType) -> Result<(), CqlError> {
    use CqlType as T;
    let ok = from == to
        || match to {
            T::Tinyint
            | T::Smallint
            | T::Int
            | T::Bigint
            | T::Float
            | T::Double
            | T::Varint
            | T::Decimal => is_cast_number(from),
            T::Text | T::Ascii => {
                is_cast_number(from)
                    || matches!(
                        from,
                        T::Timestamp
                            | T::Date
                            | T::Time
                            | T::Timeuuid
                            | T::Uuid
                            | T::Boolean
                            | T::Inet
                    )
                    || (*to == T::Text && *from == T::Ascii)
            }
            T::Date => matches!(from, T::Timestamp | T::Timeuuid),
            T::Timestamp => matches!(from, T::Date | T::Timeuuid),
            _ => false,
        };
    if ok {
        Ok(())
    } else {
        Err(CqlError::invalid(format!("{from} cannot be cast to {to}")))
    }
}

/// The low 64 bits of an integral number (C++'s conversion of a wider integer).
fn low_bits(n: &BigInt) -> i64 {
    let bytes = n.to_signed_bytes_le();
    let fill = if n.sign() == num_bigint::Sign::Minus {
        0xff
    } else {
        0
    };
    let mut buf = [fill; 8];
    for (b, x) in buf.iter_mut().zip(bytes) {
        *b = x;
    }
    i64::from_le_bytes(buf)
}

/// `CAST(v AS t)` as ScyllaDB computes it (`castas_fcts.cc`); the planner has already refused
/// the pairs [`check_cast`] refuses. Integers convert with C++ truncation of the high bits,
/// floats and decimals towards zero, integers become decimals of scale 1 (`42` is `42.0`),
/// floats become the decimal of their shortest text, and text is [`super::scylla_text::to_text`].
fn cast_value(v: Value, t: &CqlType) -> Result<Value, CqlError> {
    use CqlType as T;
    // An integral view: integers exactly, floats and decimals truncated towards zero.
    let integral = |v: &Value| -> Option<BigInt> {
        match v {
            Value::Varint(x) => Some(x.to_bigint()),
            Value::Decimal(d) => {
                let unscaled = d.unscaled.to_bigint();
                let ten = BigInt::from(10);
                Some(if d.scale >= 0 {
                    unscaled / ten.pow(d.scale.unsigned_abs())
                } else {
                    unscaled * ten.pow(d.scale.unsigned_abs())
                })
            }
            Value::Float(f) => Some(BigInt::from(*f as i64)),
            Value::Double(f) => Some(BigInt::from(*f as i64)),
            other => other.as_i64().map(BigInt::from),
        }
    };
    let as_f64 = |v: &Value| -> Option<f64> {
        match v {
            Value::Float(f) => Some(f64::from(*f)),
            Value::Double(d) => Some(*d),
            Value::Varint(x) => x.to_bigint().to_string().parse().ok(),
            Value::Decimal(_) => super::scylla_text::to_text(v).parse().ok(),
            other => other.as_i64().map(|i| i as f64),
        }
    };
    let as_f32 = |v: &Value| -> Option<f32> {
        match v {
            Value::Float(f) => Some(*f),
            Value::Double(d) => Some(*d as f32),
            Value::Varint(x) => x.to_bigint().to_string().parse().ok(),
            Value::Decimal(_) => super::scylla_text::to_text(v).parse().ok(),
            other => other.as_i64().map(|i| i as f32),
        }
    };
    let fail = || CqlError::invalid(format!("Cannot cast value {} to type {t}", v.cql_literal()));
    Ok(match t {
        T::Text | T::Ascii => Value::text(&super::scylla_text::to_text(&v)),
        T::Tinyint => Value::Tinyint(low_bits(&integral(&v).ok_or_else(fail)?) as i8),
        T::Smallint => Value::Smallint(low_bits(&integral(&v).ok_or_else(fail)?) as i16),
        T::Int => Value::Int(low_bits(&integral(&v).ok_or_else(fail)?) as i32),
        T::Bigint | T::Counter => Value::Bigint(low_bits(&integral(&v).ok_or_else(fail)?)),
        T::Float => Value::Float(as_f32(&v).ok_or_else(fail)?),
        T::Double => Value::Double(as_f64(&v).ok_or_else(fail)?),
        T::Varint => Value::varint(&integral(&v).ok_or_else(fail)?),
        T::Decimal => match &v {
            Value::Decimal(_) => v,
            Value::Float(_) | Value::Double(_) => {
                let single = matches!(v, Value::Float(_));
                let text = super::scylla_text::shortest_float(as_f64(&v).ok_or_else(fail)?, single);
                parse_decimal(&text).ok_or_else(|| {
                    CqlError::invalid(format!("Cannot cast value {text} to type decimal"))
                })?
            }
            _ => Value::decimal(&(integral(&v).ok_or_else(fail)? * 10), 1),
        },
        T::Timestamp => Func::ToTimestamp
            .apply(&[Some(v.clone())])?
            .ok_or_else(fail)?,
        T::Date => Func::ToDate.apply(&[Some(v.clone())])?.ok_or_else(fail)?,
        _ if v.fits(t) => v,
        _ => return Err(fail()),
    })
}

/// A planned value expression: a constant, a bind marker with its type, a collection literal
/// with non-constant parts, or a function call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    /// A constant (`None` is null).
    Const(Option<Value>),
    /// A bind marker decoded as `typ`; `name` is its receiver's name for error messages.
    Marker {
        /// Marker index.
        index: usize,
        /// Type of the bound value.
        typ: CqlType,
        /// Receiver name.
        name: Arc<str>,
    },
    /// A list literal with non-constant elements.
    List(Vec<Expr>),
    /// A set literal with non-constant elements.
    Set(Vec<Expr>),
    /// A map literal with non-constant entries.
    Map(Vec<(Expr, Expr)>),
    /// A tuple literal with non-constant components.
    Tuple(Vec<Expr>),
    /// A UDT literal (fields by index) with non-constant fields.
    Udt(Vec<Option<Expr>>),
    /// A function call.
    Call(Func, Vec<Expr>),
    /// A timeuuid result used as a `uuid` (`now()` into a uuid column).
    TimeuuidAsUuid(Box<Expr>),
}

impl Expr {
    /// Whether the expression is a constant.
    fn as_const(&self) -> Option<&Option<Value>> {
        match self {
            Expr::Const(v) => Some(v),
            _ => None,
        }
    }

    /// The marker index when the expression is exactly one marker.
    pub(crate) fn marker_index(&self) -> Option<usize> {
        match self {
            Expr::Marker { index, .. } => Some(*index),
            _ => None,
        }
    }

    /// Evaluates the expression.
    pub(crate) fn eval(&self, ctx: &EvalCtx<'_>) -> Result<Bound, CqlError> {
        match self {
            Expr::Const(Some(v)) => Ok(Bound::Value(v.clone())),
            Expr::Const(None) => Ok(Bound::Null),
            Expr::Marker { index, typ, name } => match ctx.values.get(*index) {
                None => Err(CqlError::invalid(format!(
                    "No value for bind marker {index}"
                ))),
                Some(BoundValue::Null) => Ok(Bound::Null),
                Some(BoundValue::Unset) => Ok(Bound::Unset),
                Some(BoundValue::Value(bytes)) => {
                    value::decode(typ, bytes).map(Bound::Value).map_err(|e| {
                        CqlError::invalid(format!(
                            "Exception while binding column {name}: {}",
                            e.message()
                        ))
                    })
                }
            },
            Expr::List(items) => Ok(Bound::Value(Value::list(eval_elements(items, ctx)?))),
            Expr::Set(items) => Ok(Bound::Value(Value::set(eval_elements(items, ctx)?))),
            Expr::Map(entries) => {
                let mut out = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let k = element(k.eval(ctx)?)?;
                    let v = element(v.eval(ctx)?)?;
                    out.push((k, v));
                }
                Ok(Bound::Value(Value::map(out)))
            }
            Expr::Tuple(items) => {
                let mut out = Vec::with_capacity(items.len());
                for e in items {
                    out.push(match e.eval(ctx)? {
                        Bound::Value(v) => Some(v),
                        Bound::Null => None,
                        Bound::Unset => return Err(unset_inside()),
                    });
                }
                Ok(Bound::Value(Value::tuple(out)))
            }
            Expr::Udt(fields) => {
                let mut out = Vec::with_capacity(fields.len());
                for e in fields {
                    out.push(match e {
                        None => None,
                        Some(e) => match e.eval(ctx)? {
                            Bound::Value(v) => Some(v),
                            Bound::Null => None,
                            Bound::Unset => return Err(unset_inside()),
                        },
                    });
                }
                Ok(Bound::Value(Value::udt(out)))
            }
            Expr::Call(f, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    match a.eval(ctx)? {
                        Bound::Unset => return Ok(Bound::Unset),
                        b => vals.push(b.into_option()),
                    }
                }
                Ok(match f.apply(&vals)? {
                    Some(v) => Bound::Value(v),
                    None => Bound::Null,
                })
            }
            Expr::TimeuuidAsUuid(e) => Ok(match e.eval(ctx)? {
                Bound::Value(Value::Timeuuid(u)) => Bound::Value(Value::Uuid(u)),
                other => other,
            }),
        }
    }
}

/// The error of an unset value inside a collection, tuple or UDT.
fn unset_inside() -> CqlError {
    CqlError::invalid("Invalid unset value inside a collection, tuple or user type")
}

/// A collection element, which can be neither null nor unset.
fn element(b: Bound) -> Result<Value, CqlError> {
    match b {
        Bound::Value(v) => Ok(v),
        Bound::Null => Err(CqlError::invalid(
            "null is not supported inside collections",
        )),
        Bound::Unset => Err(unset_inside()),
    }
}

/// Evaluates collection elements.
fn eval_elements(items: &[Expr], ctx: &EvalCtx<'_>) -> Result<Vec<Value>, CqlError> {
    let mut out = Vec::with_capacity(items.len());
    for e in items {
        out.push(element(e.eval(ctx)?)?);
    }
    Ok(out)
}

/// Plans a term for a receiver named `name` of type `typ`, recording the receivers of its
/// bind markers in `binder`.
pub(crate) fn plan_term(
    term: &Term,
    typ: &CqlType,
    name: &str,
    binder: &mut Binder,
) -> Result<Expr, CqlError> {
    match term {
        Term::Literal(lit) => literal_value(lit, typ, name).map(Expr::Const),
        Term::Marker(m) => Ok(marker(m, typ, name, binder)),
        Term::List(items) => {
            let elem = match typ {
                CqlType::List { elem, .. } => elem,
                _ => return Err(invalid_literal("list", name, typ)),
            };
            let exprs = plan_elements(items, elem, name, binder)?;
            collapse(exprs, Expr::List, Value::list)
        }
        Term::Set(items) => {
            let elem = match typ {
                CqlType::Set { elem, .. } => elem,
                _ => return Err(invalid_literal("set", name, typ)),
            };
            let exprs = plan_elements(items, elem, name, binder)?;
            collapse(exprs, Expr::Set, Value::set)
        }
        Term::Map(entries) => plan_map(entries, typ, name, binder),
        Term::EmptyCollection => match typ {
            CqlType::Set { .. } => Ok(Expr::Const(Some(Value::set(Vec::new())))),
            CqlType::Map { .. } => Ok(Expr::Const(Some(Value::map(Vec::new())))),
            CqlType::List { .. } => Ok(Expr::Const(Some(Value::list(Vec::new())))),
            _ => Err(invalid_literal("set or map", name, typ)),
        },
        Term::Udt(fields) => plan_udt(fields, typ, name, binder),
        Term::Tuple(items) => plan_tuple(items, typ, name, binder),
        Term::FunctionCall { name: fname, args } => plan_call(fname, args, typ, name, binder),
        Term::Cast { ty, term } => {
            let hinted = resolve_hint(ty, binder)?;
            let inner = plan_term(term, &hinted, name, binder)?;
            coerce(inner, &hinted, typ, name, &format!("({ty})"))
        }
    }
}

/// The elements of a list or set literal for the receiver `name`, each of type `elem`.
fn plan_elements(
    items: &[Term],
    elem: &CqlType,
    name: &str,
    binder: &mut Binder,
) -> Result<Vec<Expr>, CqlError> {
    // Elements are received by `value(<receiver>)` (Scylla's `list_value_spec_of`,
    // `cql3/expr/prepare_expr.cc`); so are set elements (`set_value_spec_of`), and
    // map entries by `key(<receiver>)` / `value(<receiver>)`.
    let element_name = format!("value({name})");
    items
        .iter()
        .map(|t| plan_term(t, elem, &element_name, binder))
        .collect()
}

/// A map literal: a constant when every key and value is one, else an expression of its
/// entries (none of which may be null).
fn plan_map(
    entries: &[(Term, Term)],
    typ: &CqlType,
    name: &str,
    binder: &mut Binder,
) -> Result<Expr, CqlError> {
    let (kt, vt) = match typ {
        CqlType::Map { key, value, .. } => (key, value),
        _ => return Err(invalid_literal("map", name, typ)),
    };
    let (key_name, value_name) = (format!("key({name})"), format!("value({name})"));
    let mut exprs = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        exprs.push((
            plan_term(k, kt, &key_name, binder)?,
            plan_term(v, vt, &value_name, binder)?,
        ));
    }
    if exprs
        .iter()
        .all(|(k, v)| matches!(k, Expr::Const(Some(_))) && matches!(v, Expr::Const(Some(_))))
    {
        let vals = exprs
            .into_iter()
            .filter_map(|(k, v)| match (k, v) {
                (Expr::Const(Some(k)), Expr::Const(Some(v))) => Some((k, v)),
                _ => None,
            })
            .collect();
        return Ok(Expr::Const(Some(Value::map(vals))));
    }
    if exprs
        .iter()
        .any(|(k, v)| matches!(k, Expr::Const(None)) || matches!(v, Expr::Const(None)))
    {
        return Err(CqlError::invalid(
            "null is not supported inside collections",
        ));
    }
    Ok(Expr::Map(exprs))
}

/// A user-type literal (`{f: v, ...}`): its fields in the type's order, the missing ones
/// null.
fn plan_udt(
    fields: &[(String, Term)],
    typ: &CqlType,
    name: &str,
    binder: &mut Binder,
) -> Result<Expr, CqlError> {
    let def = match typ {
        CqlType::Udt { def, .. } => def,
        _ => return Err(invalid_literal("user type", name, typ)),
    };
    let mut out: Vec<Option<Expr>> = vec![None; def.fields.len()];
    for (fname, t) in fields {
        let i = def
            .fields
            .iter()
            .position(|(n, _)| n == fname)
            .ok_or_else(|| {
                CqlError::invalid(format!(
                    "Unknown field '{fname}' in value of user defined type {}",
                    def.name
                ))
            })?;
        let ftype = &def.fields[i].1;
        out[i] = Some(plan_term(t, ftype, &format!("{name}.{fname}"), binder)?);
    }
    Ok(udt_expr(out))
}

/// A user-type value of planned fields (`None` = null): a constant when every field is one.
fn udt_expr(fields: Vec<Option<Expr>>) -> Expr {
    if fields
        .iter()
        .all(|e| e.as_ref().is_none_or(|e| e.as_const().is_some()))
    {
        let vals = fields
            .into_iter()
            .map(|e| e.and_then(|e| e.as_const().cloned().flatten()))
            .collect();
        return Expr::Const(Some(Value::udt(vals)));
    }
    Expr::Udt(fields)
}

/// A tuple literal, for a tuple or (positionally) a user type.
fn plan_tuple(
    items: &[Term],
    typ: &CqlType,
    name: &str,
    binder: &mut Binder,
) -> Result<Expr, CqlError> {
    // A tuple literal is assignable to a tuple and, positionally, to a user type: in
    // Scylla `user_type_impl` derives from `tuple_type_impl`, and the tuple literal's
    // check only needs the receiver to be a tuple type (`cql3/expr/prepare_expr.cc`,
    // `tuple_constructor_validate_assignable_to`, `component_spec_of`). Component
    // `i` is named `{receiver}[i]`; missing trailing UDT fields are null.
    let (types, udt_fields) = match typ {
        CqlType::Tuple(ts) => (ts.clone(), None),
        CqlType::Udt { def, .. } => (
            def.fields
                .iter()
                .map(|(_, t)| t.clone())
                .collect::<Vec<_>>(),
            Some(def.fields.len()),
        ),
        _ => {
            return Err(CqlError::invalid(format!(
                "Invalid tuple type literal for {name} of type {typ}"
            )));
        }
    };
    if items.len() > types.len() {
        return Err(CqlError::invalid(format!(
            "Invalid tuple literal for {name}: too many elements. Type {typ} expects {} but got {}",
            types.len(),
            items.len()
        )));
    }
    let exprs = items
        .iter()
        .zip(&types)
        .enumerate()
        .map(|(i, (t, ty))| plan_term(t, ty, &format!("{name}[{i}]"), binder))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(n) = udt_fields {
        let mut fields: Vec<Option<Expr>> = exprs.into_iter().map(Some).collect();
        fields.resize(n, None);
        return Ok(udt_expr(fields));
    }
    if exprs.iter().all(|e| e.as_const().is_some()) {
        let vals = exprs
            .into_iter()
            .map(|e| e.as_const().cloned().flatten())
            .collect();
        return Ok(Expr::Const(Some(Value::tuple(vals))));
    }
    Ok(Expr::Tuple(exprs))
}

/// A function call: `toJson` / `fromJson`, or a native function, evaluated now when it is
/// pure and its arguments are constants; its result coerced to the receiver's type.
fn plan_call(
    fname: &QualifiedName,
    args: &[Term],
    typ: &CqlType,
    name: &str,
    binder: &mut Binder,
) -> Result<Expr, CqlError> {
    let full = fname.name.as_str();
    if let Some(json_call) = plan_json_call(full, args, typ, name, binder)? {
        return Ok(json_call);
    }
    let f = Func::by_name(full)
        .ok_or_else(|| CqlError::invalid(format!("Unknown function '{fname}'")))?;
    if f == Func::Token {
        return Err(CqlError::invalid(
            "The token function can only be used in a WHERE clause on the partition key",
        ));
    }
    let arg_types = resolve_signature(full, &f, args, binder)?;
    let mut exprs = Vec::with_capacity(args.len());
    for (i, (a, at)) in args.iter().zip(&arg_types).enumerate() {
        let aname = format!("arg{i}(system.{full})");
        exprs.push(plan_term(a, at, &aname, binder)?);
    }
    f.check_args(full, &arg_types)?;
    let ret = f.return_type(&arg_types);
    let call = if f.is_pure() && exprs.iter().all(|e| e.as_const().is_some()) {
        let vals: Vec<Option<Value>> = exprs
            .iter()
            .map(|e| e.as_const().cloned().flatten())
            .collect();
        Expr::Const(f.apply(&vals)?)
    } else {
        Expr::Call(f, exprs)
    };
    coerce(call, &ret, typ, name, &format!("{fname}()"))
}

/// `toJson(x)` / `fromJson(s)` in a term received by `name` of type `typ` (`None` for any
/// other function). `fromJson` takes its type from the receiver; `toJson` needs an argument
/// of a known type (a cast or a function call), never a bare literal or marker
/// (`functions::get`, cql3/functions/functions.cc).
fn plan_json_call(
    full: &str,
    args: &[Term],
    typ: &CqlType,
    name: &str,
    binder: &mut Binder,
) -> Result<Option<Expr>, CqlError> {
    let short = full.strip_prefix("system.").unwrap_or(full);
    let f = match short {
        "tojson" => {
            if args.len() != 1 {
                return Err(CqlError::invalid("toJson() accepts 1 argument only"));
            }
            let arg_type = match &args[0] {
                Term::Cast { ty, .. } => resolve_hint(ty, binder)?,
                Term::FunctionCall { name: inner, .. } => match Func::by_name(&inner.name) {
                    Some(f) if !matches!(f, Func::Token) => f.return_type(&[]),
                    _ => {
                        return Err(CqlError::invalid(
                            "toJson() is only valid when its argument type is known",
                        ));
                    }
                },
                _ => {
                    return Err(CqlError::invalid(
                        "toJson() is only valid when its argument type is known",
                    ));
                }
            };
            Func::ToJson(arg_type)
        }
        "fromjson" => {
            if args.len() != 1 {
                return Err(CqlError::invalid("fromJson() accepts 1 argument only"));
            }
            Func::FromJson(typ.clone(), Arc::from(binder.keyspace.as_str()))
        }
        _ => return Ok(None),
    };
    let arg_type = match &f {
        Func::ToJson(t) => t.clone(),
        _ => CqlType::Text,
    };
    let arg = plan_term(
        &args[0],
        &arg_type,
        &format!("arg0(system.{short})"),
        binder,
    )?;
    let ret = f.return_type(&[]);
    let call = match arg.as_const() {
        // Pure with a constant argument: evaluated now, so a bad constant fails the
        // statement's preparation (prepare_function_call).
        Some(v) => Expr::Const(f.apply(std::slice::from_ref(v))?),
        None => Expr::Call(f, vec![arg]),
    };
    coerce(call, &ret, typ, name, &format!("system.{short}()")).map(Some)
}

/// Resolves the type of a cast in a term.
fn resolve_hint(ty: &crate::cql::TypeExpr, binder: &Binder) -> Result<CqlType, CqlError> {
    super::ddl::resolve_type(&binder.schema, &binder.keyspace, ty)
}

/// The argument types of a call of `f` (named `name`) with `args`, chosen as ScyllaDB's
/// `functions::get` chooses an overload: the time conversions have one signature per
/// argument type (`toTimestamp(timeuuid | date)`, `toDate(timeuuid | timestamp)`,
/// `toUnixTimestamp(timeuuid | timestamp | date)`); an exact type match wins, otherwise the
/// one signature the argument is assignable to, and a bind marker (assignable to all of them)
/// or a constant that fits several is an ambiguous call. Other functions have one signature.
fn resolve_signature(
    name: &str,
    f: &Func,
    args: &[Term],
    binder: &Binder,
) -> Result<Vec<CqlType>, CqlError> {
    use CqlType as T;
    let bare = name.strip_prefix("system.").unwrap_or(name);
    let candidates: Vec<CqlType> = match bare {
        "totimestamp" => vec![T::Timeuuid, T::Date],
        "todate" => vec![T::Timeuuid, T::Timestamp],
        "tounixtimestamp" => vec![T::Timeuuid, T::Timestamp, T::Date],
        "dateof" | "unixtimestampof" => vec![T::Timeuuid],
        _ => return Ok(vec![f.marker_arg_type(); args.len()]),
    };
    let [arg] = args else {
        return Err(CqlError::invalid(format!(
            "Invalid number of arguments in call to function system.{bare}: 1 required but {} provided",
            args.len()
        )));
    };
    let signatures = || {
        candidates
            .iter()
            .map(|t| format!("system.{bare}({t})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let exact = term_exact_type(arg, binder)?;
    if let Some(t) = exact.as_ref().filter(|t| candidates.contains(t)) {
        return Ok(vec![t.clone()]);
    }
    let compatible: Vec<&CqlType> = candidates
        .iter()
        .filter(|c| match (&exact, arg) {
            (Some(t), _) => **c == T::Timestamp && *t == T::Bigint,
            (None, Term::Literal(lit)) => literal_assignable(lit, c),
            (None, _) => true,
        })
        .collect();
    match compatible.as_slice() {
        [one] => Ok(vec![(*one).clone()]),
        [] => Err(CqlError::invalid(format!(
            "Invalid call to function system.{bare}, none of its type signatures match (known type signatures: {})",
            signatures()
        ))),
        _ => Err(CqlError::invalid(format!(
            "Ambiguous call to function system.{bare} (can be matched by following signatures: {}): use type casts to disambiguate",
            compatible
                .iter()
                .map(|t| format!("system.{bare}({t})"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The type of a term that has one by itself: a function call's result, a type-hinted term.
fn term_exact_type(t: &Term, binder: &Binder) -> Result<Option<CqlType>, CqlError> {
    Ok(match t {
        Term::FunctionCall { name, .. } => Func::by_name(&name.name).map(|f| f.return_type(&[])),
        Term::Cast { ty, .. } => Some(resolve_hint(ty, binder)?),
        _ => None,
    })
}

/// Whether an untyped constant may be assigned to a native type
/// (`untyped_constant_test_assignment`).
fn literal_assignable(lit: &Literal, t: &CqlType) -> bool {
    use CqlType as T;
    match lit {
        Literal::String(_) => matches!(
            t,
            T::Ascii | T::Text | T::Inet | T::Timestamp | T::Date | T::Time
        ),
        Literal::Integer(_) => matches!(
            t,
            T::Bigint
                | T::Counter
                | T::Decimal
                | T::Double
                | T::Float
                | T::Int
                | T::Smallint
                | T::Timestamp
                | T::Date
                | T::Tinyint
                | T::Varint
        ),
        Literal::Uuid(_) => matches!(t, T::Uuid | T::Timeuuid),
        Literal::Float(_) => matches!(t, T::Decimal | T::Double | T::Float),
        Literal::Boolean(_) => *t == T::Boolean,
        Literal::Blob(_) => *t == T::Blob,
        Literal::Duration(_) => *t == T::Duration,
        Literal::Null => true,
    }
}

/// Makes an expression of type `from` usable where `to` is expected.
fn coerce(e: Expr, from: &CqlType, to: &CqlType, name: &str, what: &str) -> Result<Expr, CqlError> {
    if from == to || (*from == CqlType::Ascii && *to == CqlType::Text) {
        return Ok(e);
    }
    if *from == CqlType::Timeuuid && *to == CqlType::Uuid {
        return Ok(match e {
            Expr::Const(Some(Value::Timeuuid(u))) => Expr::Const(Some(Value::Uuid(u))),
            other => Expr::TimeuuidAsUuid(Box::new(other)),
        });
    }
    Err(CqlError::invalid(format!(
        "Type error: {what} of type {from} cannot be passed to {name} of type {to}"
    )))
}

/// Folds all-constant elements into one constant collection.
fn collapse(
    exprs: Vec<Expr>,
    wrap: impl FnOnce(Vec<Expr>) -> Expr,
    build: impl FnOnce(Vec<Value>) -> Value,
) -> Result<Expr, CqlError> {
    if exprs.iter().any(|e| matches!(e, Expr::Const(None))) {
        return Err(CqlError::invalid(
            "null is not supported inside collections",
        ));
    }
    if exprs.iter().all(|e| matches!(e, Expr::Const(Some(_)))) {
        let vals = exprs
            .into_iter()
            .filter_map(|e| match e {
                Expr::Const(v) => v,
                _ => None,
            })
            .collect();
        return Ok(Expr::Const(Some(build(vals))));
    }
    Ok(wrap(exprs))
}

/// A marker expression, recording its receiver.
pub(crate) fn marker(m: &BindMarker, typ: &CqlType, name: &str, binder: &mut Binder) -> Expr {
    binder.bind(m, name, typ);
    Expr::Marker {
        index: m.index,
        typ: typ.clone(),
        name: Arc::from(m.name.as_deref().unwrap_or(name)),
    }
}

/// The error of a collection / tuple / UDT literal given to a receiver of another type.
fn invalid_literal(kind: &str, name: &str, typ: &CqlType) -> CqlError {
    CqlError::invalid(format!("Invalid {kind} literal for {name} of type {typ}"))
}

/// Evaluates a planned expression that must be a single non-null, set value (keys, limits).
pub(crate) fn eval_required(e: &Expr, ctx: &EvalCtx<'_>, what: &str) -> Result<Value, CqlError> {
    match e.eval(ctx)? {
        Bound::Value(v) => Ok(v),
        Bound::Null => Err(CqlError::invalid(format!("Invalid null value for {what}"))),
        Bound::Unset => Err(CqlError::invalid(format!("Invalid unset value for {what}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_compute_time_values() {
        let t = Func::MinTimeuuid
            .apply(&[Some(Value::Timestamp(1000))])
            .unwrap();
        assert_eq!(t, Some(Value::Timeuuid(timeuuid::min_timeuuid(1000))));
        let ts = Func::ToTimestamp
            .apply(&[Some(Value::Timeuuid(timeuuid::min_timeuuid(1234)))])
            .unwrap();
        assert_eq!(ts, Some(Value::Timestamp(1234)));
        assert_eq!(
            Func::ToUnixTimestamp
                .apply(&[Some(Value::Date(days_to_date(1)))])
                .unwrap(),
            Some(Value::Bigint(86_400_000))
        );
        assert_eq!(Func::by_name("blobasint"), Some(Func::BlobAs(CqlType::Int)));
        assert_eq!(
            Func::BlobAs(CqlType::Int)
                .apply(&[Some(Value::blob(vec![0, 0, 0, 7]))])
                .unwrap(),
            Some(Value::Int(7))
        );
    }
}
