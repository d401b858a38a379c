//! The `microsandbox` capability: microVMs through the host's helper
//! process (`oac-helper-protocol`, run by [`helper`], never killed). The
//! host derives every VM and snapshot name ([`names`]) and owns the VM
//! policy ([`policy`]), applied on create and restore and checked after
//! both.

pub mod helper;
pub mod names;
pub mod policy;
