//! Every engine behind one interface.

pub mod rbpf_adapter;
