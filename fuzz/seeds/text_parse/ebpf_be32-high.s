
ldxdw %r0, [%r1]
be32 %r0
exit