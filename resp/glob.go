package resp

// globMatch reports whether s matches the glob pattern as Redis's stringmatchlen
// reads it: * (any run), ? (any byte), [abc], [^abc], [a-z] and \ to escape. It
// is used for CONFIG GET and COMMAND LIST names; key patterns are the store's.
// The star is matched by backtracking to the last star only, so the time is
// O(len(pattern)·len(s)) whatever the pattern, not exponential.
func globMatch(pattern, s string, nocase bool) bool {
	p, i := 0, 0
	star, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				star, starI = p, i
				p++
				continue
			}
			if n, ok := matchOne(pattern[p:], s[i], nocase); ok {
				p += n
				i++
				continue
			}
		}
		if star < 0 {
			return false
		}
		starI++
		p, i = star+1, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchOne matches one byte against the pattern's first element and returns the
// element's length.
func matchOne(pattern string, ch byte, nocase bool) (int, bool) {
	switch pattern[0] {
	case '?':
		return 1, true
	case '\\':
		if len(pattern) >= 2 {
			return 2, eq(pattern[1], ch, nocase)
		}
		return 1, ch == '\\'
	case '[':
		p := 1
		not := p < len(pattern) && pattern[p] == '^'
		if not {
			p++
		}
		match := false
		for p < len(pattern) && pattern[p] != ']' {
			switch {
			case pattern[p] == '\\' && p+1 < len(pattern):
				p++
				match = match || eq(pattern[p], ch, nocase)
			case p+2 < len(pattern) && pattern[p+1] == '-':
				lo, hi := pattern[p], pattern[p+2]
				if lo > hi {
					lo, hi = hi, lo
				}
				c := ch
				if nocase {
					lo, hi, c = lower(lo), lower(hi), lower(c)
				}
				match = match || lo <= c && c <= hi
				p += 2
			default:
				match = match || eq(pattern[p], ch, nocase)
			}
			p++
		}
		if p < len(pattern) {
			p++ // the closing ]; an unterminated class ends with the pattern
		}
		return p, match != not
	default:
		return 1, eq(pattern[0], ch, nocase)
	}
}

func eq(a, b byte, nocase bool) bool {
	return a == b || nocase && lower(a) == lower(b)
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
