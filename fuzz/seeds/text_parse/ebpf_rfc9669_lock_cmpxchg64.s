
# RFC 9669 Section 5.3: atomic CMPXCHG (64-bit).

lddw %r3, 0x1122334455667788
stxdw [%r10-8], %r3

# success
lddw %r0, 0x1122334455667788
lddw %r1, 0xaabbccddeeff0011
lock cmpxchg [%r10-8], %r1
lddw %r4, 0x1122334455667788
jne %r0, %r4, fail
ldxdw %r2, [%r10-8]
lddw %r5, 0xaabbccddeeff0011
jne %r2, %r5, fail

# failure
lddw %r0, 0x0000000000000000
lddw %r1, 0x9999999999999999
lock cmpxchg [%r10-8], %r1
jne %r0, %r5, fail
ldxdw %r6, [%r10-8]
jne %r6, %r5, fail

mov %r0, 1
exit
fail:
mov %r0, 0
exit