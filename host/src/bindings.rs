//! Host-side bindings of the `oac:sandbox-provider` world. Private: the
//! host speaks the provider interface's types, converted in `convert`.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    world: "provider",
    path: "../wit",
    imports: { default: async },
    exports: { default: async },
    additional_derives: [PartialEq],
});

pub(crate) use exports::oac::sandbox_provider::declarations::Support;
