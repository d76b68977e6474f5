package main

import (
	"context"
	"flag"
	"log/slog"

	"github.com/rlserver/rlserver/region"
)

// regionFlags are -quota-upstream and its companions: this rlserver a region of
// another, its home (package region).
func regionFlags(fs *flag.FlagSet, o *region.Options) {
	fs.StringVar(&o.URL, "quota-upstream", "", "the home rlserver's `URL` (redis://host:port, rediss://user:pass@host:port): decide RL.FIXED, RL.SLIDE, RL.TOKEN and RL.GCRA calls from slices of its quota; empty: off")
	fs.StringVar(&o.Prefix, "quota-upstream-prefix", "", "-quota-upstream: only the keys beginning with this `prefix`; empty: every key")
	fs.StringVar(&o.Fallback, "quota-upstream-fallback", "", "-quota-upstream: while the home does not answer, after what is held: `share` (1/regions of each limit), open or closed; empty: share")
	fs.IntVar(&o.Regions, "quota-upstream-regions", 0, "-quota-upstream: how many `regions` share the home's limits (the share's divisor); 0: 1")
}

// openRegion opens -quota-upstream's Region, or returns nil without one.
func openRegion(ctx context.Context, o region.Options, logger *slog.Logger) (*region.Region, error) {
	if o.URL == "" {
		return nil, nil
	}
	o.Logger = logger
	r, err := region.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	logger.Info("a region of its home: quota taken from -quota-upstream", "home", r.Param("quota-upstream"),
		"prefix", o.Prefix, "fallback", r.Param("quota-upstream-fallback"), "regions", r.Param("quota-upstream-regions"))
	return r, nil
}
