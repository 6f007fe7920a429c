//! What a host cannot show through the binary when its
//! `net.core.optmem_max` is above what any classic filter converts to
//! (2 MiB here): the message of an attach refused over it.

use super::*;

#[test]
fn an_attach_refused_for_memory_names_optmem_and_others_a_disagreement() {
    const ENOMEM: i32 = 12;
    const EINVAL: i32 = 22;
    let over = attach_refused(ENOMEM);
    assert!(over.message.contains("exceeds net.core.optmem_max"), "{}", over.message);
    assert!(!over.message.contains("disagreement"), "{}", over.message);
    let other = attach_refused(EINVAL);
    assert!(other.message.contains("refused the filter: Invalid argument"), "{}", other.message);
    assert!(other.message.contains("(a disagreement)"), "{}", other.message);
    assert_eq!((over.code, other.code), (1, 1));
}
