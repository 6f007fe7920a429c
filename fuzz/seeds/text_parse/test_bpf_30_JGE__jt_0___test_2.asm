	ldx #len
	ldb [2]
	jge x, L3, L4
L3:	ret #1
L4:	ret #0xffffffff
