
mov32 %r0, 0
mov32 %r1, 5
jlt %r1, 4, exit # Not taken
jlt %r1, 5, exit # Not taken
jlt %r1, 6, +1 # Taken
exit
mov32 %r0, 1
exit