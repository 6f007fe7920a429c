	ld #1
	tax
	ld #2
	add x
	neg
	tax
	ld #len
	add x
	tax
	ldb [x + 1]
	ret a
