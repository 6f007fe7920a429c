	ld #0
	jeq #0, L3
	ret #0
L3:	ret #1
