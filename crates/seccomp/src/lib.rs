//! seccomp (under construction).
