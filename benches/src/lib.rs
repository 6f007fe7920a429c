//! Shared inputs for the criterion benches.
