//! A provider component ready to instantiate, and its exports loaded one
//! interface at a time. The world's generated `Provider` type-checks every
//! export of every interface at each instantiation (about 6 µs of a 40 µs
//! call); the whole world is type-checked once, at load, and a call then
//! loads only the interface it uses.

use crate::bindings::ProviderPre;
use crate::bindings::exports::oac::sandbox_provider::{
    batch_observation_source, checkpoint_provider, configuration_adapter, credential_verifier,
    declarations, observation_source, readiness, sandbox_provider, selection_discoverer,
};
use crate::state::CallState;
use std::sync::Arc;
use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre};

/// Where each exported interface's functions are in the component.
struct Indices {
    sandbox_provider: sandbox_provider::GuestIndices,
    checkpoint_provider: checkpoint_provider::GuestIndices,
    observation_source: observation_source::GuestIndices,
    batch_observation_source: batch_observation_source::GuestIndices,
    selection_discoverer: selection_discoverer::GuestIndices,
    credential_verifier: credential_verifier::GuestIndices,
    configuration_adapter: configuration_adapter::GuestIndices,
    readiness: readiness::GuestIndices,
    declarations: declarations::GuestIndices,
}

/// A linked component whose exports match the world (checked once, when
/// it is prepared), ready for a fresh instance per call.
#[derive(Clone)]
pub(crate) struct Prepared {
    pre: InstancePre<CallState>,
    indices: Arc<Indices>,
}

impl Prepared {
    /// Type-checks every export of `pre` against the world, once.
    pub(crate) fn new(pre: InstancePre<CallState>) -> wasmtime::Result<Self> {
        let checked = ProviderPre::new(pre)?;
        let pre = checked.instance_pre().clone();
        let indices = Indices {
            sandbox_provider: sandbox_provider::GuestIndices::new(&pre)?,
            checkpoint_provider: checkpoint_provider::GuestIndices::new(&pre)?,
            observation_source: observation_source::GuestIndices::new(&pre)?,
            batch_observation_source: batch_observation_source::GuestIndices::new(&pre)?,
            selection_discoverer: selection_discoverer::GuestIndices::new(&pre)?,
            credential_verifier: credential_verifier::GuestIndices::new(&pre)?,
            configuration_adapter: configuration_adapter::GuestIndices::new(&pre)?,
            readiness: readiness::GuestIndices::new(&pre)?,
            declarations: declarations::GuestIndices::new(&pre)?,
        };
        Ok(Self {
            pre,
            indices: Arc::new(indices),
        })
    }

    /// The engine the component was compiled for.
    pub(crate) fn engine(&self) -> &wasmtime::Engine {
        self.pre.engine()
    }

    /// A fresh instance in `store`.
    pub(crate) async fn instantiate(
        &self,
        store: &mut Store<CallState>,
    ) -> wasmtime::Result<Exports> {
        let instance = self.pre.instantiate_async(store).await?;
        Ok(Exports {
            instance,
            indices: self.indices.clone(),
        })
    }
}

/// The exports of one fresh instance; each accessor loads (and checks the
/// types of) one interface's functions.
pub(crate) struct Exports {
    instance: Instance,
    indices: Arc<Indices>,
}

macro_rules! interfaces {
    ($($interface:ident),* $(,)?) => {
        impl Exports {
            $(
                #[doc = concat!("The `", stringify!($interface), "` interface of this instance.")]
                pub(crate) fn $interface(
                    &self,
                    store: &mut Store<CallState>,
                ) -> wasmtime::Result<$interface::Guest> {
                    self.indices.$interface.load(store, &self.instance)
                }
            )*
        }
    };
}

interfaces!(
    sandbox_provider,
    checkpoint_provider,
    observation_source,
    batch_observation_source,
    selection_discoverer,
    credential_verifier,
    configuration_adapter,
    readiness,
    declarations,
);
