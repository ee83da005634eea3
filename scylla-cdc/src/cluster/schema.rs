//! What the schema tables say about a table before it is read: that the keyspace, the table
//! and its CDC log table exist ([`check_table`]), the log's TTL ([`read_log_ttl`], from the
//! table's CDC options) and whether the keyspace uses tablets ([`uses_tablets`]).

use std::time::Duration;

use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use tracing::info;

use crate::base::error::CDCError;

/// Fails unless the keyspace, the table and its CDC log table exist.
pub(crate) async fn check_table(
    session: &Session,
    keyspace: &str,
    table: &str,
) -> Result<(), CDCError> {
    let query_err = |what: &str| {
        let what = what.to_owned();
        move |source| CDCError::Query {
            what,
            source: Box::new(source),
        }
    };
    let ks = session
        .query_unpaged(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?",
            (keyspace,),
        )
        .await
        .map_err(query_err("looking up the keyspace"))?;
    if rows_count(ks) == 0 {
        return Err(CDCError::KeyspaceNotFound(keyspace.to_owned()));
    }
    let table_exists = |name: String| async move {
        let r = session
            .query_unpaged(
                "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
                (keyspace, name),
            )
            .await
            .map_err(query_err("looking up the table"))?;
        Ok::<bool, CDCError>(rows_count(r) > 0)
    };
    if !table_exists(table.to_owned()).await? {
        return Err(CDCError::TableNotFound {
            keyspace: keyspace.to_owned(),
            table: table.to_owned(),
        });
    }
    if !table_exists(format!("{table}_scylla_cdc_log")).await? {
        return Err(CDCError::CdcNotEnabled {
            keyspace: keyspace.to_owned(),
            table: table.to_owned(),
        });
    }
    Ok(())
}

/// The table's CDC `ttl` from its `cdc` schema extension: `None` for `ttl: 0` (no expiry) and
/// when the table has no `cdc` extension or no `ttl` in it (nothing is assumed to expire).
pub(crate) async fn read_log_ttl(
    session: &Session,
    keyspace: &str,
    table: &str,
) -> Result<Option<Duration>, CDCError> {
    let Some(options) =
        crate::cluster::cdc_options::read_cdc_extension(session, keyspace, table).await?
    else {
        info!("the table has no cdc schema extension: its log is not assumed to expire");
        return Ok(None);
    };
    crate::cluster::cdc_options::log_ttl(&options).map_err(|detail| CDCError::BadMetadata {
        what: format!("the cdc extension of {keyspace}.{table}"),
        detail,
    })
}

/// Number of rows of a result (0 when it is not rows).
fn rows_count(result: scylla::response::query_result::QueryResult) -> usize {
    result.into_rows_result().map(|r| r.rows_num()).unwrap_or(0)
}

/// Whether the keyspace uses tablets: `initial_tablets` in `system_schema.scylla_keyspaces`
/// is non-null. Servers without that table (older Scylla) use vnodes.
pub(crate) async fn uses_tablets(session: &Session, keyspace: &str) -> Result<bool, CDCError> {
    let result = session
        .query_unpaged(
            "SELECT initial_tablets FROM system_schema.scylla_keyspaces WHERE keyspace_name = ?",
            (keyspace,),
        )
        .await;
    let result = match result {
        Ok(r) => r,
        Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(
            DbError::Invalid | DbError::SyntaxError,
            msg,
        ))) => {
            info!(reason = %msg, "no system_schema.scylla_keyspaces: assuming vnodes");
            return Ok(false);
        }
        Err(source) => {
            return Err(CDCError::Query {
                what: "reading system_schema.scylla_keyspaces".into(),
                source: Box::new(source),
            });
        }
    };
    let bad = |e: String| CDCError::BadMetadata {
        what: "system_schema.scylla_keyspaces".into(),
        detail: e,
    };
    let rows = match result.into_rows_result() {
        Ok(rows) => rows,
        Err(e) => return Err(bad(e.to_string())),
    };
    let row = rows
        .maybe_first_row::<(Option<i32>,)>()
        .map_err(|e| bad(e.to_string()))?;
    Ok(matches!(row, Some((Some(_),))))
}
