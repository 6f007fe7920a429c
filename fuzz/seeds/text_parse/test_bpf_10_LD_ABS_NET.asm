	ldb [0xfff00000]
	tax
	ldb [0xfff00001]
	add x
	ret a
