//! The node configuration file: any text is accepted or refused with an
//! error, never a panic, and a refusal never echoes a value from the file.
//! Keys are named by design (`kinds.<kind>.…`, an unknown field), so an
//! input that puts the canary where a key goes is checked for panics only.
//! (Inputs naming `state_dir` or `compile_cache` are skipped: opening a
//! receipt store or a compile cache creates directories, which a fuzzer
//! must not do wherever it likes.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_host::node_config::NodeConfig;
use sandbox_host::registry;

/// A value planted in the corpus; a refusal that shows it echoes a value.
const CANARY: &str = "fuzz-canary-5e1f0c";

/// Whether some line has the canary before its first `=` (or has no `=`):
/// there it may be a key or a table header, which a refusal may name. A
/// value on a line of its own (inside a multi-line array) is skipped too,
/// which only narrows what is checked.
fn canary_may_be_a_key(text: &str) -> bool {
    text.lines()
        .any(|line| match (line.find(CANARY), line.find('=')) {
            (Some(canary), Some(equals)) => canary < equals,
            (Some(_), None) => true,
            (None, _) => false,
        })
}

fuzz_target!(|text: &str| {
    if text.contains("state_dir") || text.contains("compile_cache") {
        return;
    }
    if let Err(error) = NodeConfig::parse(text, &registry::builtin()) {
        let shown = error.to_string();
        assert!(
            !shown.contains(CANARY) || canary_may_be_a_key(text),
            "a refusal echoed a value: {shown}"
        );
    }
});
