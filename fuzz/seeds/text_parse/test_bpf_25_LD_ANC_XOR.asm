	ld #10
	ldx #300
	ld [0xfffff028]
	ret a
