	ld #hatype
	ret a
