	ld [4]
	jeq #0xc000003e, L2, L8
L2:	ld [0]
	jge #0x40000000, L4, L5
L4:	jeq #0xffffffff, L5, L8
L5:	jeq #110, L7
	ret #0x80000000
L7:	ret #0x7fff0000
L8:	ret #0
