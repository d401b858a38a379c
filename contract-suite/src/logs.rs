//! Captures the log an operator runs with (info level and above, where the
//! contract forbids native error text and credentials), so the leak cases
//! can read it. Dependencies' debug and trace output (bollard traces request
//! bodies) is outside the contract and not captured.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

fn buffer() -> &'static Arc<Mutex<Vec<u8>>> {
    static BUFFER: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    BUFFER.get_or_init(Arc::default)
}

/// Writes into the shared buffer.
struct Capture;

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        buffer()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the capturing subscriber once per process (later calls, or a
/// subscriber installed by someone else, leave things as they are).
pub fn install() {
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(|| Capture)
        .try_init();
}

/// Everything captured so far.
pub fn captured() -> String {
    String::from_utf8_lossy(&buffer().lock().unwrap_or_else(|p| p.into_inner())).into_owned()
}

/// Forgets what was captured (a new run starts).
pub fn clear() {
    buffer().lock().unwrap_or_else(|p| p.into_inner()).clear();
}
