
mov32 %r0, 0xf8
mov32 %r1, -16
lsh32 %r0, 28
# %r0 == 0x80000000
arsh32 %r0, %r1
exit