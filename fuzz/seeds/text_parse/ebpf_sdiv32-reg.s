
lddw %r0, 0x10000000c
mov %r1, -4
sdiv32 %r0, %r1
exit