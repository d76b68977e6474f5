package resp

import (
	"bytes"
	"fmt"
)

// The request scan follows the byte stream of a connection under redcon (boundedConn)
// and makes redcon frame requests as Redis does (networking.c, processMultibulkBuffer),
// where they part:
//   - a count line of zero or less ("*0", "*-1") is skipped by Redis: the scan blanks
//     it to spaces, an empty inline line, which redcon skips too;
//   - a length is what Redis's string2ll reads: no sign but a count's '-', no leading
//     zero ("*+1", "*01", "$04", "$+4" are protocol errors; redcon's Atoi takes them);
//   - the two bytes after a bulk payload are skipped by Redis whatever they are: the
//     scan writes CRLF there, where redcon would refuse the request;
//   - a protocol error is found here, so the complete commands before it in the same
//     read run, as in Redis (redcon drops the whole read).

// States of requestScan, following Redis's framing.
const (
	scanCommand   = iota // at the start of a command
	scanInline           // in an inline command, until its newline
	scanMultibulk        // in "*<count>\r\n"
	scanBulkStart        // expecting '$'
	scanBulkLen          // in "$<length>\r\n"
	scanBulkData         // skipping a payload and its CRLF
)

// Shapes of the number read so far on a length line, for Redis's string2ll rules.
const (
	numEmpty  = iota // nothing yet
	numMinus         // "-"
	numZero          // "0": nothing may follow
	numDigits        // a sign, if any, and digits from 1-9
	numCR            // the line's '\r', which only '\n' may follow
	numBad           // not a number for Redis
)

// requestScan follows the request stream across reads, reading only the lengths.
type requestScan struct {
	state   uint8
	shape   uint8 // of the number being read
	neg     bool  // it has a '-'
	lineLen int   // bytes of the current inline command or length line
	num     int64 // the length being read, capped at overflow
	args    int64 // arguments left in the current command
	skip    int64 // payload bytes left to skip, CRLF included
}

// overflow is above every bound, so larger numbers need not be read exactly; below
// it, num*10+9 cannot overflow an int64.
const overflow = 1 << 59

// maxSkipLine bounds a count line that may still turn out to be one to skip:
// "*-9223372036854775808\r", 22 bytes.
const maxSkipLine = 22

// feed scans b, with the bounds of an unauthenticated connection unless authed. If
// a bound is broken it returns the error and how many bytes of b come before the
// point where it was found; the scan stands there, so feeding the rest of b later
// checks the same length again. With no error it may return fewer than len(b):
// the rest is the start of a count line that may be one to skip, and the scan
// stands before it, to be fed again with what follows.
func (r *requestScan) feed(b []byte, maxBulk int64, authed bool) (int, error) {
	lineStart := -1 // where the current count line starts in b, if it does
	for i := 0; i < len(b); {
		switch r.state {
		case scanCommand:
			r.lineLen = 0
			if b[i] == '*' {
				r.state, r.num, r.shape, r.neg = scanMultibulk, 0, numEmpty, false
				lineStart = i
				i++
				if i == len(b) {
					r.state = scanCommand // a lone '*': fed again with what follows
					return lineStart, nil
				}
			} else {
				r.state = scanInline
			}
		case scanInline:
			nl := bytes.IndexByte(b[i:], '\n')
			if nl < 0 {
				r.lineLen += len(b) - i
				if r.lineLen > maxInlineLen {
					return i, errInlineTooBig
				}
				return len(b), nil
			}
			i += nl + 1
			r.state = scanCommand
		case scanMultibulk, scanBulkLen:
			end := len(b)
			nl := bytes.IndexByte(b[i:], '\n')
			if nl >= 0 {
				end = i + nl
			}
			r.lineLen += end - i
			r.number(b[i:end])
			if nl < 0 {
				if r.state == scanMultibulk && lineStart >= 0 && r.lineLen < maxSkipLine && r.skippable() {
					r.state = scanCommand // fed again from the '*'
					return lineStart, nil
				}
				if r.lineLen > maxInlineLen {
					if r.state == scanMultibulk {
						return i, errMultibulkTooLong
					}
					return i, errBulkTooLong
				}
				return len(b), nil
			}
			skip := r.state == scanMultibulk && r.skippable() && lineStart >= 0
			if err := r.endLength(maxBulk, authed); err != nil {
				// Withhold the line's newline: redcon would otherwise parse the
				// count and loop once per announced argument on every read.
				return end, err
			}
			if skip {
				for j := lineStart; j < end-1; j++ {
					b[j] = ' '
				}
			}
			i = end + 1
		case scanBulkStart:
			if b[i] != '$' {
				return i, fmt.Errorf("ERR Protocol error: expected '$', got '%c'", b[i])
			}
			r.state, r.num, r.shape, r.neg, r.lineLen = scanBulkLen, 0, numEmpty, false, 0
			i++
		case scanBulkData:
			n := min(r.skip, int64(len(b)-i))
			// The payload's last two bytes, in this read: Redis skips them unread.
			if n == r.skip && n >= 2 {
				end := i + int(n)
				b[end-2], b[end-1] = '\r', '\n'
			} else {
				for k := max(0, r.skip-2); k < n; k++ {
					b[i+int(k)] = "\r\n"[2-(r.skip-k)]
				}
			}
			r.skip -= n
			i += int(n)
			if r.skip == 0 {
				r.args--
				r.state = scanBulkStart
				if r.args == 0 {
					r.state = scanCommand
				}
			}
		}
	}
	return len(b), nil
}

