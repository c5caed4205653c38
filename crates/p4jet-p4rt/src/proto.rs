//! The P4Runtime schema compiled from `proto/` (see build.rs).
#![allow(missing_docs, clippy::all, clippy::pedantic)]

/// `google.rpc`: Status and Code.
pub mod google {
    pub mod rpc {
        include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
    }
}

/// `p4.v1`, `p4.config.v1`, `p4.tmp`.
pub mod p4 {
    pub mod v1 {
        include!(concat!(env!("OUT_DIR"), "/p4.v1.rs"));
    }
    pub mod config {
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/p4.config.v1.rs"));
        }
    }
    pub mod tmp {
        include!(concat!(env!("OUT_DIR"), "/p4.tmp.rs"));
    }
}

/// The encoded `FileDescriptorSet` of the schema (every file, imports included).
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/p4runtime_descriptor.bin"));
