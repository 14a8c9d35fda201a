//! Byte-address backend.
