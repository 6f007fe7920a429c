
sth [%r1+2], 0x2211
ldxh %r0, [%r1+2]
exit