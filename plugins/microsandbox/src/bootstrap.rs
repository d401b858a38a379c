//! The bootstrap: the runtime image's init, run once per allocation as
//! root while the host's bootstrap label reads `pending`, with the
//! bootstrap record on stdin (the only place the daemon credential goes).
//! The init (`image/oac-microsandbox-init`) writes the record to
//! `/home/runtime/runtime-bootstrap.json` (0600, 1000:1000, no link
//! followed), makes the `/environment` directories, binds
//! `/environment/workspace` at `/workspace`, and starts the Runtime daemon
//! as 1000:1000; it exits 0 only once the daemon runs.

use oac_provider_sdk::capability::microsandbox::VmExec;
use oac_provider_sdk::prelude::*;

/// The init program of the runtime image.
pub const INIT: &str = "/usr/local/bin/oac-microsandbox-init";
/// Where commands run (the environment's workspace, bound by the init).
pub const WORKING_DIR: &str = "/workspace";
/// The init prints at most a line or two; more is not its output.
const INIT_OUTPUT_LIMIT: u32 = 64 * 1024;

/// The init's command for `request`: no arguments, the record on stdin.
pub fn init(request: &Bootstrap) -> VmExec {
    VmExec {
        args: vec![INIT.into()],
        working_dir: None,
        stdin: Some(oac_provider_sdk::bootstrap::record(request)),
        as_root: true,
        output_limit_bytes: INIT_OUTPUT_LIMIT,
    }
}
