
# RFC 9669 Section 4.3: EXIT returns from program.

mov %r0, 1
exit