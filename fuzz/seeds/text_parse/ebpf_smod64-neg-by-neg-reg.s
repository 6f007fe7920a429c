
mov %r0, -13
mov %r1, -3
smod %r0, %r1
exit