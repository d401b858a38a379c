//! An on-disk cache of compiled components, so that a node's cold start
//! does not recompile every kind's component. An artifact is keyed by the
//! component's SHA-256 (already verified against the registry before
//! anything is compiled or loaded) and by the engine's compatibility hash
//! (wasmtime version and every setting that shapes machine code); it is
//! stored with the SHA-256 of its own bytes, checked before it is used.
//!
//! Loading an artifact runs the machine code in it, so the cache is as
//! trusted as the host's binary: its directory must belong to the host's
//! user and be writable by nobody else, or it is refused. The digest guards
//! against a torn or corrupted file, not against that user.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Why the cache directory is refused. The node does not start: an
/// unusable cache is a configuration error, not a reason to run slower
/// without saying so.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The directory cannot be created or read.
    #[error("compile_cache {0}: cannot create or read the directory")]
    Unreadable(PathBuf),
    /// The path exists and is not a directory.
    #[error("compile_cache {0}: not a directory")]
    NotADirectory(PathBuf),
    /// Another user owns it, or group or others may write to it.
    #[error("compile_cache {0}: must belong to this user and be writable by nobody else")]
    Exposed(PathBuf),
}

/// A directory of compiled components.
#[derive(Clone, Debug)]
pub struct CompileCache {
    dir: PathBuf,
}

/// Bytes of the SHA-256 stored before an artifact.
const DIGEST_BYTES: usize = 32;

/// Feeds a [`Hash`] value into SHA-256 (for the engine's compatibility
/// hash, which is only available as `impl Hash`).
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

impl CompileCache {
    /// Opens (creating it, mode 0700) the cache directory `dir`.
    pub fn open(dir: &Path) -> Result<Self, CacheError> {
        let shown = dir.to_path_buf();
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|_| CacheError::Unreadable(shown.clone()))?;
        }
        let metadata = std::fs::metadata(dir).map_err(|_| CacheError::Unreadable(shown.clone()))?;
        if !metadata.is_dir() {
            return Err(CacheError::NotADirectory(shown));
        }
        // The owner of `/proc/self` is this process's effective user.
        let me = std::fs::metadata("/proc/self")
            .map(|own| own.uid())
            .map_err(|_| CacheError::Unreadable(shown.clone()))?;
        if metadata.uid() != me || metadata.permissions().mode() & 0o022 != 0 {
            return Err(CacheError::Exposed(shown));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    /// The file of the component with SHA-256 `digest` (hex) compiled by
    /// `engine`.
    fn path(&self, engine: &Engine, digest: &str) -> PathBuf {
        let mut hasher = Sha256Hasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = hex::encode(&hasher.0.finalize()[..8]);
        self.dir.join(format!("{digest}-{engine_key}.cwasm"))
    }

    /// The cached compilation of the component `digest`, if there is one
    /// whose bytes are intact and that this engine accepts.
    pub(crate) fn load(&self, engine: &Engine, digest: &str) -> Option<Component> {
        let stored = std::fs::read(self.path(engine, digest)).ok()?;
        let component = deserialize_verified(engine, &stored);
        if component.is_none() {
            tracing::warn!(
                digest,
                "a cached compiled component is unusable; recompiling"
            );
        }
        component
    }

    /// Stores `component` (compiled from `digest`); a failure only costs
    /// the next start a compilation, so it is logged, not returned.
    pub(crate) fn store(&self, engine: &Engine, digest: &str, component: &Component) {
        let path = self.path(engine, digest);
        let written = component.serialize().ok().and_then(|artifact| {
            let mut file = tempfile::NamedTempFile::new_in(&self.dir).ok()?;
            file.write_all(&Sha256::digest(&artifact)).ok()?;
            file.write_all(&artifact).ok()?;
            file.as_file().sync_all().ok()?;
            file.persist(&path).ok()
        });
        if written.is_none() {
            tracing::warn!(digest, "a compiled component could not be cached");
        }
    }
}

/// The one place the host turns bytes into executable code without
/// compiling them: `stored` is a SHA-256 followed by an artifact that
/// `Component::serialize` wrote; the artifact is used only if its digest
/// matches.
#[allow(unsafe_code)]
fn deserialize_verified(engine: &Engine, stored: &[u8]) -> Option<Component> {
    let (recorded, artifact) = stored.split_at_checked(DIGEST_BYTES)?;
    if Sha256::digest(artifact).as_slice() != recorded {
        return None;
    }
    // SAFETY: `Component::deserialize` requires bytes produced by
    // `Component::serialize` (wasmtime checks the engine's version and
    // settings itself). These bytes are exactly what `CompileCache::store`
    // wrote, in a directory only this user may write (`CompileCache::open`),
    // and the digest just checked proves they are whole and unchanged
    // since.
    unsafe { Component::deserialize(engine, artifact) }.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPONENT: &str = r#"(component
      (core module $m (func (export "f")))
      (core instance $i (instantiate $m))
      (func (export "f") (canon lift (core func $i "f"))))"#;

    fn compiled(engine: &Engine) -> (String, Component) {
        let bytes = wat::parse_str(COMPONENT).expect("wat");
        let digest = crate::loader::sha256_hex(&bytes);
        (digest, Component::new(engine, bytes).expect("compiles"))
    }

    #[test]
    fn a_stored_component_loads_and_a_changed_byte_is_refused() {
        let engine = Engine::default();
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = CompileCache::open(&dir.path().join("cache")).expect("opens");
        let (digest, component) = compiled(&engine);
        assert!(cache.load(&engine, &digest).is_none(), "empty at first");
        cache.store(&engine, &digest, &component);
        assert!(
            cache.load(&engine, &digest).is_some(),
            "stored, then loaded"
        );
        assert!(cache.load(&engine, &"0".repeat(64)).is_none());

        let path = cache.path(&engine, &digest);
        let mut stored = std::fs::read(&path).expect("stored file");
        let last = stored.len() - 1;
        stored[last] ^= 1;
        std::fs::write(&path, &stored).expect("rewrite");
        assert!(cache.load(&engine, &digest).is_none(), "a changed byte");
        std::fs::write(&path, &stored[..DIGEST_BYTES + 10]).expect("rewrite");
        assert!(cache.load(&engine, &digest).is_none(), "a torn file");
        std::fs::write(&path, b"short").expect("rewrite");
        assert!(
            cache.load(&engine, &digest).is_none(),
            "shorter than a digest"
        );
    }

    #[test]
    fn another_engine_configuration_has_its_own_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = CompileCache::open(dir.path()).expect("opens");
        let engine = Engine::default();
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let other = Engine::new(&config).expect("engine");
        assert_ne!(cache.path(&engine, "d"), cache.path(&other, "d"));
        let (digest, component) = compiled(&engine);
        cache.store(&engine, &digest, &component);
        assert!(cache.load(&other, &digest).is_none());
    }

    #[test]
    fn a_directory_others_may_write_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        assert!(matches!(
            CompileCache::open(dir.path()),
            Err(CacheError::Exposed(_))
        ));
        let file = dir.path().join("file");
        std::fs::write(&file, b"").expect("file");
        assert!(matches!(
            CompileCache::open(&file),
            Err(CacheError::NotADirectory(_))
        ));
    }
}
