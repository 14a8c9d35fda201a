//! Type/constant builder.
