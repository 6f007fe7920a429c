
# RFC 9669 Section 4.2: SWAP64 (bswap64) is unconditional byte swap.

lddw %r0, 0x1122334455667788
swap64 %r0
lddw %r1, 0x8877665544332211
jne %r0, %r1, fail

mov %r0, 1
exit
fail:
mov %r0, 0
exit