//! The network side of the embedded cluster: listeners, connections, request dispatch.
//!
//! - [`listen`]: loopback address plans and binding of each node's two listeners.

pub(crate) mod listen;
