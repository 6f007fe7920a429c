//! convert (under construction).
