//! Where a program's rows go: an [`Output`] shared by every consumer, and a
//! [`SharedBuffer`] to capture it (tests, embedding).

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Where printed rows go: a writer shared by every consumer. Each row is written with one
/// `write_all`, so rows of concurrent stream groups never interleave.
#[derive(Clone)]
pub struct Output {
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    closed: Arc<AtomicBool>,
}

impl Output {
    /// Output to this writer.
    pub fn new(writer: impl Write + Send + 'static) -> Self {
        Self {
            writer: Arc::new(Mutex::new(Box::new(writer))),
            closed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Output to stdout.
    pub fn stdout() -> Self {
        Self::new(std::io::stdout())
    }

    /// Writes `text` and flushes. A closed pipe (`printer | head`) is remembered, so the
    /// program can stop quietly.
    pub fn write(&self, text: &str) -> std::io::Result<()> {
        let mut w = self
            .writer
            .lock()
            .map_err(|_| std::io::Error::other("the output lock is poisoned"))?;
        let result = w.write_all(text.as_bytes()).and_then(|()| w.flush());
        if let Err(e) = &result
            && e.kind() == std::io::ErrorKind::BrokenPipe
        {
            self.closed.store(true, Ordering::Relaxed);
        }
        result
    }

    /// Whether a write failed because the reading end of a pipe was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// A writer into a shared, growing byte buffer (for tests and embedding).
#[derive(Clone, Default)]
pub struct SharedBuffer(pub Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// What was written so far, as text (invalid UTF-8 replaced).
    pub fn contents(&self) -> String {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("the buffer lock is poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_writes_whole_blocks() {
        let buf = SharedBuffer::default();
        let out = Output::new(buf.clone());
        out.write("a\n").unwrap();
        out.clone().write("b\n").unwrap();
        assert_eq!(buf.contents(), "a\nb\n");
        assert!(!out.is_closed());
    }

    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn output_remembers_a_closed_pipe() {
        let out = Output::new(ClosedPipe);
        assert!(out.write("x").is_err());
        assert!(out.is_closed());
    }
}
