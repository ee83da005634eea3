//! One client connection: the CQL v4 handshake (with compression negotiation),
//! authentication, event registration, fault injection and request dispatch.
//!
//! The reader half decodes every complete frame in its buffer and handles it inline (the
//! executor is synchronous and never waits), appending the response to an output buffer;
//! after each read the buffer goes to the writer task, which coalesces queued buffers into
//! few socket writes. Requests a fault rule delays are handled on their own task, so later
//! requests on the same connection are answered first, each on its own stream id. A
//! connection registered for events gets a forwarder task that copies matching cluster
//! events into the same writer queue.
//!
//! Compression follows Scylla (`transport/server.cc`): once a STARTUP names `lz4` or
//! `snappy`, compressed request bodies are decompressed, and every response to a request is
//! compressed, starting with that STARTUP's READY; the errors that end a connection (on
//! stream 0, or an oversized body) and pushed events are written uncompressed, as Scylla
//! writes them without the connection's codec.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;
use tracing::{debug, trace};

use crate::cluster::faults::{FaultError, FaultOpcode, FaultReaction, RequestInfo};
use crate::exec::ConnState;
use crate::frame::{
    self, Consistency, CqlError, ErrorKind, Extensions, Request, RequestFrame, Response, WriteType,
};
use crate::server::core::ClusterCore;

/// The authenticator class name announced in AUTHENTICATE.
const PASSWORD_AUTHENTICATOR: &str = "org.apache.cassandra.auth.PasswordAuthenticator";

/// Read buffer growth step.
const READ_CHUNK: usize = 64 * 1024;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before STARTUP: only OPTIONS and STARTUP are allowed.
    Handshake,
    /// AUTHENTICATE was sent; waiting for AUTH_RESPONSE.
    Authenticating,
    /// Ready for requests.
    Ready,
}

/// A connection being served.
pub(crate) struct Connection {
    cluster: Arc<ClusterCore>,
    node: usize,
    shard: u32,
    phase: Phase,
    state: ConnState,
    out_tx: mpsc::UnboundedSender<Bytes>,
    events_registered: bool,
    /// Dropped when the connection ends, which stops its event forwarder.
    _closed: watch::Sender<()>,
    closed_rx: watch::Receiver<()>,
}

/// What the reader should do after handling a frame.
enum Next {
    Continue,
    Close,
}

/// Serves one accepted connection until the client closes it, a fatal protocol error
/// occurs, a fault drops it, or the node shuts down.
pub(crate) async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    cluster: Arc<ClusterCore>,
    node: usize,
    shard: u32,
    shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let (reader, writer) = stream.into_split();
    serve_halves(reader, writer, peer, cluster, node, shard, shutdown).await;
}

/// Serves one connection accepted on a TLS port: the TLS handshake first (refusals end this
/// connection only: a client that does not speak TLS, one that rejects the server's
/// certificate, one whose certificate mutual TLS does not accept, one that stalls), then CQL
/// as on the plaintext ports.
pub(crate) async fn serve_tls(
    acceptor: TlsAcceptor,
    stream: TcpStream,
    peer: SocketAddr,
    cluster: Arc<ClusterCore>,
    node: usize,
    shard: u32,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let handshake = tokio::time::timeout(
        crate::server::tls::HANDSHAKE_TIMEOUT,
        acceptor.accept(stream),
    );
    let stream = tokio::select! {
        done = handshake => match done {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                debug!(node, shard, %peer, error = %e, "TLS handshake refused");
                return;
            }
            Err(_) => {
                debug!(node, shard, %peer, "TLS handshake timed out");
                return;
            }
        },
        _ = shutdown.changed() => return,
    };
    let (reader, writer) = tokio::io::split(stream);
    serve_halves(reader, writer, peer, cluster, node, shard, shutdown).await;
}