// number reads the bytes of a length line, up to its newline, as Redis's string2ll:
// an optional '-', then "0" alone or digits from a non-zero one; then a '\r'.
func (r *requestScan) number(b []byte) {
	// The usual line, whole in one read: digits from a non-zero one, then '\r'.
	if r.shape == numEmpty && 1 < len(b) && len(b) < 19 && b[len(b)-1] == '\r' && '1' <= b[0] && b[0] <= '9' {
		var n int64
		for _, ch := range b[:len(b)-1] {
			if ch < '0' || ch > '9' {
				n = -1
				break
			}
			n = n*10 + int64(ch-'0')
		}
		if n > 0 {
			r.shape, r.num = numCR, n
			return
		}
	}
	for _, ch := range b {
		switch r.shape {
		case numDigits:
			switch {
			case '0' <= ch && ch <= '9':
				if r.num < overflow {
					r.num = r.num*10 + int64(ch-'0')
				}
			case ch == '\r':
				r.shape = numCR
			default:
				r.shape = numBad
			}
		case numEmpty, numMinus:
			switch {
			case '1' <= ch && ch <= '9':
				r.shape, r.num = numDigits, int64(ch-'0')
			case ch == '0' && r.shape == numEmpty:
				r.shape = numZero
			case ch == '-' && r.shape == numEmpty:
				r.shape, r.neg = numMinus, true
			default:
				r.shape = numBad
			}
		case numZero:
			r.shape = numBad
			if ch == '\r' {
				r.shape = numCR
			}
		case numCR:
			r.shape = numBad
		default:
			return
		}
	}
}

// skippable reports whether the count line read so far is, or may yet be, one of
// zero or less, which Redis skips.
func (r *requestScan) skippable() bool { return r.shape != numBad && (r.neg || r.num == 0) }

// endLength checks a complete length line; it changes nothing when it answers an
// error. A count line of zero or less is left for feed to blank.
func (r *requestScan) endLength(maxBulk int64, authed bool) error {
	valid := r.shape == numCR
	if r.state == scanMultibulk {
		switch {
		case !valid || r.num >= overflow || r.num > maxMultibulkLen && !r.neg:
			return errMultibulkLength
		case r.neg || r.num == 0:
			r.state = scanCommand
		case !authed && r.num > unauthMaxArgs:
			return errUnauthMultibulk
		default:
			r.state, r.args = scanBulkStart, r.num
		}
		return nil
	}
	if !valid || r.neg || r.num >= overflow || r.num > maxBulk {
		return errBulkLength
	}
	if !authed && r.num > unauthMaxBulk {
		return errUnauthBulk
	}
	r.state, r.skip = scanBulkData, r.num+2
	return nil
}
