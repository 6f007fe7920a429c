
# Set %r9 to 0x100000000
mov %r9, 1
lsh %r9, 32
mov32 %r0, 0
mov32 %r1, 0x7
# set %r1 to 0x100000007
or %r1, %r9
mov32 %r2, 0x8
jset32 %r1, %r2, exit # Not taken
jset32 %r1, %r1, +1 # Taken
exit

mov32 %r0, 1
mov32 %r1, 0x9
jset32 %r1, %r2, +1 # Taken

mov32 %r0, 2 # Skipped

exit