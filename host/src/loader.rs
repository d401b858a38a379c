//! Turning a registered component file into something callable: digest
//! check, contract stamp, compile once per digest, link against the host's
//! capabilities and WASI (empty context), pre-instantiate.

use crate::compile_cache::CompileCache;
use crate::declaration::{self, DeclarationError, Inventory};
use crate::exports::Prepared;
use crate::registry::{DigestSource, Registration};
use crate::state::CallState;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often guest CPU time is checked against deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Largest linear memory any kind may be granted (the registry's upper bound).
const POOL_MAX_MEMORY_BYTES: usize = 4 << 30;
/// Instances that may exist at once across all kinds: a kind's
/// `max_concurrent_calls` may be 1 024. Each holds two memory slots of
/// address space (4 GiB plus guard each, reserved, not resident; our
/// components use one) and an async stack; what is resident is what the
/// calls touch (see docs/benchmarks.md, "scale").
const POOL_INSTANCES: u32 = 1024;
/// Bytes of a freed linear memory slot reset in place instead of being
/// returned to the kernel (when the kernel can scan dirty pages): only the
/// pages a call dirtied are copied back, up to this bound, and what is past
/// it goes back to the kernel. 1 MiB bounds what an idle slot keeps; a
/// `get-info` with one engine request dirties about 5 pages. Measured: the
/// trivial call 32 µs → 19.5 µs.
const MEMORY_KEEP_RESIDENT: usize = 1 << 20;
/// The same for tables: a component's tables are a few KiB, and
/// returning them to the kernel cost about 8 µs per call (a TLB flush on
/// every core).
const TABLE_KEEP_RESIDENT: usize = 16 << 10;

/// Why a component cannot be loaded. Messages carry no configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The component or its digest file cannot be read.
    #[error("kind `{kind}`: cannot read {what} at {path}")]
    Read {
        /// The kind.
        kind: String,
        /// `component` or `digest file`.
        what: &'static str,
        /// The path tried.
        path: PathBuf,
    },
    /// The file's SHA-256 differs from the expected digest.
    #[error("kind `{kind}`: component digest does not match the expected digest")]
    Digest {
        /// The kind.
        kind: String,
    },
    /// Wasmtime refused to compile the component.
    #[error("kind `{kind}`: component does not compile")]
    Compile {
        /// The kind.
        kind: String,
    },
    /// The component imports something the host does not provide.
    #[error("kind `{kind}`: component needs imports the host does not provide")]
    Link {
        /// The kind.
        kind: String,
    },
    /// The exports or declaration break the contract.
    #[error("kind `{kind}`: {error}")]
    Declaration {
        /// The kind.
        kind: String,
        /// The rule broken.
        error: DeclarationError,
    },
    /// The component declares other operations (or other reasons) than
    /// its registry row pins: Core, which reads the row, would expect
    /// another provider than the one loaded.
    #[error(
        "kind `{kind}`: the component's declaration differs from the one its registry row pins; the component declares unsupported: {declared}"
    )]
    NotAsPinned {
        /// The kind.
        kind: String,
        /// What the component declares unsupported, as the row's
        /// `unsupported` table would say it (`operation = "reason"`, …).
        declared: String,
    },
    /// Calling `operations()` or `requirements()` at load failed (trap,
    /// budget, memory).
    #[error("kind `{kind}`: the declaration or requirements call did not complete")]
    DeclarationCall {
        /// The kind.
        kind: String,
    },
}

/// The engine (pooling allocator, epoch ticker) could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("the WebAssembly engine could not be created")]
pub struct EngineError;

/// The engine, its compile cache and its epoch ticker. One per process is
/// enough; hosts may share it.
pub struct Runtime {
    engine: Engine,
    linker: Linker<CallState>,
    compiled: Mutex<HashMap<String, Component>>,
    cache: Option<CompileCache>,
    ticking: Arc<AtomicBool>,
}

impl Runtime {
    /// An engine with the pooling allocator and epoch interruption, and a
    /// thread that advances the epoch every [`EPOCH_TICK`].
    pub fn new() -> Result<Arc<Self>, EngineError> {
        Self::build(None)
    }

    /// [`Runtime::new`], reading compiled components from `cache` and
    /// storing the ones it compiles there.
    pub fn with_compile_cache(cache: CompileCache) -> Result<Arc<Self>, EngineError> {
        Self::build(Some(cache))
    }

