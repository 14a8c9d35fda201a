pub mod raw_access_chains;
