//! The node configuration file: any text is accepted or refused with an
//! error, never a panic, and a refusal never echoes a value from the file.
//! (Inputs naming `state_dir` or `compile_cache` are skipped: opening a
//! receipt store or a compile cache creates directories, which a fuzzer
//! must not do wherever it likes.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_host::node_config::NodeConfig;
use sandbox_host::registry;

/// A value planted in the corpus; a refusal that shows it echoes a value.
const CANARY: &str = "fuzz-canary-5e1f0c";

fuzz_target!(|text: &str| {
    if text.contains("state_dir") || text.contains("compile_cache") {
        return;
    }
    if let Err(error) = NodeConfig::parse(text, &registry::builtin()) {
        let shown = error.to_string();
        assert!(!shown.contains(CANARY), "a refusal echoed a value: {shown}");
    }
});