/// Serves a connection's CQL, over a plaintext or a TLS stream's halves.
async fn serve_halves<R, W>(
    mut reader: R,
    mut writer: W,
    peer: SocketAddr,
    cluster: Arc<ClusterCore>,
    node: usize,
    shard: u32,
    mut shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Bytes>();

    let writer_task = tokio::spawn(async move {
        let mut batch = BytesMut::new();
        while let Some(first) = out_rx.recv().await {
            batch.clear();
            batch.extend_from_slice(&first);
            while let Ok(more) = out_rx.try_recv() {
                batch.extend_from_slice(&more);
                if batch.len() > 4 * 1024 * 1024 {
                    break;
                }
            }
            if writer.write_all(&batch).await.is_err() {
                break;
            }
        }
        let _ = writer.shutdown().await;
    });

    let (closed_tx, closed_rx) = watch::channel(());
    let mut conn = Connection {
        _closed: closed_tx,
        closed_rx,
        node,
        shard,
        phase: Phase::Handshake,
        state: ConnState::new(node, shard),
        out_tx,
        events_registered: false,
        cluster,
    };
    debug!(node, shard, %peer, "connection opened");
    conn.cluster.stats.connection(node, shard, true);

    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut out = BytesMut::new();
    let mut first_frame = true;
    'serve: loop {
        if buf.capacity() - buf.len() < 1024 {
            buf.reserve(READ_CHUNK);
        }
        tokio::select! {
            read = reader.read_buf(&mut buf) => {
                match read {
                    Ok(0) | Err(_) => break 'serve,
                    Ok(_) => {}
                }
            }
            _ = shutdown.changed() => break 'serve,
        }
        loop {
            // Responses written from here on are compressed once the frame is handled (with
            // the codec in force after it: Scylla compresses the READY to the STARTUP that
            // negotiated compression); errors that end the connection are not.
            let mark = out.len();
            match frame::try_decode_frame_of(&mut buf, first_frame, conn.state.ext.compression) {
                Ok(None) => break,
                Ok(Some(f)) => {
                    first_frame = false;
                    let next = conn.handle_frame(f, &mut out);
                    conn.compress_since(&mut out, mark);
                    if let Next::Close = next {
                        conn.flush(&mut out);
                        break 'serve;
                    }
                }
                Err(e) => {
                    first_frame = false;
                    e.write_response(&mut out);
                    if !e.can_continue() {
                        conn.flush(&mut out);
                        break 'serve;
                    }
                    conn.compress_since(&mut out, mark);
                }
            }
        }
        conn.flush(&mut out);
    }
    debug!(node, shard, %peer, "connection closed");
    conn.cluster.stats.connection(node, shard, false);
    if let Some(codec) = conn.state.ext.compression {
        conn.cluster
            .stats
            .compressed_connection(node, shard, codec.name(), false);
    }
    drop(conn);
    // The writer ends once every sender (this connection, its event forwarder, delayed
    // requests) is gone, after flushing what they queued. When the node shuts down, do not
    // wait for a client that may not be reading.
    let shutting_down = *shutdown.borrow() || shutdown.has_changed().is_err();
    if shutting_down {
        writer_task.abort();
    } else {
        let _ = writer_task.await;
    }
}

impl Connection {
    fn flush(&self, out: &mut BytesMut) {
        if !out.is_empty() {
            let _ = self.out_tx.send(out.split().freeze());
        }
    }

    fn respond(&self, out: &mut BytesMut, stream: i16, response: &Response) {
        frame::encode_response(out, stream, &self.state.ext, &[], response);
    }

    /// Compresses the responses appended to `out` since `mark`, if the connection
    /// negotiated compression.
    fn compress_since(&self, out: &mut BytesMut, mark: usize) {
        if let Some(codec) = self.state.ext.compression {
            frame::compress_frames(out, mark, codec);
        }
    }

    /// What a fault rule does to a handshake request (OPTIONS, STARTUP, REGISTER):
    /// `Err(next)` when the fault took it over (dropped the connection or answered an error),
    /// otherwise the delay before the normal answer, if any. A delay holds back the answer
    /// only: the request's effects (negotiation, registration) take place at once.
    fn handshake_fault(
        &self,
        opcode: FaultOpcode,
        stream: i16,
        out: &mut BytesMut,
    ) -> Result<Option<Duration>, Next> {
        let Some(reaction) = self.fault(opcode, None, None) else {
            return Ok(None);
        };
        debug!(
            node = self.node,
            shard = self.shard,
            stream,
            ?reaction,
            "fault injected"
        );
        match reaction {
            FaultReaction::DropConnection => Err(Next::Close),
            // A handshake request has no effect worth keeping apart from its answer.
            FaultReaction::Error(e) | FaultReaction::ErrorAfterExecuting(e) => {
                let error = fault_error(e, Consistency::One);
                self.respond(out, stream, &Response::Error(error));
                Err(Next::Continue)
            }
            FaultReaction::Delay(delay) => Ok(Some(delay)),
        }
    }

