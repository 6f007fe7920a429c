
# Set %r9 to 0x100000000
mov %r9, 1
lsh %r9, 32
mov32 %r0, 0
mov32 %r1, 0xa
mov32 %r2, 0xb
jge32 %r1, %r2, exit # Not taken
jge32 %r1, %r1, +1 # Taken
exit

mov32 %r0, 1
# set %r1 to 0x10000000c
mov32 %r1, 0xc
or %r1, %r9
jge32 %r1, %r2, exit # Taken

mov32 %r0, 2 # Skipped

exit