//! `--demo`: the product working in one command, without a ScyllaDB installation.
//!
//! Starts an embedded 3-node cluster (`scylla-emulator`), creates `demo.orders` with
//! CDC (pre- and post-images) and columns of every flavour (a static column, a list, a set, a
//! map, a non-frozen UDT), runs a writer that cycles through every kind of change a few times
//! a second ([`demo_statements`]), and prints the log as it arrives until Ctrl-C or
//! `--demo-seconds`.

use std::sync::Arc;
use std::time::Duration;

use scylla::client::session::Session;
use scylla_emulator::EmbeddedCluster;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::args::Format;
use crate::{Output, ReaderSettings, start_readers};
use scylla_cdc::cli::{CliError, Shutdown, error_chain, supervise};

/// The demo keyspace.
pub const KEYSPACE: &str = "demo";
/// The demo table.
pub const TABLE: &str = "orders";

/// The statements that create the demo schema.
pub fn schema_statements() -> Vec<String> {
    vec![
        format!(
            "CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = \
             {{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}}"
        ),
        format!("CREATE TYPE IF NOT EXISTS {KEYSPACE}.address (street text, city text, zip int)"),
        format!(
            "CREATE TABLE IF NOT EXISTS {KEYSPACE}.{TABLE} (customer int, order_id int, \
             customer_name text static, status text, amount bigint, items list<text>, \
             tags set<text>, quantities map<text, int>, shipping address, \
             PRIMARY KEY (customer, order_id)) \
             WITH cdc = {{'enabled': true, 'preimage': true, 'postimage': true}}"
        ),
    ]
}

/// Number of steps in one cycle of the writer.
pub const CYCLE: u64 = 15;

/// The statements of step `step` of the writer. Each cycle of [`CYCLE`] steps works on a new
/// customer (partition) and makes every kind of change: inserts (one with a TTL, a batch of
/// three), updates of regular and static columns, list append and overwrite, set addition
/// and removal, a map element, a UDT field, a column delete, a row delete, a range delete and
/// a partition delete.
pub fn demo_statements(step: u64) -> Vec<String> {
    let c = step / CYCLE;
    let t = format!("{KEYSPACE}.{TABLE}");
    let row = |o: u32| format!("WHERE customer = {c} AND order_id = {o}");
    let s = match step % CYCLE {
        0 => format!(
            "INSERT INTO {t} (customer, order_id, customer_name, status, amount, items, tags, \
             quantities, shipping) VALUES ({c}, 1, 'Customer {c}', 'new', 100, ['book'], \
             {{'new'}}, {{'book': 1}}, {{street: 'Main St {c}', city: 'Oslo', zip: 150}})"
        ),
        1 => format!(
            "INSERT INTO {t} (customer, order_id, status, amount) VALUES ({c}, 2, 'new', 20) \
             USING TTL 600"
        ),
        2 => format!("UPDATE {t} SET status = 'paid', amount = 120 {}", row(1)),
        3 => format!("UPDATE {t} SET items = items + ['pen'] {}", row(1)),
        4 => format!("UPDATE {t} SET tags = tags + {{'paid'}} {}", row(1)),
        5 => format!("UPDATE {t} SET tags = tags - {{'new'}} {}", row(1)),
        6 => format!("UPDATE {t} SET quantities['pen'] = 2 {}", row(1)),
        7 => format!("UPDATE {t} SET shipping.city = 'Bergen' {}", row(1)),
        8 => format!("UPDATE {t} SET customer_name = 'Customer {c} (gold)' WHERE customer = {c}"),
        9 => format!("DELETE amount FROM {t} {}", row(1)),
        10 => format!("UPDATE {t} SET items = ['gift card'] {}", row(1)),
        11 => format!(
            "BEGIN UNLOGGED BATCH \
             INSERT INTO {t} (customer, order_id, status) VALUES ({c}, 3, 'new'); \
             INSERT INTO {t} (customer, order_id, status) VALUES ({c}, 4, 'new'); \
             INSERT INTO {t} (customer, order_id, status) VALUES ({c}, 5, 'new'); \
             APPLY BATCH"
        ),
        12 => format!("DELETE FROM {t} {}", row(2)),
        13 => format!("DELETE FROM {t} WHERE customer = {c} AND order_id >= 3 AND order_id < 5"),
        _ => format!("DELETE FROM {t} WHERE customer = {c}"),
    };
    vec![s]
}

