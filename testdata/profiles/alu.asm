; A hand-written filter whose argument tests go through ALU (classic
; arithmetic, X, M[]) and whose `ret a` returns computed values: what
; `analyze --explain` prints of each, pinned by alu.explain.txt
; (crates/cli/tests/policy.rs).
ld [4]
jeq #0xc000003e, ok, kill
ok: ld [0]
jeq #0, read, n1
n1: jeq #1, write, n2
n2: jeq #2, open, n3
n3: jeq #3, close, n4
n4: jeq #4, stat, n5
n5: jeq #5, fstat, n6
n6: jeq #6, lstat, n7
n7: jeq #7, poll, allow
; read: (args[0].lo + 1) > 5
read: ld [16]
add #1
jgt #5, errno, allow
; write: ((args[1].lo >> 4) & 0xf) in {1, 2}
write: ld [24]
rsh #4
and #0xf
jeq #1, errno, w2
w2: jeq #2, errno, allow
; open: (args[0].lo - args[1].lo) > 0, X from tax
open: ld [24]
tax
ld [16]
sub x
jgt #0, allow, errno
; close: -args[0].lo through M[0], divided by X = args[2].lo (0: the filter returns 0)
close: ld [16]
neg
st M[0]
ld [32]
tax
ld M[0]
div x
jeq #3, allow, errno
; stat: ((args[0].lo * 3) ^ 0x55) >= 0x100
stat: ld [16]
mul #3
xor #0x55
jge #0x100, allow, errno
; fstat: (args[0].lo << args[1].lo) & 0x100, the shift by X
fstat: ld [24]
tax
ld [16]
lsh x
jset #0x100, allow, errno
; lstat: ret A of ERRNO | (args[0].lo & 0xfff): the action bits are constant
lstat: ld [16]
and #0xfff
or #0x50000
ret a
; poll: when args[0].lo > 0x10, ret A of args[1].lo ^ 0x7fff0000: the action
; bits depend on the input
poll: ld [16]
jgt #0x10, p2, allow
p2: ld [24]
xor #0x7fff0000
ret a
allow: ret #0x7fff0000
errno: ret #0x50001
kill: ret #0
