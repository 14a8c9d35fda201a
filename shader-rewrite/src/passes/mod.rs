pub mod bindless;
pub mod check;
pub(crate) mod layout;
pub(crate) mod leaves;
pub mod physical_storage_buffer;
pub mod raw_access_chains;
pub mod small_storage;
pub(crate) mod util;
