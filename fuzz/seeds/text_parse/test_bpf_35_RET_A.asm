	txa
	ret a
