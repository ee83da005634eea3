//! Keeps a permanent history of every change to `shop.orders` in `shop.order_history`.

use std::sync::Arc;

use async_trait::async_trait;
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::CqlTimeuuid;
use scylla_cdc::{CDCRow, Consumer, ConsumerFactory, OperationType};

/// Creates the history table: one partition per customer, one row per change, in the order
/// the changes were made.
pub(crate) async fn create_history_table(session: &Session) -> anyhow::Result<()> {
    session
        .query_unpaged(
            "CREATE TABLE IF NOT EXISTS shop.order_history (
                customer text, changed_at timeuuid, seq int,
                id int, operation text, status text, total bigint,
                PRIMARY KEY (customer, changed_at, seq))",
            (),
        )
        .await?;
    Ok(())
}

/// Copies each change of the CDC log into the history table.
pub(crate) struct HistoryWriter {
    session: Arc<Session>,
    insert: PreparedStatement,
}

#[async_trait]
impl Consumer for HistoryWriter {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let operation = match row.operation {
            OperationType::RowInsert => "insert",
            OperationType::RowUpdate => "update",
            OperationType::RowDelete => "delete",
            OperationType::PartitionDelete => "delete all orders",
            OperationType::RowRangeDelInclLeft | OperationType::RowRangeDelExclLeft => {
                "delete orders from"
            }
            OperationType::RowRangeDelInclRight | OperationType::RowRangeDelExclRight => {
                "delete orders to"
            }
            // Pre- and post-images are off for `shop.orders`: nothing to record.
            OperationType::PreImage | OperationType::PostImage => return Ok(()),
            // An operation this program does not know (from a newer Scylla): stop rather than
            // lose it; the reader resumes here once the program handles it.
            other => anyhow::bail!("unexpected CDC operation {other}"),
        };
        let customer: Option<String> = row.get_value_as("customer")?;
        let id: Option<i32> = row.get_value_as("id")?;
        let status: Option<String> = row.get_value_as("status")?;
        let total: Option<i64> = row.get_value_as("total")?;
        self.session
            .execute_unpaged(
                &self.insert,
                (
                    customer,
                    CqlTimeuuid::from(row.time),
                    row.batch_seq_no,
                    id,
                    operation,
                    status,
                    total,
                ),
            )
            .await?;
        Ok(())
    }
}

/// Makes a [`HistoryWriter`] for every stream group, sharing one prepared statement.
pub(crate) struct HistoryWriterFactory {
    session: Arc<Session>,
    insert: PreparedStatement,
}

impl HistoryWriterFactory {
    /// Prepares the insert into `shop.order_history`.
    pub(crate) async fn new(session: Arc<Session>) -> anyhow::Result<Self> {
        let insert = session
            .prepare(
                "INSERT INTO shop.order_history \
                 (customer, changed_at, seq, id, operation, status, total) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .await?;
        Ok(Self { session, insert })
    }
}

#[async_trait]
impl ConsumerFactory for HistoryWriterFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(HistoryWriter {
            session: self.session.clone(),
            insert: self.insert.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use scylla_cdc::{CDCLogReaderBuilder, TableBackedCheckpointSaver};
    use scylla_emulator::EmbeddedCluster;

    use super::*;

    /// The history of `customer`: (id, operation, status, total) of each change, in order.
    async fn history(
        session: &Session,
        customer: &str,
    ) -> anyhow::Result<Vec<(Option<i32>, String, Option<String>, Option<i64>)>> {
        let rows = session
            .query_unpaged(
                "SELECT id, operation, status, total FROM shop.order_history WHERE customer = ?",
                (customer,),
            )
            .await?
            .into_rows_result()?;
        Ok(rows.rows()?.collect::<Result<_, _>>()?)
    }

    /// Reads the log from `start` until every change made so far is written to the history.
    async fn run_reader(session: &Arc<Session>, start: SystemTime) -> anyhow::Result<()> {
        let saver = TableBackedCheckpointSaver::new(
            session.clone(),
            "shop",
            "order_history_checkpoints",
            "shop",
            "orders",
        )
        .await?;
        let (mut reader, handle) = CDCLogReaderBuilder::new()
            .session(session.clone())
            .keyspace("shop")
            .table_name("orders")
            .consumer_factory(Arc::new(HistoryWriterFactory::new(session.clone()).await?))
            .checkpoint_saver(Arc::new(saver))
            .start_timestamp(start)
            .safety_interval(Duration::from_millis(100))
            .sleep_interval(Duration::from_millis(50))
            .build()
            .await?;
        reader.stop_at(SystemTime::now());
        handle.await?;
        Ok(())
    }

    #[tokio::test]
    async fn every_change_is_recorded_once_across_restarts() -> anyhow::Result<()> {
        let cluster = EmbeddedCluster::builder().nodes(3).start().await?;
        let session = cluster.session().await?;
        for statement in [
            "CREATE KEYSPACE shop WITH replication = \
             {'class': 'NetworkTopologyStrategy', 'replication_factor': 3}",
            "CREATE TABLE shop.orders (customer text, id int, status text, total bigint, \
             PRIMARY KEY (customer, id)) WITH cdc = {'enabled': true}",
        ] {
            session.query_unpaged(statement, ()).await?;
        }
        create_history_table(&session).await?;
        let started = SystemTime::now();

        for statement in [
            "INSERT INTO shop.orders (customer, id, status, total) VALUES ('ann', 1, 'new', 1250)",
            "UPDATE shop.orders SET status = 'paid' WHERE customer = 'ann' AND id = 1",
        ] {
            session.query_unpaged(statement, ()).await?;
        }
        run_reader(&session, started).await?;
        let expected_first = vec![
            (
                Some(1),
                "insert".to_string(),
                Some("new".to_string()),
                Some(1250),
            ),
            (
                Some(1),
                "update".to_string(),
                Some("paid".to_string()),
                None,
            ),
        ];
        assert_eq!(history(&session, "ann").await?, expected_first);

        // Changes made while no reader runs are picked up from the checkpoint, and those
        // recorded before are not recorded twice.
        session
            .query_unpaged(
                "DELETE FROM shop.orders WHERE customer = 'ann' AND id = 1",
                (),
            )
            .await?;
        run_reader(&session, SystemTime::now()).await?;
        let mut expected = expected_first;
        expected.push((Some(1), "delete".to_string(), None, None));
        assert_eq!(history(&session, "ann").await?, expected);

        cluster.shutdown().await;
        Ok(())
    }
}
