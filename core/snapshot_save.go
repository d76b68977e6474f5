package core

import (
	"errors"
	"strconv"
	"strings"
)

// SaveRule is one rule of Redis's save directive: save when at least Seconds have
// passed since the last save and at least Changes changes were made.
type SaveRule struct {
	Seconds int64
	Changes uint64
}

// ErrSave is ParseSave's error, in Redis's words: the value is not pairs of
// <seconds ≥ 1> <changes>.
var ErrSave = errors.New("Invalid save parameters")

// ParseSave reads a save directive's value, "<seconds> <changes>" pairs separated by
// spaces ("3600 1 300 100"), as redis.conf and CONFIG SET write it. "" is no rule.
func ParseSave(s string) ([]SaveRule, error) {
	f := strings.Fields(s)
	if len(f) == 1 && f[0] == `""` {
		return nil, nil // save "" as a command line may pass it on
	}
	if len(f)%2 != 0 {
		return nil, ErrSave
	}
	var rules []SaveRule
	for i := 0; i < len(f); i += 2 {
		secs, err1 := strconv.ParseInt(f[i], 10, 64)
		changes, err2 := strconv.ParseUint(f[i+1], 10, 64)
		if err1 != nil || err2 != nil || secs < 1 {
			return nil, ErrSave
		}
		rules = append(rules, SaveRule{secs, changes})
	}
	return rules, nil
}

// FormatSave writes rules as CONFIG GET save answers them.
func FormatSave(rules []SaveRule) string {
	var b strings.Builder
	for i, r := range rules {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(r.Seconds, 10) + " " + strconv.FormatUint(r.Changes, 10))
	}
	return b.String()
}

// saveDue reports whether a save rule is met, now Unix seconds, with changes since
// the last save at lastSave.
func saveDue(rules []SaveRule, now, lastSave int64, changes uint64) bool {
	for _, r := range rules {
		if changes >= max(r.Changes, 1) && now-lastSave >= r.Seconds {
			return true
		}
	}
	return false
}
