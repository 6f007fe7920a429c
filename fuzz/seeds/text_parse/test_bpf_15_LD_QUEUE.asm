	ld #queue
	ret a