/// Writes [`demo_statements`] every `period` until `stop` changes.
async fn writer(session: Arc<Session>, period: Duration, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(period);
    let mut step = 0u64;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        for statement in demo_statements(step) {
            if let Err(e) = session.query_unpaged(statement, ()).await {
                warn!(error = %e, step, "the demo writer's statement failed");
            }
        }
        step += 1;
    }
}

/// Runs the demo, printing in `format` to `out`, for `seconds` or until `shutdown`.
pub async fn run(
    seconds: Option<Duration>,
    format: Format,
    out: Output,
    shutdown: Shutdown,
) -> Result<(), CliError> {
    let fail = |what: &str, e: &(dyn std::error::Error + 'static)| {
        CliError::runtime(format!("demo: {what}: {}", error_chain(e)))
    };
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .start()
        .await
        .map_err(|e| fail("cannot start the embedded cluster", &e))?;
    let session = cluster
        .session()
        .await
        .map_err(|e| fail("cannot connect to the embedded cluster", &e))?;
    for statement in schema_statements() {
        session
            .query_unpaged(statement.clone(), ())
            .await
            .map_err(|e| fail(&format!("`{statement}` failed"), &e))?;
    }
    info!(
        "demo: embedded 3-node cluster at {}; printing the CDC log of {KEYSPACE}.{TABLE} while a \
         writer changes it{} (Ctrl-C to stop)",
        cluster.contact_point(),
        seconds.map_or(String::new(), |s| format!(" for {} s", s.as_secs_f64())),
    );
    let settings = ReaderSettings {
        start: chrono::Utc::now(),
        end: None,
        window_size: Duration::from_secs(1),
        safety_interval: Duration::from_millis(500),
        sleep_interval: Duration::from_millis(200),
        // Each change on screen within about 0.3 s of its write.
        early_reads: Some(
            scylla_cdc::EarlyReads::default().poll_interval(Duration::from_millis(200)),
        ),
        max_idle_latency: None,
        give_up_after: None,
        checkpoint_interval: Duration::from_secs(10),
        max_rows_per_second: None,
        on_error: scylla_cdc::ConsumerErrorPolicy::default(),
        group: None,
    };
    let readers = start_readers(
        &session,
        KEYSPACE,
        &[TABLE.to_owned()],
        &settings,
        None,
        format,
        &out,
    )
    .await?;
    scylla_cdc::cli::health::reading(
        &session,
        &readers,
        scylla_cdc::cli::health::stall_bound(
            settings.sleep_interval,
            settings.safety_interval,
            None,
        ),
    );
    let (stop_writer, stop_rx) = watch::channel(false);
    let writer = tokio::spawn(writer(session.clone(), Duration::from_millis(250), stop_rx));

    // The demo stops on the program's shutdown or after `seconds`, whichever comes first.
    let (trigger, inner) = Shutdown::new();
    let mut outer = shutdown;
    let relay = tokio::spawn(async move {
        let timer = async {
            match seconds {
                Some(s) => tokio::time::sleep(s).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = outer.requested() => {}
            _ = timer => {}
        }
        trigger.trigger();
        outer.forced().await;
        trigger.trigger();
    });
    let result = supervise(readers, inner).await;
    relay.abort();
    let _ = stop_writer.send(true);
    let _ = writer.await;
    drop(session);
    cluster.shutdown().await;
    match result {
        Err(_) if out.is_closed() => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_makes_every_kind_of_change() {
        let cycle: Vec<String> = (CYCLE..2 * CYCLE).flat_map(demo_statements).collect();
        for needle in [
            "INSERT INTO demo.orders",
            "USING TTL",
            "BEGIN UNLOGGED BATCH",
            "items = items + [",
            "tags = tags + {",
            "tags = tags - {",
            "quantities['pen'] =",
            "shipping.city =",
            "SET customer_name =",
            "DELETE amount FROM",
            "items = ['gift card']",
            "AND order_id = 2",
            "order_id >= 3 AND order_id < 5",
        ] {
            assert!(
                cycle.iter().any(|s| s.contains(needle)),
                "no statement has {needle:?}"
            );
        }
        assert!(
            cycle.last().unwrap().ends_with("WHERE customer = 1"),
            "the cycle ends with a partition delete of its customer"
        );
        // The next cycle works on the next customer.
        assert!(demo_statements(2 * CYCLE)[0].contains("VALUES (2, 1,"));
    }

    #[test]
    fn schema_has_cdc_and_every_column_flavour() {
        let ddl = schema_statements().join("\n");
        for needle in [
            "static",
            "list<text>",
            "set<text>",
            "map<text, int>",
            "shipping address",
            "'preimage': true",
            "'postimage': true",
        ] {
            assert!(ddl.contains(needle), "{needle}");
        }
    }
}
