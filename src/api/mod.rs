//! API paths and selectors.
