//! Where a stream group's rows go: a user's row consumer, or the change assembler in front
//! of a user's change consumer ([`Sink`]), made per stream group from the factory the user
//! gave the builder ([`ConsumerKind`]).
//!
//! The reader knows which kind of factory it was given, so the stream reader gets the
//! assembler typed: it calls it directly, without a boxed future or a downcast per row.

use std::sync::Arc;

use crate::change::ChangeConsumerFactory;
use crate::change::assembler::ChangeAssembler;
use crate::consumer::{Consumer, ConsumerFactory};

/// What the user's factory makes.
#[derive(Clone)]
pub(crate) enum ConsumerKind {
    /// Row consumers.
    Rows(Arc<dyn ConsumerFactory>),
    /// Change consumers, each behind a change assembler.
    Changes(Arc<dyn ChangeConsumerFactory>),
}

impl ConsumerKind {
    /// Where the rows of a new stream group of `table` go: a consumer of the factory, or an
    /// assembler in front of a change consumer of the factory.
    pub(crate) async fn new_sink(&self, table: &str) -> Sink {
        match self {
            Self::Rows(factory) => Sink::Rows(factory.new_consumer_for_table(table).await),
            Self::Changes(factory) => Sink::Changes(Box::new(ChangeAssembler::new(
                factory.new_consumer_for_table(table).await,
                Arc::from(table),
            ))),
        }
    }
}

/// Where a stream group's rows go.
pub(crate) enum Sink {
    /// A user's row consumer.
    Rows(Box<dyn Consumer>),
    /// The change assembler in front of a user's change consumer, kept typed: it is called
    /// directly, without a boxed future per row.
    Changes(Box<ChangeAssembler>),
}

impl Sink {
    /// The window the stream reader read is over: a change still pending is complete, and is
    /// delivered.
    pub(crate) async fn end_of_window(&mut self) -> anyhow::Result<()> {
        match self {
            Self::Rows(_) => Ok(()),
            Self::Changes(assembler) => assembler.end_of_window().await,
        }
    }

    /// Lets the consumer finish the work it accepted ([`Consumer::flush`],
    /// [`crate::change::ChangeConsumer::flush`]).
    pub(crate) async fn flush(&mut self) -> anyhow::Result<()> {
        match self {
            Self::Rows(consumer) => consumer.flush().await,
            Self::Changes(assembler) => assembler.flush().await,
        }
    }
}
