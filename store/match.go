package store

// Match reports whether str matches the Redis glob pattern, as KEYS and SCAN MATCH do
// (nocase false) and CONFIG GET and COMMAND LIST do (nocase true). It is a port of
// Redis's stringmatchlen (src/util.c): * any run
// of bytes, ? any one byte, [abc] [^abc] [a-z] sets (a reversed range [z-a] works, a
// set left open at the end of the pattern is closed there), \x the byte x; '/' is an
// ordinary byte. Byte ranges compare bytes as C's signed char, as Redis does on x86
// and ARM64 Linux builds, so [a-\xff] is the range [\xff-a].
func Match(pattern, str []byte, nocase bool) bool {
	skipLonger := false
	return globFrom(pattern, str, nocase, &skipLonger, 0)
}

// globFrom is stringmatchlen_impl. Where C reads the pattern's terminating NUL, at
// returns 0. skipLonger is set once a '*' has tried every suffix of the string: an
// earlier '*' taking more bytes cannot help then, which keeps patterns like a*a*a*b
// linear rather than exponential.
func globFrom(pattern, str []byte, nocase bool, skipLonger *bool, nesting int) bool {
	if nesting > 1000 { // Redis's guard against deep recursion
		return false
	}
	at := func(i int) byte {
		if i < len(pattern) {
			return pattern[i]
		}
		return 0
	}
	p, s := 0, 0
	for p < len(pattern) && s < len(str) {
		switch pattern[p] {
		case '*':
			for p < len(pattern) && at(p+1) == '*' {
				p++
			}
			if len(pattern)-p == 1 {
				return true
			}
			for ; s < len(str); s++ {
				if globFrom(pattern[p+1:], str[s:], nocase, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
			}
			*skipLonger = true
			return false
		case '?':
			s++
		case '[':
			p++
			not := at(p) == '^'
			if not {
				p++
			}
			match := false
			for {
				if at(p) == '\\' && len(pattern)-p >= 2 {
					p++
					match = match || sameByte(pattern[p], str[s], nocase)
				} else if at(p) == ']' {
					break
				} else if p >= len(pattern) {
					p-- // the set is left open: end it here
					break
				} else if len(pattern)-p >= 3 && pattern[p+1] == '-' {
					lo, hi, c := pattern[p], pattern[p+2], str[s]
					if nocase {
						lo, hi, c = lower(lo), lower(hi), lower(c)
					}
					if int8(lo) > int8(hi) {
						lo, hi = hi, lo
					}
					p += 2
					match = match || int8(lo) <= int8(c) && int8(c) <= int8(hi)
				} else {
					match = match || sameByte(pattern[p], str[s], nocase)
				}
				p++
			}
			if match == not {
				return false
			}
			s++
		case '\\':
			if len(pattern)-p >= 2 {
				p++
			}
			fallthrough
		default:
			if !sameByte(pattern[p], str[s], nocase) {
				return false
			}
			s++
		}
		p++
		if s == len(str) {
			for at(p) == '*' {
				p++
			}
			break
		}
	}
	return p == len(pattern) && s == len(str)
}

func sameByte(a, b byte, nocase bool) bool {
	return a == b || nocase && lower(a) == lower(b)
}

// lower is C's tolower in the C locale, as Redis uses it.
func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
