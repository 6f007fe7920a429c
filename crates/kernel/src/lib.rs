//! kernel (under construction).
