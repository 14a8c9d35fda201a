pub mod bindless;
pub mod physical_storage_buffer;
pub mod raw_access_chains;
pub mod small_storage;
pub(crate) mod util;
