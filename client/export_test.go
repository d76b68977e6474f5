package client

import (
	"context"
	"time"
)

// SlicerAllowAt is s.Allow with the time its decision was made at, for the oracle
// test, which counts each admission in the window it was made in.
func SlicerAllowAt(ctx context.Context, s *Slicer, key string, l Limit) (Result, time.Time, error) {
	d, err := s.decide(ctx, key, l, 1)
	d.admit()
	return d.res, d.at, err
}