    fn build(cache: Option<CompileCache>) -> Result<Arc<Self>, EngineError> {
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(POOL_INSTANCES)
            .total_core_instances(POOL_INSTANCES * 4)
            .total_memories(POOL_INSTANCES * 2)
            .total_tables(POOL_INSTANCES * 4)
            .total_stacks(POOL_INSTANCES)
            .max_memories_per_component(4)
            .max_memory_size(POOL_MAX_MEMORY_BYTES)
            .table_keep_resident(TABLE_KEEP_RESIDENT);
        // Where the kernel can list a memory's dirty pages (Linux 6.7+),
        // a freed slot copies back only those (up to the bound) and keeps
        // them mapped: the next instance takes no page faults there.
        // Without the scan keeping memory resident means a memset of the
        // whole bound at every reset, which costs more than the faults.
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            pool.pagemap_scan(wasmtime::Enabled::Yes)
                .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT);
        }
        let mut config = Config::new();
        config
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config).map_err(|_| EngineError)?;
        let mut linker = Linker::new(&engine);
        // `wasi:http` requests go through the host's send hook only
        // (`capability::http`).
        crate::state::add_to_linker(&mut linker).map_err(|_| EngineError)?;
        let ticking = Arc::new(AtomicBool::new(true));
        let (weak, flag) = (engine.weak(), ticking.clone());
        std::thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || {
                while flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|_| EngineError)?;
        Ok(Arc::new(Self {
            engine,
            linker,
            compiled: Mutex::new(HashMap::new()),
            cache,
            ticking,
        }))
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Compiles `bytes`, or returns the component already compiled for
    /// `digest` (in this process, or in the compile cache).
    fn compile(&self, digest: &str, bytes: &[u8]) -> wasmtime::Result<Component> {
        let mut compiled = self
            .compiled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(component) = compiled.get(digest) {
            return Ok(component.clone());
        }
        let cached = self
            .cache
            .as_ref()
            .and_then(|cache| cache.load(&self.engine, digest));
        let component = match cached {
            Some(component) => component,
            None => {
                let component = Component::new(&self.engine, bytes)?;
                if let Some(cache) = &self.cache {
                    cache.store(&self.engine, digest, &component);
                }
                component
            }
        };
        compiled.insert(digest.to_string(), component.clone());
        Ok(component)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticking.store(false, Ordering::Relaxed);
    }
}

/// A component that passed every static check, ready to instantiate.
pub(crate) struct Loaded {
    /// SHA-256 of the component file, lowercase hex.
    pub digest: String,
    /// Operations derived from its exports.
    pub inventory: Inventory,
    /// Pre-instantiated component.
    pub pre: Prepared,
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn expected_digest(
    registration: &Registration,
    component_path: &Path,
) -> Result<String, LoadError> {
    match &registration.digest {
        DigestSource::Pinned(digest) => Ok(digest.clone()),
        DigestSource::Staged => {
            let path = component_path.with_extension("wasm.sha256");
            let text = std::fs::read_to_string(&path).map_err(|_| LoadError::Read {
                kind: registration.kind.clone(),
                what: "digest file",
                path: path.clone(),
            })?;
            Ok(text
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase())
        }
    }
}

/// Loads a registered component from `plugin_dir` (no native I/O, no call).
pub(crate) fn load(
    runtime: &Runtime,
    registration: &Registration,
    plugin_dir: &Path,
) -> Result<Loaded, LoadError> {
    let kind = registration.kind.clone();
    let path = plugin_dir.join(&registration.component);
    let bytes = std::fs::read(&path).map_err(|_| LoadError::Read {
        kind: kind.clone(),
        what: "component",
        path: path.clone(),
    })?;
    let digest = sha256_hex(&bytes);
    if digest != expected_digest(registration, &path)? {
        return Err(LoadError::Digest { kind });
    }
    declaration::contract_stamp(&bytes).map_err(|error| LoadError::Declaration {
        kind: kind.clone(),
        error,
    })?;
    let component = runtime
        .compile(&digest, &bytes)
        .map_err(|_| LoadError::Compile { kind: kind.clone() })?;
    let inventory =
        declaration::derive_inventory(&runtime.engine, &component).map_err(|error| {
            LoadError::Declaration {
                kind: kind.clone(),
                error,
            }
        })?;
    let instance_pre = runtime
        .linker
        .instantiate_pre(&component)
        .map_err(|_| LoadError::Link { kind: kind.clone() })?;
    let pre = Prepared::new(instance_pre).map_err(|_| LoadError::Link { kind })?;
    Ok(Loaded {
        digest,
        inventory,
        pre,
    })
}