    /// Answers `response` now, or after `delay` on its own task (so the connection keeps
    /// serving), compressed as negotiated at this point.
    fn answer(&self, out: &mut BytesMut, stream: i16, delay: Option<Duration>, response: Response) {
        let Some(delay) = delay else {
            self.respond(out, stream, &response);
            return;
        };
        let ext = self.state.ext;
        let tx = self.out_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let mut out = BytesMut::new();
            frame::encode_response(&mut out, stream, &ext, &[], &response);
            if let Some(codec) = ext.compression {
                frame::compress_frames(&mut out, 0, codec);
            }
            let _ = tx.send(out.freeze());
        });
    }

    fn handle_frame(&mut self, f: RequestFrame, out: &mut BytesMut) -> Next {
        let stream = f.stream;
        let opcode = f.opcode;
        // Scylla's EXECUTE handler (transport/server.cc, process_execute) looks the statement
        // id up before it reads the rest of the body: an unknown id is Unprepared even when
        // the options after it are malformed. Keep the id for that case (a cheap slice).
        let execute_id = execute_id(opcode, &f.body);
        let request = match frame::decode_request(opcode, f.body) {
            Ok(r) => r,
            Err(v) => {
                let error = match execute_id {
                    Some(id) => self.cluster.db.check_prepared(&id).err().unwrap_or(v),
                    None => v,
                };
                self.respond(out, stream, &Response::Error(error));
                return Next::Continue;
            }
        };
        trace!(
            node = self.node,
            shard = self.shard,
            stream,
            opcode,
            "request"
        );
        match (self.phase, request) {
            (_, Request::Options) => self.options(stream, out),
            (Phase::Handshake, Request::Startup(options)) => self.startup(stream, &options, out),
            (Phase::Authenticating, Request::AuthResponse { token }) => {
                self.auth_response(stream, token.as_deref(), out)
            }
            (Phase::Ready, Request::Register { events }) => self.register(stream, events, out),
            (
                Phase::Ready,
                request @ (Request::Query { .. }
                | Request::Prepare { .. }
                | Request::Execute { .. }
                | Request::Batch(_)),
            ) => self.statement(stream, request, out),
            (phase, other) => {
                let expecting = match phase {
                    Phase::Handshake => "expecting STARTUP or OPTIONS",
                    Phase::Authenticating => "expecting AUTH_RESPONSE",
                    Phase::Ready => "the connection is already established",
                };
                let error =
                    CqlError::protocol(format!("Unexpected message {}, {expecting}", other.name()));
                self.respond(out, stream, &Response::Error(error));
                Next::Continue
            }
        }
    }

    /// OPTIONS: the SUPPORTED options, in any phase.
    fn options(&mut self, stream: i16, out: &mut BytesMut) -> Next {
        let delay = match self.handshake_fault(FaultOpcode::Options, stream, out) {
            Ok(delay) => delay,
            Err(next) => return next,
        };
        let supported = self.supported();
        self.answer(out, stream, delay, Response::Supported(supported));
        Next::Continue
    }

    /// STARTUP: negotiates the frame compression, then asks for credentials or is ready.
    fn startup(&mut self, stream: i16, options: &[(String, String)], out: &mut BytesMut) -> Next {
        let delay = match self.handshake_fault(FaultOpcode::Startup, stream, out) {
            Ok(delay) => delay,
            Err(next) => return next,
        };
        // An unknown codec is refused before anything is negotiated (Scylla's
        // `process_startup`); the connection stays in its handshake.
        self.state.ext = match Extensions::from_startup(options) {
            Ok(ext) => ext,
            Err(unknown) => {
                let error = CqlError::protocol(unknown.to_string());
                self.respond(out, stream, &Response::Error(error));
                return Next::Continue;
            }
        };
        if let Some(codec) = self.state.ext.compression {
            let stats = &self.cluster.stats;
            stats.compressed_connection(self.node, self.shard, codec.name(), true);
        }
        let response = if self.cluster.config.credentials.is_some() {
            self.phase = Phase::Authenticating;
            Response::Authenticate(PASSWORD_AUTHENTICATOR.into())
        } else {
            self.phase = Phase::Ready;
            Response::Ready
        };
        self.answer(out, stream, delay, response);
        Next::Continue
    }

    /// AUTH_RESPONSE: ready when the credentials match.
    fn auth_response(&mut self, stream: i16, token: Option<&[u8]>, out: &mut BytesMut) -> Next {
        if self.credentials_match(token) {
            self.phase = Phase::Ready;
            self.respond(out, stream, &Response::AuthSuccess(None));
        } else {
            let error = CqlError::new(
                ErrorKind::AuthenticationError,
                "Username and/or password are incorrect",
            );
            self.respond(out, stream, &Response::Error(error));
        }
        Next::Continue
    }

    /// REGISTER: subscribes the connection to the events it names (all known ones).
    fn register(&mut self, stream: i16, events: Vec<String>, out: &mut BytesMut) -> Next {
        let delay = match self.handshake_fault(FaultOpcode::Register, stream, out) {
            Ok(delay) => delay,
            Err(next) => return next,
        };
        for e in &events {
            if !matches!(
                e.as_str(),
                "TOPOLOGY_CHANGE" | "STATUS_CHANGE" | "SCHEMA_CHANGE"
            ) {
                let error = CqlError::protocol(format!("Invalid value '{e}' for Type"));
                self.respond(out, stream, &Response::Error(error));
                return Next::Continue;
            }
        }
        self.register_events(events);
        self.answer(out, stream, delay, Response::Ready);
        Next::Continue
    }

    /// QUERY, PREPARE, EXECUTE or BATCH: counted (but PREPARE), then faulted or run.
    #[inline]
    fn statement(&mut self, stream: i16, request: Request, out: &mut BytesMut) -> Next {
        let fault_op = match &request {
            Request::Query { .. } => FaultOpcode::Query,
            Request::Prepare { .. } => FaultOpcode::Prepare,
            Request::Execute { .. } => FaultOpcode::Execute,
            _ => FaultOpcode::Batch,
        };
        if !matches!(request, Request::Prepare { .. }) {
            self.count(fault_op, &request);
        }
        if self.cluster.faults.len() > 0 {
            let (text, table) = self.cluster.db.describe_request(&self.state, &request);
            let table_ref = table.as_ref().map(|(k, t)| (k.as_str(), t.as_str()));
            if let Some(reaction) = self.fault(fault_op, text.as_deref(), table_ref) {
                return self.react(reaction, stream, out, request);
            }
        }
        self.execute(stream, request, out);
        Next::Continue
    }

    /// Counts a statement request on its node and shard, and on the tables it touches while
    /// some table is counted.
    #[inline]
    fn count(&self, op: FaultOpcode, request: &Request) {
        let stats = &self.cluster.stats;
        stats.record(self.node, self.shard, op);
        if stats.counting_tables() {
            let local_serial =
                request_serial_consistency(request) == Some(Consistency::LocalSerial);
            for (ks, table, access) in self.cluster.db.table_accesses(&self.state, request) {
                stats.record_table(&ks, &table, access, local_serial);
            }
        }
    }

    /// Runs a statement request and appends its response (publishing schema changes).
    fn execute(&mut self, stream: i16, request: Request, out: &mut BytesMut) {
        run_statement(&self.cluster, &mut self.state, stream, request, out);
    }

    fn fault(
        &self,
        opcode: FaultOpcode,
        statement: Option<&str>,
        table: Option<(&str, &str)>,
    ) -> Option<FaultReaction> {
        self.cluster.faults.check(&RequestInfo {
            node: self.node,
            shard: self.shard,
            opcode,
            statement,
            table,
        })
    }

    /// Applies a fault reaction to a request.
    fn react(
        &mut self,
        reaction: FaultReaction,
        stream: i16,
        out: &mut BytesMut,
        request: Request,
    ) -> Next {
        debug!(
            node = self.node,
            shard = self.shard,
            stream,
            ?reaction,
            "fault injected"
        );
        match reaction {
            FaultReaction::DropConnection => Next::Close,
            FaultReaction::Error(e) => {
                let consistency = request_consistency(&request);
                self.respond(out, stream, &Response::Error(fault_error(e, consistency)));
                Next::Continue
            }
            FaultReaction::ErrorAfterExecuting(e) => {
                let consistency = request_consistency(&request);
                // The request takes effect; its answer is replaced by the error.
                let cluster = self.cluster.clone();
                let mut discarded = BytesMut::new();
                run_statement(&cluster, &mut self.state, stream, request, &mut discarded);
                self.respond(out, stream, &Response::Error(fault_error(e, consistency)));
                Next::Continue
            }
            FaultReaction::Delay(delay) => {
                // Answer later, on its own task, so the connection keeps serving.
                let cluster = self.cluster.clone();
                let mut state = self.state.clone();
                let tx = self.out_tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let mut out = BytesMut::new();
                    run_statement(&cluster, &mut state, stream, request, &mut out);
                    if let Some(codec) = state.ext.compression {
                        frame::compress_frames(&mut out, 0, codec);
                    }
                    let _ = tx.send(out.freeze());
                });
                Next::Continue
            }
        }
    }

    fn credentials_match(&self, token: Option<&[u8]>) -> bool {
        let Some((user, password)) = &self.cluster.config.credentials else {
            return true;
        };
        // PLAIN SASL: [authzid] 0x00 user 0x00 password
        let Some(token) = token else { return false };
        let mut parts = token.split(|b| *b == 0);
        let _authzid = parts.next();
        let (Some(u), Some(p), None) = (parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        u == user.as_bytes() && p == password.as_bytes()
    }

    fn supported(&self) -> Vec<(String, Vec<String>)> {
        supported_options(&self.cluster, self.shard)
    }

    /// Starts forwarding cluster events of the registered types to this connection.
    fn register_events(&mut self, types: Vec<String>) {
        if self.events_registered {
            return;
        }
        self.events_registered = true;
        let mut rx = self.cluster.events.subscribe();
        let tx = self.out_tx.clone();
        let mut closed = self.closed_rx.clone();
        tokio::spawn(async move {
            loop {
                let received = tokio::select! {
                    r = rx.recv() => r,
                    _ = closed.changed() => break,
                };
                match received {
                    Ok(event) => {
                        if types.iter().any(|t| t == event.type_name()) {
                            let mut out = BytesMut::new();
                            frame::encode_event(&mut out, &event);
                            if tx.send(out.freeze()).is_err() {
                                break;
                            }
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        });
    }
}

/// The SUPPORTED options of a connection to shard `shard`: the codecs, Scylla sharding keys
/// and extensions a real node announces, sorted by key as Scylla's multimap sorts them. Not
/// offered: metadata ids (the driver contract §1.2) and tablets routing v2 (Scylla offers it
/// only with an experimental feature).
pub(crate) fn supported_options(cluster: &ClusterCore, shard: u32) -> Vec<(String, Vec<String>)> {
    let one = |k: &str, v: String| (k.to_string(), vec![v]);
    let mut options = vec![
        // Every driver reads this key; the Python driver fails without it.
        (
            frame::KEY_COMPRESSION.to_string(),
            frame::SUPPORTED_COMPRESSION.map(String::from).to_vec(),
        ),
        one("CQL_VERSION", "3.3.1".into()),
        one(
            frame::KEY_LWT_ADD_METADATA_MARK,
            format!("{}={}", frame::KEY_LWT_MASK_PARAM, frame::LWT_MARK_MASK),
        ),
        one(
            "SCYLLA_NR_SHARDS",
            cluster.config.shards_per_node.to_string(),
        ),
        one(
            "SCYLLA_PARTITIONER",
            "org.apache.cassandra.dht.Murmur3Partitioner".into(),
        ),
        one(
            frame::KEY_RATE_LIMIT_ERROR,
            format!("ERROR_CODE={}", frame::RATE_LIMIT_ERROR_CODE),
        ),
        one("SCYLLA_SHARD", shard.to_string()),
        one(
            "SCYLLA_SHARDING_ALGORITHM",
            "biased-token-round-robin".into(),
        ),
        one(
            "SCYLLA_SHARDING_IGNORE_MSB",
            cluster.config.ignore_msb.to_string(),
        ),
        one(
            "SCYLLA_SHARD_AWARE_PORT",
            cluster.plan.shard_aware_port.to_string(),
        ),
    ];
    // As Scylla's `cql_server::connection::process_options` (transport/server.cc): the TLS
    // shard-aware port is announced when one is configured, on every connection.
    if let Some((_, shard_aware_tls)) = cluster.plan.tls_ports {
        options.push(one(
            "SCYLLA_SHARD_AWARE_PORT_SSL",
            shard_aware_tls.to_string(),
        ));
    }
    options.extend([
        // An extension without parameters: Scylla's multimap holds one empty value for it.
        one(frame::KEY_TABLETS_ROUTING_V1, String::new()),
    ]);
    options
}

/// Runs a statement request on the connection whose state is `state` and appends its
/// response, publishing schema changes. With TABLETS_ROUTING_V1 negotiated, a successful
/// result of a request for a tablet that has no replica on this node and shard carries the
/// tablet's routing information (Scylla's `check_locality` and `add_tablet_info`), so that
/// the driver learns where to send the next one.
fn run_statement(
    cluster: &ClusterCore,
    state: &mut ConnState,
    stream: i16,
    request: Request,
    out: &mut BytesMut,
) {
    let topology = cluster.topology();
    let routing = if state.ext.tablets_routing {
        cluster.db.tablet_target(state, &request).and_then(|t| {
            t.layout
                .check_locality(&topology, t.token, state.node, state.shard)
        })
    } else {
        None
    };
    let start = out.len();
    let outcome = cluster.db.handle(&topology, state, stream, request, out);
    if let Some(routing) = routing
        && out.get(start + 4) == Some(&frame::response_opcode::RESULT)
    {
        let value = frame::tablets_routing_v1_value(
            routing.first_token,
            routing.last_token,
            &routing.replicas,
        );
        let entry = (frame::PAYLOAD_TABLETS_ROUTING_V1, Some(value));
        frame::insert_custom_payload(out, start, &[entry]);
    }
    for change in outcome.schema_changes {
        cluster.publish(frame::Event::SchemaChange(change));
    }
}

fn request_consistency(request: &Request) -> Consistency {
    match request {
        Request::Query { params, .. } | Request::Execute { params, .. } => params.consistency,
        Request::Batch(b) => b.consistency,
        _ => Consistency::One,
    }
}

/// The serial consistency a statement request asks for, if it sets one.
fn request_serial_consistency(request: &Request) -> Option<Consistency> {
    match request {
        Request::Query { params, .. } | Request::Execute { params, .. } => {
            params.serial_consistency
        }
        Request::Batch(b) => b.serial_consistency,
        _ => None,
    }
}

/// The ERROR a fault answers with, with plausible code-specific fields.
fn fault_error(error: FaultError, consistency: Consistency) -> CqlError {
    let required = match consistency {
        Consistency::Any | Consistency::One | Consistency::LocalOne => 1,
        Consistency::Two => 2,
        _ => 2,
    };
    match error {
        FaultError::Overloaded => CqlError::new(
            ErrorKind::Overloaded,
            "Too many in flight hints: injected fault",
        ),
        FaultError::ReadTimeout => CqlError::new(
            ErrorKind::ReadTimeout {
                consistency,
                received: 0,
                block_for: required,
                data_present: false,
            },
            "Operation timed out for a read - received only 0 responses from the replicas (injected fault)",
        ),
        FaultError::WriteTimeout => CqlError::new(
            ErrorKind::WriteTimeout {
                consistency,
                received: 0,
                block_for: required,
                write_type: WriteType::Simple,
            },
            "Operation timed out for a write - received only 0 responses from the replicas (injected fault)",
        ),
        FaultError::Unavailable => CqlError::new(
            ErrorKind::Unavailable {
                consistency,
                required,
                alive: 0,
            },
            format!(
                "Cannot achieve consistency level for cl {}. Requires {required}, alive 0 (injected fault)",
                consistency.name()
            ),
        ),
        FaultError::ServerError => CqlError::server("Internal server error (injected fault)"),
        FaultError::IsBootstrapping => CqlError::new(
            ErrorKind::IsBootstrapping,
            "Cannot read from a bootstrapping node (injected fault)",
        ),
        FaultError::ReadFailure => CqlError::new(
            ErrorKind::ReadFailure {
                consistency,
                received: 0,
                block_for: required,
                num_failures: 1,
                data_present: false,
            },
            "Operation failed for a read (injected fault)",
        ),
        FaultError::Invalid => CqlError::invalid("Invalid request (injected fault)"),
    }
}

/// The statement id at the start of an EXECUTE body (`[short bytes]`), if it is complete.
fn execute_id(opcode: u8, body: &Bytes) -> Option<Bytes> {
    if opcode != frame::request_opcode::EXECUTE {
        return None;
    }
    let len = usize::from(u16::from_be_bytes([*body.first()?, *body.get(1)?]));
    (body.len() >= 2 + len).then(|| body.slice(2..2 + len))
}
