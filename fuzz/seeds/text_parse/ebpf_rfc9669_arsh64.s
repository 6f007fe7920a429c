
# RFC 9669 Section 4.1: ARSH (ALU64) sign-extends and uses mask 0x3f.

lddw %r1, 0x8000000000000000
arsh %r1, 63
jne %r1, 0xffffffff, fail

# reg variant
lddw %r2, 0x8000000000000000
mov %r3, 63
arsh %r2, %r3
jne %r2, 0xffffffff, fail

mov %r0, 1
exit
fail:
mov %r0, 0
exit