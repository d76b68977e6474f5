package middleware

import (
	"context"
	"time"
)

// SetClock replaces the Limiter's clock (failure log intervals) and its sleep (the
// Leaky wait), so that tests never sleep; nil leaves one as it is.
func SetClock(l *Limiter, now func() time.Time, sleep func(context.Context, time.Duration) error) {
	if now != nil {
		l.now = now
	}
	if sleep != nil {
		l.sleep = sleep
	}
}
