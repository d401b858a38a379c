//! The binary's log: one line per event on stderr, through a writer that
//! never blocks the runtime (a full stderr drops lines instead of stalling
//! the workers serving calls), under a ceiling no `RUST_LOG` can lift for
//! the crates that see request and response bytes.

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::filter::{EnvFilter, FilterExt, LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::prelude::*;

/// Crates that handle the bytes of engine, vendor and node requests
/// (bootstrap archives, credentials, stdin): at most their warnings are
/// written, whatever the filter asks.
const BYTE_HANDLING_TARGETS: [&str; 7] = [
    "hyper",
    "hyper_util",
    "reqwest",
    "rustls",
    "tokio_rustls",
    "wasmtime_wasi_http",
    "h2",
];

/// Lines that may wait for stderr; beyond them new lines are dropped.
const BUFFERED_LINES: usize = 16_384;

/// Installs the subscriber: `RUST_LOG` when set, else `level` (default
/// `warn`). Keep the guard until exit: dropping it flushes the lines still
/// buffered.
pub(crate) fn init(level: Option<&str>, json: bool) -> WorkerGuard {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| level.unwrap_or("warn").into());
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(BUFFERED_LINES)
        .finish(std::io::stderr());
    use std::io::IsTerminal;
    // A second initialisation (none happens today) would only be ignored.
    let _ = subscriber(filter, json, std::io::stderr().is_terminal(), writer).try_init();
    guard
}

/// Events `filter` lets through, within the ceiling, written by `writer`.
fn subscriber<W>(
    filter: EnvFilter,
    json: bool,
    ansi: bool,
    writer: W,
) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let ceiling = Targets::new()
        .with_default(LevelFilter::TRACE)
        .with_targets(BYTE_HANDLING_TARGETS.map(|target| (target, LevelFilter::WARN)));
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(writer);
    let layer = if json {
        layer.json().boxed()
    } else {
        layer.boxed()
    };
    // One filter of both, so that the subscriber's level hint is the lower
    // of theirs: `log` records and events below it are then refused at the
    // call site, before any filter runs (nested, the ceiling's TRACE
    // default set the hint).
    tracing_subscriber::registry().with(layer.with_filter(filter.and(ceiling)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Collects what the subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Captured {
        type Writer = Captured;
        fn make_writer(&'w self) -> Self::Writer {
            self.clone()
        }
    }

    #[test]
    fn the_subscribers_level_hint_is_its_filters() {
        use tracing::Subscriber as _;
        for (directives, hint) in [
            ("warn", LevelFilter::WARN),
            ("info,oac=debug", LevelFilter::DEBUG),
            ("trace", LevelFilter::TRACE),
        ] {
            let subscriber = subscriber(
                EnvFilter::new(directives),
                false,
                false,
                Captured::default(),
            );
            assert_eq!(subscriber.max_level_hint(), Some(hint), "{directives}");
        }
    }

    #[test]
    fn no_filter_lifts_the_ceiling_of_the_byte_handling_crates() {
        let captured = Captured::default();
        let filter = EnvFilter::new("trace,hyper::proto=trace,reqwest::connect=trace");
        let subscriber = subscriber(filter, false, false, captured.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::trace!(target: "hyper::proto::h1::io", "bytes-canary-1");
            tracing::debug!(target: "reqwest::connect", "bytes-canary-2");
            tracing::info!(target: "wasmtime_wasi_http::types", "bytes-canary-3");
            tracing::warn!(target: "hyper::proto::h1::io", "hyper-warning");
            tracing::trace!(target: "provider", "provider-trace");
        });
        let log = String::from_utf8(captured.0.lock().expect("lock").clone()).expect("UTF-8");
        assert!(!log.contains("bytes-canary"), "{log}");
        assert!(log.contains("hyper-warning"), "{log}");
        assert!(log.contains("provider-trace"), "{log}");
    }
}
